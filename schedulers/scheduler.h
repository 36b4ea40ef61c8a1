// Scheduler: decides, after each result, what a trial does next, and which
// paused trial runs when a slot frees.
//
// Pure logic: no I/O, no threads, no clock of its own (times come in results).
// The driver calls it from its event-loop thread only.
//
//   auto scheduler = tune::make_scheduler("asha", {{"max_t", 81}}, "loss", "min");
//   scheduler->on_trial_add(7, config);
//   tune::TrialDecision d = scheduler->on_result(7, result);  // continue / stop / pause / exploit
//
// Driver contract:
// - `result` holds the trial's metrics plus training_iteration, time_total_s,
//   time_this_iter_s and timestamp (the time attribute the scheduler uses).
// - kStop: the trial ends (TERMINATED). kPause: the trial stops running, keeps
//   its latest checkpoint and becomes PAUSED; it runs again only when
//   choose_trial_to_run() returns it (from its latest checkpoint, iteration
//   count continuing). kExploit: the trial stops, then restarts at once from a
//   copy of `donor`'s latest checkpoint with `new_config` (PBT); its iteration
//   count continues; the driver records the exploit in the store.
// - on_checkpoint() tells which trials have a checkpoint (PBT never picks a
//   donor without one).
// - When a slot is free the driver asks choose_trial_to_run(): a PAUSED trial
//   index to resume, or nullopt to start a new trial from the searcher (if
//   can_start_new_trial() allows) — or, when neither is possible and nothing
//   is running, the driver ends the remaining PAUSED trials as TERMINATED.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"

namespace tune {

enum class TrialAction { kContinue, kStop, kPause, kExploit };

struct TrialDecision {
  TrialAction action = TrialAction::kContinue;
  int64_t donor = -1;  // kExploit: the trial whose latest checkpoint is cloned
  Json new_config;     // kExploit: the config the trial continues with

  static TrialDecision next() { return {}; }
  static TrialDecision stop() { return {TrialAction::kStop, -1, nullptr}; }
  static TrialDecision pause() { return {TrialAction::kPause, -1, nullptr}; }
  static TrialDecision exploit(int64_t donor, Json config) {
    return {TrialAction::kExploit, donor, std::move(config)};
  }
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual void on_trial_add(int64_t /*trial_index*/, const Json& /*config*/) {}
  virtual TrialDecision on_result(int64_t trial_index, const Json& result) = 0;
  virtual void on_checkpoint(int64_t /*trial_index*/, int64_t /*iteration*/) {}
  virtual void on_trial_complete(int64_t /*trial_index*/, const Json& /*last_result*/) {}
  virtual void on_trial_error(int64_t /*trial_index*/) {}
  // `paused`: indices of PAUSED trials, ascending. Default: nullopt (start new trials).
  virtual std::optional<int64_t> choose_trial_to_run(const std::vector<int64_t>& /*paused*/) {
    return std::nullopt;
  }
  // The driver is about to resume `trial_index`, the paused trial
  // choose_trial_to_run() returned: kContinue resumes it from its latest
  // checkpoint, kStop ends it (TERMINATED) without running it, kExploit
  // clones `donor`'s latest checkpoint and config first (synchronous PBT).
  virtual TrialDecision on_trial_resume(int64_t /*trial_index*/) { return TrialDecision::next(); }
  // The searcher has no more configs: no trial will be added from now on.
  virtual void on_no_more_trials() {}
  // False while the scheduler wants paused trials resolved before new ones
  // start (synchronous HyperBand / PBT). Default: true.
  virtual bool can_start_new_trial() const { return true; }
  // Whether on_result() for this trial's result at `training_iteration` may
  // return anything but kContinue, whatever else the result holds. Where it
  // cannot, the driver lets the trial report that result without waiting for
  // the answer (RunConfig::run_ahead; the answer is still committed first and
  // read at the trial's next report). A wrong false costs one iteration, never
  // a decision. Default: true (every result may be decided on).
  virtual bool may_decide(int64_t /*trial_index*/, int64_t /*training_iteration*/) const { return true; }
  // State to persist for `tune resume` (null if stateless) and its restore.
  // The driver saves it with every batch that pauses a trial, else at most
  // once a second: a restored state may be that much older than the store.
  virtual Json save_state() const { return nullptr; }
  virtual void restore_state(const Json& /*state*/) {}
  // A scheduler may save its state by parts: what changed since the previous
  // part (all of it in the first, only what is new after a restore), such
  // that restore_state() of each part in order rebuilds the state (ASHA: the
  // tails its lists gained; PBT: the members that changed). Null: nothing
  // new. nullopt (the default): save_state() is saved whole this time, and
  // the next part holds what changes after this call.
  // A scheduler whose parts rewrite what earlier ones held (PBT's members
  // change in place) may start over without a whole save: a part with
  // "base": true begins a run of parts that, once a part with "rebased":
  // true (the same part or a later one) is stored, holds all the state the
  // parts before it held; the driver then drops those (not the first part,
  // which is still restored first and must then be overwritten by them).
  virtual std::optional<Json> save_state_part() { return std::nullopt; }
  // The same, for a save the driver makes only to keep the stored state
  // recent (no pause in the batch): a scheduler whose changes can be split
  // puts at most about `max_entries` of them in the part and says so with
  // state_part_pending(), and the driver saves the rest over its next turns
  // (PBT at 10,000 members reporting each second: a part of every member,
  // ~20 ms, held every answer of that turn). Each part still applies on top
  // of the ones before. A batch that pauses a trial saves with
  // save_state_part_for_pause() instead.
  virtual std::optional<Json> save_state_part_up_to(size_t /*max_entries*/) { return save_state_part(); }
  // The save of a batch that pauses a trial: what the store's statuses need
  // (every trial paused or resumed since the last part: a restored scheduler
  // must know each trial the store shows PAUSED), and up to about
  // `max_entries` of the other changes, the rest over the next turns as for
  // save_state_part_up_to(). Default: save_state_part(), everything.
  virtual std::optional<Json> save_state_part_for_pause(size_t /*max_entries*/) { return save_state_part(); }
  virtual bool state_part_pending() const { return false; }
  // After restore_state(), each trial the store holds that is not final, with
  // the config it runs with: an exploit after the state was saved changed it.
  virtual void on_trial_restored(int64_t /*trial_index*/, const Json& /*config*/) {}
};

// type: one of scheduler_names(). params: the type's keys (README documents
// each with its default). metric/mode: the experiment's (a scheduler may take
// its own `metric`/`mode` keys instead). Throws tune::ConfigError for an
// unknown type or key, a wrong type or a bad value: one line.
std::unique_ptr<Scheduler> make_scheduler(const std::string& type, const Json& params,
                                          const std::string& metric, const std::string& mode);

const std::vector<std::string>& scheduler_names();

}  // namespace tune
