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
  if (status == TrialStatus::kPaused) paused_.insert(trial);
  if (status == TrialStatus::kPending && queued) queued_.push_back(trial);
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
  paused_.erase(trial);
  // A retry or exploit is near the front; the queue stays short.
  auto it = std::find(queued_.begin(), queued_.end(), trial);
  if (it != queued_.end()) queued_.erase(it);
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
}

void TrialStateMachine::terminate(int64_t trial) {
  move(trial, {TrialStatus::kRunning, TrialStatus::kPaused}, TrialStatus::kTerminated, "terminate");
}

void TrialStateMachine::fail(int64_t trial) {
  move(trial, {TrialStatus::kRunning, TrialStatus::kPaused}, TrialStatus::kError, "fail");
}

void TrialStateMachine::retry(int64_t trial) {
  move(trial, {TrialStatus::kRunning, TrialStatus::kPaused}, TrialStatus::kPending, "retry");
  queued_.push_front(trial);
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
    for (int64_t trial : queued_) {
      if (!busy(trial)) return {Next::kStart, trial};
    }
    if (!queued_.empty()) return {Next::kWait};  // retries wait for their old attempt
    std::vector<int64_t> candidates;
    for (int64_t trial : paused_)
      if (!busy(trial)) candidates.push_back(trial);
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
