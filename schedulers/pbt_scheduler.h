// Internal: population based training (Jaderberg et al. 2017; Ray's
// PopulationBasedTraining), the base of PB2 (schedulers/pb2_scheduler.cpp).
//
// Every perturbation_interval (of time_attr) after burn_in_period, a trial in
// the bottom quantile_fraction of the population (by its latest score) clones
// the latest checkpoint and config of a random trial of the top quantile
// (never one without a checkpoint) and explores: explore() gives the new
// config. PBT's explore resamples each key of hyperparam_mutations from its
// domain with resample_probability, else multiplies a number by one of
// perturbation_factors (clipped to the domain's bounds, integers rounded) or
// moves a list value to a neighbouring entry.
// synch: every live trial pauses at the interval boundary; once all are there
// the quantiles are taken once and the losers exploit as they are resumed.
// Otherwise (asynchronous, Ray's default) a trial at its boundary is decided
// on at once, and pauses if other trials wait for a slot (time sharing, as
// Ray does: a population larger than the slots advances together).
#pragma once

#include <deque>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "schedulers/params.h"
#include "schedulers/scheduler.h"
#include "search/domain.h"

namespace tune::internal {

// The leaves of a (possibly nested) mapping of hyperparameter -> spec, with
// dotted paths; a mapping whose only key is a domain name is a leaf.
std::vector<std::pair<std::string, Json>> flatten_hyperparams(const Json& node);

class PbtScheduler : public Scheduler {
 public:
  // PBT: the keys of the scheduler block with hyperparam_mutations.
  PbtScheduler(const Json& params, const std::string& metric, const std::string& mode);

  void on_trial_add(int64_t trial, const Json& config) override;
  void on_trial_restored(int64_t trial, const Json& config) override;
  void on_checkpoint(int64_t trial, int64_t) override;
  void on_trial_complete(int64_t trial, const Json&) override { end(trial); }
  void on_trial_error(int64_t trial) override { end(trial); }
  TrialDecision on_result(int64_t trial, const Json& result) override;
  bool may_decide(int64_t trial, int64_t training_iteration) const override;
  std::optional<int64_t> choose_trial_to_run(const std::vector<int64_t>& paused) override;
  TrialDecision on_trial_resume(int64_t trial) override;
  void on_no_more_trials() override {
    more_trials_ = false;
    if (synch_) plan_if_all_waiting();
  }
  Json save_state() const override;
  // The members changed since the previous part. Once the parts since the
  // state they apply on hold four times the population, a save holds every
  // member instead (a "base" run of parts, over several turns when bounded).
  std::optional<Json> save_state_part() override {
    part_quota_ = 0;  // every change, also those since a bounded save began
    return save_state_part_up_to(SIZE_MAX);
  }
  // At most `max_members` of them, those changed first; the rest wait for
  // the next part (state_part_pending()).
  std::optional<Json> save_state_part_up_to(size_t max_members) override;
  // The members paused or resumed since the last part, and up to
  // `max_members` of the others (every part holds those: they are few).
  std::optional<Json> save_state_part_for_pause(size_t max_members) override {
    return save_state_part_up_to(max_members);
  }
  bool state_part_pending() const override { return part_quota_ > 0; }
  void restore_state(const Json& state) override;

 protected:
  struct Member {
    Json config;
    double score = NAN;  // latest, in max-form
    double last_perturb = 0;
    double now = 0;  // time_attr of its state: its latest result's, or its donor's after an exploit
    bool has_checkpoint = false;
    int64_t checkpoint_iteration = -1;  // of its latest checkpoint
    bool alive = true;
    bool waiting = false;               // synch: paused at the boundary
    bool paused = false;                // async: gave its slot up at the boundary (time sharing)
    double paused_at = 0;               // ... at this time_attr
    std::optional<TrialDecision> plan;  // what happens when it resumes (synch or time sharing)
    // (time, score) of its latest kHistory results (PB2 fits its model on
    // them), and the latest time of any result it had; PB2 only (keeps_history()).
    std::vector<std::pair<double, double>> history;
    double history_t_max = 0;
  };

  // For subclasses: reads the common keys; `keys` lists every key the
  // scheduler `type` accepts (the subclass reads its own).
  PbtScheduler(const std::string& type, const Json& params, const std::vector<std::string>& keys,
               const std::string& metric, const std::string& mode);
  static std::vector<std::string> common_keys();

