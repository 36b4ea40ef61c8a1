// ASHA (Li et al. 2018, "A System for Massively Parallel Hyperparameter
// Tuning"), two modes:
// - stopping (Ray's AsyncHyperBandScheduler): a trial reaching a rung
//   continues only if its score is at least the (1 - 1/rf) percentile of the
//   scores recorded at that rung so far; otherwise it stops.
// - promotion (the paper's algorithm): a trial pauses at each rung; when a slot
//   frees, get_job promotes the best not-yet-promoted trial among the top
//   floor(n/rf) of the highest rung that has one, else a new trial starts.
// Backfill (both modes, `backfill: true`): once the searcher has no more
// trials, a slot that would sit idle while the last trials finish is given to
// a trial ASHA would otherwise leave: in stopping mode a trial below the
// cut-off goes on instead of stopping, in promotion mode the best paused trial
// not promoted is resumed; only for a leg (to its next rung) that ends before
// the running trials reach their next rung (estimated in seconds from each
// trial's own pace), and without recording its scores at later rungs, so no
// other trial's decision changes and the sweep does not get longer. Between
// legs such a trial waits paused if it has a checkpoint of where it is (else
// it ends); the driver ends the paused ones when the sweep ends.
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
                                 "stop_last_trials", "promotion", "backfill"});
    time_attr_ = p.string("time_attr", "training_iteration");
    metric_ = p.metric(metric);
    sign_ = p.mode(mode) == "max" ? 1.0 : -1.0;
    max_t_ = p.number("max_t", 100, Bound::above(0));
    grace_ = p.number("grace_period", 1, Bound::above(0));
    rf_ = p.number("reduction_factor", 4, Bound::above(1));
    const int64_t brackets = p.whole_number("brackets", 1, 1);
    stop_last_ = p.boolean("stop_last_trials", true);
    promotion_ = p.boolean("promotion", false);
    backfill_ = p.boolean("backfill", true);
    if (grace_ > max_t_) p.fail("grace_period", "must be <= max_t (" + short_number(max_t_) + ")");
    for (int64_t s = 0; s < brackets; ++s) {
      std::vector<double> milestones = asha_milestones(grace_, rf_, max_t_, static_cast<int>(s));
      if (milestones.empty()) break;  // grace * rf^s beyond max_t: no more brackets
      std::vector<AshaRung> rungs;
      for (double m : milestones) {
        rungs.emplace_back();
        rungs.back().milestone = m;
      }
      brackets_.push_back(std::move(rungs));
    }
  }

  void on_trial_add(int64_t trial, const Json&) override {
    if (bracket_of_.count(trial)) return;
    assign(trial, static_cast<int>(added_++ % static_cast<int64_t>(brackets_.size())));
    set_running(trial, true);
  }

  TrialDecision on_result(int64_t trial, const Json& result) override {
    on_trial_add(trial, nullptr);
    double t = 0, value = 0;
    if (!number_at(result, time_attr_, &t) || !number_at(result, metric_, &value)) return TrialDecision::next();
    const double score = sign_ * value;
    std::vector<AshaRung>& rungs = brackets_[bracket_of_[trial]];
    Progress& progress = progress_[trial];
    progress.t = t;
    double seconds = 0;
    if (t > 0 && number_at(result, "time_total_s", &seconds) && seconds > 0) {
      if (progress.pace > 0) pace_sum_ -= progress.pace, --pace_count_;
      progress.pace = seconds / t;
      pace_sum_ += progress.pace, ++pace_count_;
    }
    double iteration = 0;
    if (number_at(result, "training_iteration", &iteration)) progress.iteration = iteration;
    double stamp = 0;
    if (number_at(result, "timestamp", &stamp)) {
      progress.stamp = stamp;
      latest_stamp_ = std::max(latest_stamp_, stamp);
    }
    TrialDecision decision;
    if (t >= max_t_ && stop_last_) {
      if (promotion_ && !progress.backfill) record_if_new(rungs, trial, t, score);
      decision = TrialDecision::stop();
    } else if (progress.backfill) {
      decision = backfill_decision(rungs, trial, t);
    } else {
      decision = promotion_ ? promotion_decision(rungs, trial, t, score) : stopping_decision(rungs, trial, t, score);
      if (decision.action == TrialAction::kStop && !promotion_ && t < max_t_ && backfill_ && no_more_trials_) {
        // Below the cut-off with nothing left to start: go on while the leg
        // fits, else wait (paused) for a slot that would idle.
        set_backfill(trial);
        decision = start_leg(rungs, trial, t, horizon(trial)) ? TrialDecision::next() : park(trial);
      }
    }
    set_running(trial, decision.action == TrialAction::kContinue, decision.action == TrialAction::kPause);
    return decision;
  }

  // With iterations as the time attribute: only at the first rung of its
  // bracket the trial has reached and not yet recorded, at max_t, and anywhere
  // while backfilled (it may be paused for ASHA's own work).
  bool may_decide(int64_t trial, int64_t training_iteration) const override {
    if (time_attr_ != "training_iteration") return true;
    const auto bracket = bracket_of_.find(trial);
    if (bracket == bracket_of_.end()) return true;
    const auto progress = progress_.find(trial);
    if (progress != progress_.end() && progress->second.backfill) return true;
    const auto t = static_cast<double>(training_iteration);
    if (t >= max_t_ && stop_last_) return true;
    for (const AshaRung& rung : brackets_[static_cast<size_t>(bracket->second)])
      if (t >= rung.milestone && !rung.has(trial)) return true;
    return false;
  }

  void on_no_more_trials() override { no_more_trials_ = true; }

  void on_checkpoint(int64_t trial, int64_t iteration) override {
    Progress& p = progress_[trial];
    p.checkpoint = std::max(p.checkpoint, static_cast<double>(iteration));
  }

  std::optional<int64_t> choose_trial_to_run(const std::vector<int64_t>& paused) override {
    if (!promotion_) return backfill_candidate(paused);
    // get_job: the highest rung (across brackets) with a promotable trial.
    AshaRung* best_rung = nullptr;
    int64_t best_trial = -1;
    for (auto& rungs : brackets_) {
      for (size_t k = 0; k + 1 < rungs.size(); ++k) {
        AshaRung& rung = rungs[k];
        std::optional<int64_t> candidate =
            promotable(rung, [&](int64_t t) { return std::binary_search(paused.begin(), paused.end(), t); });
        if (candidate && (!best_rung || rung.milestone > best_rung->milestone)) {
          best_rung = &rung;
          best_trial = *candidate;
        }
      }
    }
    if (!best_rung) return backfill_candidate(paused);
    best_rung->promote(best_trial);
    progress_[best_trial].backfill = false;  // promoted by the rule: its rungs count again
    set_running(best_trial, true);
    return best_trial;
  }

  void on_trial_error(int64_t trial) override { forget(trial); }
  void on_trial_complete(int64_t trial, const Json&) override { forget(trial); }

  // Flat arrays (trials, scores) rather than one [trial, score] pair each, and
  // moved, not copied, into the result: at 80,000 trials seen the state took
  // 40 ms to build and stalled the driver's loop once a second.
  // restore_state() reads this and the earlier pair form.
  Json save_state() const override { return state_since(Marks{}); }

  // Every list of the state only grows (records, promotions, brackets,
  // ended), so a part is each list's new tail, and restoring the parts in
  // order appends them back: a save costs what changed, not what was seen.
  std::optional<Json> save_state_part() override {
    Marks now = marks();
    if (now == saved_) return Json();  // nothing new
    Json part = state_since(saved_);
    saved_ = std::move(now);
    return part;
  }

  void restore_state(const Json& state) override {
    const Json& brackets = state.at("brackets");
    for (size_t b = 0; b < brackets.size() && b < brackets_.size(); ++b) {
      for (size_t k = 0; k < brackets[b].size() && k < brackets_[b].size(); ++k) {
        AshaRung& rung = brackets_[b][k];
        const Json& saved = brackets[b][k];
        if (saved.contains("recorded")) {  // the pair form of earlier versions
          for (const Json& pair : saved.at("recorded"))
            rung.record(json_integer<int64_t>(pair.at(0)), pair.at(1).get<double>());
        } else {
          const Json& trials = saved.at("trials");
          const Json& scores = saved.at("scores");
          if (trials.size() != scores.size()) throw Error("asha state: a rung's trials and scores differ in length");
          for (size_t i = 0; i < trials.size(); ++i) rung.record(json_integer<int64_t>(trials[i]), scores[i].get<double>());
        }
        for (const Json& trial : saved.at("promoted")) rung.promote(json_integer<int64_t>(trial));
      }
    }
    const Json& bracket_of = state.at("bracket_of");
    if (bracket_of.is_array()) {  // the pair form of earlier versions
      for (const auto& pair : bracket_of) assign(json_integer<int64_t>(pair.at(0)), json_integer<int>(pair.at(1)));
    } else {
      const Json& trials = bracket_of.at("trials");
      const Json& bracket = bracket_of.at("brackets");
      if (trials.size() != bracket.size()) throw Error("asha state: bracket_of's trials and brackets differ in length");
      for (size_t i = 0; i < trials.size(); ++i) assign(json_integer<int64_t>(trials[i]), json_integer<int>(bracket[i]));
    }
    added_ = json_integer<int64_t>(state.at("added"));
    for (const Json& trial : state.at("ended")) forget(json_integer<int64_t>(trial));
    saved_ = marks();  // what was restored is in the store: later parts hold only what is new
  }

 private:
  // How far each list of the state was saved: per rung (recorded, promoted),
  // then the brackets assigned and the trials ended.
  struct Marks {
    std::vector<std::pair<size_t, size_t>> rungs;  // brackets' rungs in order; empty: none saved
    size_t assigned = 0, ended = 0;
    bool operator==(const Marks& o) const { return rungs == o.rungs && assigned == o.assigned && ended == o.ended; }
  };
  Marks marks() const {
    Marks m;
    for (const auto& rungs : brackets_)
      for (const auto& rung : rungs) m.rungs.emplace_back(rung.recorded.size(), rung.promoted.size());
    m.assigned = assigned_.size();
    m.ended = ended_.size();
    return m;
  }

  // The state added since `from` (all of it from Marks{}).
  Json state_since(const Marks& from) const {
    Json brackets = Json::array();
    size_t index = 0;
    for (const auto& rungs : brackets_) {
      Json b = Json::array();
      for (const auto& rung : rungs) {
        const auto [recorded_from, promoted_from] =
            index < from.rungs.size() ? from.rungs[index] : std::pair<size_t, size_t>{0, 0};
        ++index;
        std::vector<int64_t> trials;
        std::vector<double> scores;
        trials.reserve(rung.recorded.size() - recorded_from);
        scores.reserve(rung.recorded.size() - recorded_from);
        for (size_t i = recorded_from; i < rung.recorded.size(); ++i) {
          trials.push_back(rung.recorded[i].first);
          scores.push_back(rung.recorded[i].second);
        }
        std::vector<int64_t> promoted(rung.promoted.begin() + static_cast<std::ptrdiff_t>(promoted_from),
                                      rung.promoted.end());
        b.push_back({{"milestone", rung.milestone}, {"trials", std::move(trials)}, {"scores", std::move(scores)},
                     {"promoted", std::move(promoted)}});
      }
      brackets.push_back(std::move(b));
    }
    std::vector<int64_t> trials;
    std::vector<int> bracket;
    trials.reserve(assigned_.size() - from.assigned);
    bracket.reserve(assigned_.size() - from.assigned);
    for (size_t i = from.assigned; i < assigned_.size(); ++i) {
      trials.push_back(assigned_[i]);
      bracket.push_back(bracket_of_.at(assigned_[i]));
    }
    Json bracket_of = {{"trials", std::move(trials)}, {"brackets", std::move(bracket)}};
    std::vector<int64_t> ended(ended_.begin() + static_cast<std::ptrdiff_t>(from.ended), ended_.end());
    return {{"brackets", std::move(brackets)}, {"bracket_of", std::move(bracket_of)}, {"added", added_},
            {"ended", std::move(ended)}};
  }

  void assign(int64_t trial, int bracket) {
    if (bracket_of_.emplace(trial, bracket).second) assigned_.push_back(trial);
  }

  // What the scheduler knows of a trial's progress (not persisted: after a
  // resume of the sweep, backfill starts afresh).
  struct Progress {
    double t = 0;         // latest value of the time attribute
    double pace = 0;      // seconds per unit of it (0: unknown)
    bool backfill = false;
    double until = 0;     // backfill: the end of its current leg
    double stamp = 0;     // timestamp of its latest result (0: none)
    double iteration = 0;   // latest training_iteration
    double checkpoint = 0;  // training_iteration of its latest checkpoint
  };

  void forget(int64_t trial) {
    ended_.push_back(trial);
    set_running(trial, false);
    auto p = progress_.find(trial);
    if (p != progress_.end()) {
      if (p->second.pace > 0) pace_sum_ -= p->second.pace, --pace_count_;
      progress_.erase(p);
    }
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
  template <class IsPaused>
  std::optional<int64_t> promotable(const AshaRung& rung, IsPaused is_paused) const {
    const auto top = static_cast<size_t>(std::floor(static_cast<double>(rung.sorted.size()) / rf_ + 1e-9));
    size_t skipped = 0;  // better unpromoted trials that are not paused
    for (const auto& [negative, trial] : rung.unpromoted) {
      const double score = -negative;
      const auto better = skipped + static_cast<size_t>(rung.promoted_sorted.end() -
                                                        std::upper_bound(rung.promoted_sorted.begin(),
                                                                         rung.promoted_sorted.end(), score));
      if (better >= top) return std::nullopt;
      if (is_paused(trial)) return trial;
      skipped += 1;  // not paused (running again after a retry): look at the next best
    }
    return std::nullopt;
  }

  // ---- backfill ----

  // The first milestone of the trial's bracket beyond t (max_t past the last).
  double next_milestone(const std::vector<AshaRung>& rungs, double t) const {
    for (const AshaRung& rung : rungs)
      if (rung.milestone > t) return rung.milestone;
    return max_t_;
  }

  // Seconds per unit of the time attribute: the trial's own pace, else the
  // mean pace of the trials that have one, else 1.
  double pace_of(const Progress& p) const {
    if (p.pace > 0) return p.pace;
    return pace_count_ > 0 ? pace_sum_ / static_cast<double>(pace_count_) : 1.0;
  }

  // Where the trial stands after a decision: running, paused (waiting for a
  // slot) or neither (stopped, ended).
  void set_running(int64_t trial, bool running, bool paused = false) {
    Progress& p = progress_[trial];
    if (paused)
      paused_.insert(trial);
    else
      paused_.erase(trial);
    if (running && !p.backfill)
      running_normal_.insert(trial);
    else
      running_normal_.erase(trial);
  }

  void set_backfill(int64_t trial) {
    progress_[trial].backfill = true;
    running_normal_.erase(trial);
  }

  // How long the running (not backfilled) trials certainly go on: the largest
  // time any of them needs to reach its next rung, less the time since its
  // last result (results' timestamps; without them, less one unit).
  double horizon(int64_t except) const {
    double longest = 0;
    for (int64_t trial : running_normal_) {
      if (trial == except) continue;
      const Progress& p = progress_.at(trial);
      const auto& rungs = brackets_[static_cast<size_t>(bracket_of_.at(trial))];
      const double pace = pace_of(p);
      const double elapsed = p.stamp > 0 ? std::clamp(latest_stamp_ - p.stamp, 0.0, pace) : pace;
      longest = std::max(longest, (next_milestone(rungs, p.t) - p.t) * pace - elapsed);
    }
    return longest;
  }

  // A leg of a backfilled trial from t: up to its next rung, or less when
  // the horizon (seconds) ends first; false when not one unit of the time
  // attribute fits.
  bool start_leg(const std::vector<AshaRung>& rungs, int64_t trial, double t, double limit) {
    Progress& p = progress_.at(trial);
    const double units = std::floor(limit / pace_of(p) + 1e-9);
    if (units < 1) return false;
    p.until = std::min({next_milestone(rungs, t), t + units, max_t_});
    return true;
  }

  // A backfilled trial's result: its scores are not recorded at rungs (no
  // other trial's cut-off or promotion moves); at the end of its leg, another
  // leg if one fits, else it waits paused for another idle slot (the driver
  // ends the trials still paused when the sweep ends).
  TrialDecision backfill_decision(const std::vector<AshaRung>& rungs, int64_t trial, double t) {
    if (promotion_ && resumable(trial) && promotion_waiting()) return TrialDecision::pause();  // ASHA's own work first
    if (t < progress_.at(trial).until) return TrialDecision::next();
    return start_leg(rungs, trial, t, horizon(trial)) ? TrialDecision::next() : park(trial);
  }

  // A trial can wait paused only with a checkpoint of where it is (resuming
  // from an older one would train steps twice); otherwise it ends.
  bool resumable(int64_t trial) const {
    const Progress& p = progress_.at(trial);
    return p.iteration > 0 && p.checkpoint >= p.iteration;
  }
  TrialDecision park(int64_t trial) const { return resumable(trial) ? TrialDecision::pause() : TrialDecision::stop(); }

  // True when a paused trial is promotable by the rule (it needs a slot).
  bool promotion_waiting() const {
    const auto is_paused = [&](int64_t t) { return paused_.count(t) > 0; };
    for (const auto& rungs : brackets_)
      for (size_t k = 0; k + 1 < rungs.size(); ++k)
        if (promotable(rungs[k], is_paused)) return true;
    return false;
  }

  // Nothing promotable (promotion mode) or nothing to resume (stopping mode):
  // the best paused trial not promoted (highest rung first) whose leg fits
  // the horizon.
  std::optional<int64_t> backfill_candidate(const std::vector<int64_t>& paused) {
    if (!backfill_ || !no_more_trials_ || paused.empty()) return std::nullopt;
    const double limit = horizon(-1);
    if (limit <= 0) return std::nullopt;
    std::optional<int64_t> chosen;
    double chosen_milestone = -1, chosen_score = 0;
    for (const auto& rungs : brackets_) {
      for (size_t k = 0; k + 1 < rungs.size(); ++k) {
        const AshaRung& rung = rungs[k];
        if (rung.milestone < chosen_milestone) continue;
        for (const auto& [negative, trial] : rung.unpromoted) {
          if (rung.milestone == chosen_milestone && -negative <= chosen_score) break;
          if (!std::binary_search(paused.begin(), paused.end(), trial)) continue;
          auto p = progress_.find(trial);
          if (p == progress_.end() || pace_of(p->second) > limit * (1 + 1e-9)) continue;
          chosen = trial, chosen_milestone = rung.milestone, chosen_score = -negative;
          break;
        }
      }
    }
    if (!chosen) return std::nullopt;
    set_backfill(*chosen);
    const auto& rungs = brackets_[static_cast<size_t>(bracket_of_.at(*chosen))];
    if (!start_leg(rungs, *chosen, progress_.at(*chosen).t, limit)) return std::nullopt;
    set_running(*chosen, true);
    return chosen;
  }

  std::string time_attr_, metric_;
  double sign_ = -1, max_t_ = 100, grace_ = 1, rf_ = 4;
  bool stop_last_ = true, promotion_ = false, backfill_ = true, no_more_trials_ = false;
  std::unordered_map<int64_t, Progress> progress_;
  std::set<int64_t> running_normal_;  // running trials not backfilled
  std::set<int64_t> paused_;          // trials last told to pause
  double pace_sum_ = 0, latest_stamp_ = 0;
  int64_t pace_count_ = 0;
  std::vector<std::vector<AshaRung>> brackets_;
  std::map<int64_t, int> bracket_of_;
  std::vector<int64_t> assigned_;  // bracket_of_'s trials in the order they were assigned
  int64_t added_ = 0;
  std::vector<int64_t> ended_;
  Marks saved_;  // what save_state_part() has handed out
};

}  // namespace

std::unique_ptr<Scheduler> internal::make_asha(const Json& params, const std::string& metric, const std::string& mode) {
  return std::make_unique<AshaScheduler>(params, metric, mode);
}

}  // namespace tune
