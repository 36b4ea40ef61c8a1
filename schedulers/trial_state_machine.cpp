#include "schedulers/trial_state_machine.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace tune {

void TrialStateMachine::add(int64_t trial, TrialStatus status, bool queued) {
  if (contains(trial)) throw Error("trial " + std::to_string(trial) + " is already known");
  if (status == TrialStatus::kRunning) {
    throw Error("trial " + std::to_string(trial) + " cannot enter RUNNING: it enters PENDING and starts");
  }
  ++version_;
  status_[trial] = status;
  if (status == TrialStatus::kPaused) paused_.insert(trial), fresh_.push_back(trial);
  if (status == TrialStatus::kPending && queued) {
    queue_seq_[trial] = back_seq_;
    queued_[back_seq_++] = trial;
    fresh_.push_back(trial);
  }
}

TrialStatus TrialStateMachine::status(int64_t trial) const {
  auto it = status_.find(trial);
  if (it == status_.end()) throw Error("trial " + std::to_string(trial) + " is unknown");
  return it->second;
}

TrialStatus& TrialStateMachine::at(int64_t trial) {
  auto it = status_.find(trial);
  if (it == status_.end()) throw Error("trial " + std::to_string(trial) + " is unknown");
  return it->second;
}

void TrialStateMachine::leave_queues(int64_t trial) {
  parked_.erase(trial);  // a stale entry of fresh_ is skipped by its status
  if (paused_.erase(trial)) {
    auto ready = std::lower_bound(ready_.begin(), ready_.end(), trial);
    if (ready != ready_.end() && *ready == trial) ready_.erase(ready);
  }
  if (auto seq = queue_seq_.find(trial); seq != queue_seq_.end()) {
    queued_ready_.erase({seq->second, trial});
    queued_.erase(seq->second);
    queue_seq_.erase(seq);
  }
}

// Where a trial that may run goes: its place in the queue, or ready_.
void TrialStateMachine::make_ready(int64_t trial) {
  if (auto seq = queue_seq_.find(trial); seq != queue_seq_.end()) {
    queued_ready_.insert({seq->second, trial});
  } else if (paused_.count(trial)) {
    auto at = std::lower_bound(ready_.begin(), ready_.end(), trial);
    if (at == ready_.end() || *at != trial) ready_.insert(at, trial);
  }
}

void TrialStateMachine::look_at_fresh(const std::function<bool(int64_t)>& busy) {
  for (int64_t trial : fresh_) {
    if (!queue_seq_.count(trial) && !paused_.count(trial)) continue;  // it has left since
    if (busy(trial)) {
      parked_.insert(trial);
    } else {
      make_ready(trial);
    }
  }
  fresh_.clear();
}

void TrialStateMachine::idle(int64_t trial) {
  if (parked_.erase(trial)) make_ready(trial);
}

void TrialStateMachine::move(int64_t trial, std::initializer_list<TrialStatus> from, TrialStatus to,
                             const char* what) {
  TrialStatus& s = at(trial);
  if (std::find(from.begin(), from.end(), s) == from.end()) {
    throw Error(std::string("trial ") + std::to_string(trial) + " cannot " + what + " from " + status_name(s));
  }
  if (s == TrialStatus::kPending || s == TrialStatus::kPaused) leave_queues(trial);
  s = to;
  ++version_;
}

void TrialStateMachine::start(int64_t trial) {
  move(trial, {TrialStatus::kPending, TrialStatus::kPaused}, TrialStatus::kRunning, "start");
}

void TrialStateMachine::pause(int64_t trial) {
  move(trial, {TrialStatus::kRunning}, TrialStatus::kPaused, "pause");
  paused_.insert(trial);
  fresh_.push_back(trial);
}

void TrialStateMachine::terminate(int64_t trial) {
  move(trial, {TrialStatus::kRunning, TrialStatus::kPaused}, TrialStatus::kTerminated, "terminate");
}

void TrialStateMachine::fail(int64_t trial) {
  move(trial, {TrialStatus::kRunning, TrialStatus::kPaused, TrialStatus::kPending}, TrialStatus::kError, "fail");
}

void TrialStateMachine::retry(int64_t trial) {
  move(trial, {TrialStatus::kRunning, TrialStatus::kPaused, TrialStatus::kPending}, TrialStatus::kPending, "retry");
  queue_seq_[trial] = --front_seq_;
  queued_[front_seq_] = trial;
  fresh_.push_back(trial);
}

void TrialStateMachine::requeue(int64_t trial) {
  move(trial, {TrialStatus::kRunning}, TrialStatus::kPending, "requeue");
}

TrialDecision TrialStateMachine::vet(int64_t trial, TrialDecision decision,
                                     const std::function<bool(int64_t)>& has_checkpoint) const {
  if (decision.action != TrialAction::kExploit) return decision;
  if (decision.donor == trial || !contains(decision.donor) || !has_checkpoint(decision.donor)) {
    return TrialDecision::next();
  }
  return decision;
}

TrialStateMachine::Next TrialStateMachine::next(Scheduler& scheduler, const std::function<bool(int64_t)>& busy,
                                                const std::function<void(int64_t, const TrialDecision&)>& apply,
                                                const std::function<bool(int64_t)>& has_checkpoint) {
  while (true) {
    look_at_fresh(busy);
    if (!queued_ready_.empty()) return {Next::kStart, queued_ready_.begin()->second};
    if (!queued_.empty()) return {Next::kWait};  // retries wait for their old attempt
    const std::vector<int64_t>& candidates = ready_;
    if (!candidates.empty()) {
      const std::optional<int64_t> chosen = scheduler.choose_trial_to_run(candidates);
      if (chosen && std::binary_search(candidates.begin(), candidates.end(), *chosen)) {
        // The scheduler may end the chosen trial (HyperBand's losers) or
        // exploit it (synchronous PBT) instead of resuming it as it is.
        const TrialDecision decision = vet(*chosen, scheduler.on_trial_resume(*chosen), has_checkpoint);
        if (decision.action == TrialAction::kContinue || decision.action == TrialAction::kPause) {
          return {Next::kStart, *chosen};
        }
        apply(*chosen, decision);  // stop: ends it; exploit: queues it first
        if (status(*chosen) == TrialStatus::kPaused) {
          throw Error("trial " + std::to_string(*chosen) + ": a resume decision left it PAUSED");
        }
        continue;
      }
    }
    if (no_more_trials_ || !scheduler.can_start_new_trial()) return {};
    return {Next::kNew};
  }
}

void TrialStateMachine::no_more_trials(Scheduler& scheduler) {
  if (no_more_trials_) return;
  no_more_trials_ = true;
  ++version_;
  // Schedulers waiting for more trials (a HyperBand bracket that will not
  // fill up) decide with what they have.
  scheduler.on_no_more_trials();
}

}  // namespace tune
