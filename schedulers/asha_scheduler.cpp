// ASHA (Li et al. 2018, "A System for Massively Parallel Hyperparameter
// Tuning"), two modes:
// - stopping (Ray's AsyncHyperBandScheduler): a trial reaching a rung
//   continues only if its score is at least the (1 - 1/rf) percentile of the
//   scores recorded at that rung so far; otherwise it stops.
// - promotion (the paper's algorithm): a trial pauses at each rung; when a slot
//   frees, get_job promotes the best not-yet-promoted trial among the top
//   floor(n/rf) of the highest rung that has one, else a new trial starts.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "schedulers/params.h"
#include "schedulers/scheduler.h"
#include "schedulers/scheduler_factory.h"
#include "schedulers/successive_halving.h"

namespace tune {
namespace {

using internal::number_at;

// One rung. Kept sorted so every decision is O(log n) (plus a memmove):
// 10,000 trials at a rung cost microseconds, not a sort per result.
struct AshaRung {
  double milestone = 0;
  std::vector<std::pair<int64_t, double>> recorded;   // (trial, score), arrival order (state)
  std::unordered_map<int64_t, double> score_of;       // trial -> score
  std::vector<double> sorted;                         // every score, ascending
  std::set<std::pair<double, int64_t>> unpromoted;    // (-score, trial): best first
  std::vector<double> promoted_sorted;                // scores of promoted trials, ascending
  std::vector<int64_t> promoted;                      // promotion order (state)

  bool has(int64_t trial) const { return score_of.count(trial) > 0; }
  void record(int64_t trial, double score) {
    recorded.emplace_back(trial, score);
    score_of[trial] = score;
    sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), score), score);
    unpromoted.emplace(-score, trial);
  }
  void promote(int64_t trial) {
    const double score = score_of.at(trial);
    unpromoted.erase({-score, trial});
    promoted_sorted.insert(std::upper_bound(promoted_sorted.begin(), promoted_sorted.end(), score), score);
    promoted.push_back(trial);
  }
  void forget(int64_t trial) {  // ended without promotion: never a candidate
    auto it = score_of.find(trial);
    if (it != score_of.end()) unpromoted.erase({-it->second, trial});
  }
};

class AshaScheduler : public Scheduler {
 public:
  AshaScheduler(const Json& params, const std::string& metric, const std::string& mode) {
    internal::SchedulerParams p("asha", params,
                                {"time_attr", "metric", "mode", "max_t", "grace_period", "reduction_factor", "brackets",
                                 "stop_last_trials", "promotion"});
    time_attr_ = p.string("time_attr", "training_iteration");
    metric_ = p.metric(metric);
    sign_ = p.mode(mode) == "max" ? 1.0 : -1.0;
    max_t_ = p.number("max_t", 100, Bound::above(0));
    grace_ = p.number("grace_period", 1, Bound::above(0));
    rf_ = p.number("reduction_factor", 4, Bound::above(1));
    const int64_t brackets = p.whole_number("brackets", 1, 1);
    stop_last_ = p.boolean("stop_last_trials", true);
    promotion_ = p.boolean("promotion", false);
    if (grace_ > max_t_) p.fail("grace_period", "must be <= max_t (" + short_number(max_t_) + ")");
    for (int64_t s = 0; s < brackets; ++s) {
      std::vector<double> milestones = asha_milestones(grace_, rf_, max_t_, static_cast<int>(s));
      if (milestones.empty()) break;  // grace * rf^s beyond max_t: no more brackets
      std::vector<AshaRung> rungs;
      for (double m : milestones) rungs.push_back({m, {}, {}});
      brackets_.push_back(std::move(rungs));
    }
  }

  void on_trial_add(int64_t trial, const Json&) override {
    if (!bracket_of_.count(trial)) bracket_of_[trial] = static_cast<int>(added_++ % static_cast<int64_t>(brackets_.size()));
  }

  TrialDecision on_result(int64_t trial, const Json& result) override {
    on_trial_add(trial, nullptr);
    double t = 0, value = 0;
    if (!number_at(result, time_attr_, &t) || !number_at(result, metric_, &value)) return TrialDecision::next();
    const double score = sign_ * value;
    std::vector<AshaRung>& rungs = brackets_[bracket_of_[trial]];
    if (t >= max_t_ && stop_last_) {
      if (promotion_) record_if_new(rungs, trial, t, score);
      return TrialDecision::stop();
    }
    return promotion_ ? promotion_decision(rungs, trial, t, score) : stopping_decision(rungs, trial, t, score);
  }

  std::optional<int64_t> choose_trial_to_run(const std::vector<int64_t>& paused) override {
    if (!promotion_) return std::nullopt;
    // get_job: the highest rung (across brackets) with a promotable trial.
    AshaRung* best_rung = nullptr;
    int64_t best_trial = -1;
    for (auto& rungs : brackets_) {
      for (size_t k = 0; k + 1 < rungs.size(); ++k) {
        AshaRung& rung = rungs[k];
        std::optional<int64_t> candidate = promotable(rung, paused);
        if (candidate && (!best_rung || rung.milestone > best_rung->milestone)) {
          best_rung = &rung;
          best_trial = *candidate;
        }
      }
    }
    if (!best_rung) return std::nullopt;
    best_rung->promote(best_trial);
    return best_trial;
  }