  // The config a loser continues with, from the donor's, at time `t`.
  virtual Json explore(const Json& donor_config, double t);

  const std::map<int64_t, Member>& members() const { return members_; }
  static constexpr size_t kHistory = 8;  // results of each member kept (PB2's window)
  // Whether members keep their latest results (`history`): PB2 models them,
  // PBT does not read them, so it neither keeps nor saves them (they were
  // two thirds of its saved state).
  virtual bool keeps_history() const { return false; }
  std::mt19937_64& rng() { return rng_; }

 private:
  // One mutable hyperparameter of PBT.
  struct Mutation {
    std::string path;
    bool is_list = false;
    std::vector<Json> values;  // is_list
    Domain domain;             // otherwise
  };

  void parse_mutations(const SchedulerParams& p);
  void end(int64_t trial);
  // The member, marked as changed for the next part.
  Member& touch(int64_t trial) {
    if (dirty_.insert(trial).second) dirty_order_.push_back(trial);
    return members_[trial];
  }
  // The members (all, or those listed, ascending) as one array per field.
  Json columns(const std::vector<int64_t>* only) const;
  // Restores the members of a state or part (either form); returns how many.
  size_t restore_members(const Json& members);
  // One member of a saved state (either form of restore_state()).
  void restore_member(int64_t trial, const Json& config, double score, double last_perturb, bool has_checkpoint,
                      bool alive, bool waiting, std::optional<double> paused_at, int64_t checkpoint_iteration,
                      const Json& plan, std::vector<std::pair<double, double>> history,
                      std::optional<double> history_t_max, std::optional<double> now);
  // A random member of the upper quantile with a checkpoint if `trial` is in the lower one.
  std::optional<int64_t> donor_for(int64_t trial);
  TrialDecision decide(int64_t trial, double t);
  TrialDecision exploit_from(int64_t trial, std::optional<int64_t> donor, double t);
  void plan_if_all_waiting();
  void set_time_shared(int64_t trial, Member& m, std::optional<double> at);
  // Changes a member's score, liveness or checkpoint through `change`, keeping ranked_ and
  // donors_ true.
  void update(int64_t trial, Member& m, const std::function<void(Member&)>& change);

  std::string time_attr_, metric_;
  double sign_ = -1, interval_ = 60, burn_in_ = 0, quantile_ = 0.25, resample_ = 0.25;
  std::vector<double> factors_ = {1.2, 0.8};
  bool synch_ = false;
  bool more_trials_ = true;                          // until on_no_more_trials()
  std::set<int64_t> planned_exploits_;               // synch: members to clone at their resume, not resumed yet
  std::set<std::pair<double, int64_t>> time_shared_;  // (paused_at, trial) of the members paused by time sharing
  std::vector<Mutation> mutations_;
  std::map<int64_t, Member> members_;
  // (score, trial) of the live members with a score, in order, with ranks
  // (libstdc++'s order-statistics tree), and of those of them with a
  // checkpoint: a decision finds a trial's rank and picks its donor in
  // O(log n) instead of ranking the population.
  using Ranking = __gnu_pbds::tree<std::pair<double, int64_t>, __gnu_pbds::null_type, std::less<std::pair<double, int64_t>>,
                                   __gnu_pbds::rb_tree_tag, __gnu_pbds::tree_order_statistics_node_update>;
  Ranking ranked_, donors_;
  std::mt19937_64 rng_;
  // For save_state_part(): the members changed since the last part, the
  // generator as it was then with its draws since the last whole state (a
  // part holds the count, not the generator's 5 KB state), more_trials_
  // then, and how many members the parts since the last whole state hold.
  std::unordered_set<int64_t> dirty_;
  std::deque<int64_t> dirty_order_;  // dirty_, in the order they changed first (and some saved since)
  std::unordered_set<int64_t> paused_or_resumed_;  // of dirty_: go in the next part, whatever its size
  size_t part_quota_ = 0;            // of them, still to go in the save under way
  std::mt19937_64 saved_rng_;
  uint64_t saved_draws_ = 0;
  bool saved_more_trials_ = true;
  size_t part_entries_ = 0;
  bool rebasing_ = false;  // the save under way holds every member (a "base" run)
};

}  // namespace tune::internal