  void on_trial_error(int64_t trial) override { forget(trial); }
  void on_trial_complete(int64_t trial, const Json&) override { forget(trial); }

  Json save_state() const override {
    Json brackets = Json::array();
    for (const auto& rungs : brackets_) {
      Json b = Json::array();
      for (const auto& rung : rungs) b.push_back({{"milestone", rung.milestone}, {"recorded", rung.recorded}, {"promoted", rung.promoted}});
      brackets.push_back(b);
    }
    Json bracket_of = Json::array();
    for (const auto& [trial, b] : bracket_of_) bracket_of.push_back({trial, b});
    return {{"brackets", brackets}, {"bracket_of", bracket_of}, {"added", added_}, {"ended", ended_}};
  }

  void restore_state(const Json& state) override {
    const Json& brackets = state.at("brackets");
    for (size_t b = 0; b < brackets.size() && b < brackets_.size(); ++b) {
      for (size_t k = 0; k < brackets[b].size() && k < brackets_[b].size(); ++k) {
        AshaRung& rung = brackets_[b][k];
        for (const auto& [trial, score] : brackets[b][k].at("recorded").get<std::vector<std::pair<int64_t, double>>>())
          rung.record(trial, score);
        for (int64_t trial : brackets[b][k].at("promoted").get<std::vector<int64_t>>()) rung.promote(trial);
      }
    }
    for (const auto& pair : state.at("bracket_of")) bracket_of_[pair[0].get<int64_t>()] = pair[1].get<int>();
    added_ = state.at("added").get<int64_t>();
    for (int64_t trial : state.at("ended").get<std::vector<int64_t>>()) forget(trial);
  }

 private:
  void forget(int64_t trial) {
    ended_.push_back(trial);
    auto it = bracket_of_.find(trial);
    if (it == bracket_of_.end()) return;
    for (AshaRung& rung : brackets_[it->second]) rung.forget(trial);
  }

  // Ray: at the highest milestone reached and not yet recorded, compare with
  // the (1 - 1/rf) percentile of what is already there, then record.
  TrialDecision stopping_decision(std::vector<AshaRung>& rungs, int64_t trial, double t, double score) {
    for (auto it = rungs.rbegin(); it != rungs.rend(); ++it) {
      if (t < it->milestone || it->has(trial)) continue;
      std::optional<double> cutoff;
      if (!it->sorted.empty()) cutoff = internal::percentile_of_sorted(it->sorted, (1 - 1 / rf_) * 100);
      it->record(trial, score);
      if (cutoff && score < *cutoff) return TrialDecision::stop();
      break;
    }
    return TrialDecision::next();
  }

  // Paper: pause at every rung but the last (where the trial is done).
  TrialDecision promotion_decision(std::vector<AshaRung>& rungs, int64_t trial, double t, double score) {
    for (size_t k = rungs.size(); k-- > 0;) {
      AshaRung& rung = rungs[k];
      if (t < rung.milestone) continue;
      if (rung.has(trial)) return TrialDecision::next();  // re-reporting after a resume below its next rung
      rung.record(trial, score);
      return k + 1 == rungs.size() ? TrialDecision::stop() : TrialDecision::pause();
    }
    return TrialDecision::next();
  }

  void record_if_new(std::vector<AshaRung>& rungs, int64_t trial, double t, double score) {
    for (auto it = rungs.rbegin(); it != rungs.rend(); ++it) {
      if (t >= it->milestone) {
        if (!it->has(trial)) it->record(trial, score);
        return;
      }
    }
  }

  // get_job's candidate at this rung: the best trial not promoted yet, if it
  // is among the rung's top floor(n / rf). Every recorded trial better than it
  // has been promoted, so its rank is the number of promoted trials with a
  // better score. `paused` is sorted (the driver passes its ordered set).
  std::optional<int64_t> promotable(const AshaRung& rung, const std::vector<int64_t>& paused) const {
    const auto top = static_cast<size_t>(std::floor(static_cast<double>(rung.sorted.size()) / rf_ + 1e-9));
    size_t skipped = 0;  // better unpromoted trials that are not paused
    for (const auto& [negative, trial] : rung.unpromoted) {
      const double score = -negative;
      const auto better = skipped + static_cast<size_t>(rung.promoted_sorted.end() -
                                                        std::upper_bound(rung.promoted_sorted.begin(),
                                                                         rung.promoted_sorted.end(), score));
      if (better >= top) return std::nullopt;
      if (std::binary_search(paused.begin(), paused.end(), trial)) return trial;
      skipped += 1;  // not paused (running again after a retry): look at the next best
    }
    return std::nullopt;
  }

  std::string time_attr_, metric_;
  double sign_ = -1, max_t_ = 100, grace_ = 1, rf_ = 4;
  bool stop_last_ = true, promotion_ = false;
  std::vector<std::vector<AshaRung>> brackets_;
  std::map<int64_t, int> bracket_of_;
  int64_t added_ = 0;
  std::vector<int64_t> ended_;
};

}  // namespace

std::unique_ptr<Scheduler> internal::make_asha(const Json& params, const std::string& metric, const std::string& mode) {
  return std::make_unique<AshaScheduler>(params, metric, mode);
}

}  // namespace tune
