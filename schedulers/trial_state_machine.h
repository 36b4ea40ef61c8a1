// The trial lifecycle, one implementation for the driver (tuner/driver) and
// the scheduler simulator (schedulers/simulator.h): each trial's status, the
// moves between statuses, the queue of trials waiting to restart, the paused
// trials waiting for the scheduler, the rule that vets a scheduler's
// exploit, and what a free slot runs next.
//
//            start              pause
//   PENDING ───────► RUNNING ─────────► PAUSED
//     ▲ ▲               │ │  (resume: start) │
//     │ └── requeue ────┘ ├─ terminate ──────┴──► TERMINATED
//     └──── retry ────────┴─ fail ────────────────► ERROR
//           (a failure with retries left, or an exploit: first in line)
//
// The owner does the rest of each move (the store's rows, the executor, the
// searcher); the machine keeps the statuses and queues and refuses a move
// the lifecycle does not have (tune::Error: a bug in the caller).
//
//   TrialStateMachine trials;
//   trials.add(7);                           // a new trial: PENDING
//   trials.start(7);                         // RUNNING
//   TrialDecision d = trials.vet(7, scheduler.on_result(7, result), has_checkpoint);
//   if (d.action == TrialAction::kPause) trials.pause(7);
//   TrialStateMachine::Next next = trials.next(scheduler, busy, apply, has_checkpoint);
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <unordered_map>

#include "base/trial_status.h"
#include "schedulers/scheduler.h"

namespace tune {

class TrialStateMachine {
 public:
  // A trial enters: new (PENDING, starting now), or restored from a store
  // with its status (PENDING ones queue up to restart, PAUSED ones wait for
  // the scheduler; a RUNNING one is refused: its attempt is gone, restore
  // it as PENDING).
  void add(int64_t trial, TrialStatus status = TrialStatus::kPending, bool queued = false);
  TrialStatus status(int64_t trial) const;
  bool contains(int64_t trial) const { return status_.count(trial) > 0; }
  size_t size() const { return status_.size(); }

  // The moves. Each throws tune::Error for a move the lifecycle lacks.
  void start(int64_t trial);      // PENDING | PAUSED -> RUNNING (leaves the queues)
  void pause(int64_t trial);      // RUNNING -> PAUSED (waits for the scheduler)
  void terminate(int64_t trial);  // RUNNING | PAUSED -> TERMINATED
  void fail(int64_t trial);       // RUNNING | PAUSED -> ERROR
  void retry(int64_t trial);      // RUNNING | PAUSED -> PENDING, first in line (a retry, an exploit)
  void requeue(int64_t trial);    // RUNNING -> PENDING, not queued (interrupted: a resume restarts it)

  // A scheduler's exploit is carried out only from a donor that is another
  // known trial and has a checkpoint; otherwise the trial just goes on.
  TrialDecision vet(int64_t trial, TrialDecision decision, const std::function<bool(int64_t)>& has_checkpoint) const;

  // What a free slot runs: the first queued trial that is not `busy` (a
  // retry waits for its previous attempt to end), else, when none is
  // queued, the paused trial the scheduler picks (its on_trial_resume may
  // end or exploit it instead: `apply` carries that decision out, vetted,
  // and the look repeats), else a new trial if the scheduler takes one.
  // The caller starts kStart's trial; for kNew it adds the searcher's next
  // trial, or, when the searcher has none, calls no_more_trials() and asks
  // again. kWait: nothing to start, because every queued trial waits for its
  // previous attempt to end (the answer stays until the machine changes,
  // version(), or an attempt ends).
  struct Next {
    enum Kind { kNone, kStart, kNew, kWait } kind = kNone;
    int64_t trial = -1;
  };
  Next next(Scheduler& scheduler, const std::function<bool(int64_t)>& busy,
            const std::function<void(int64_t, const TrialDecision&)>& apply,
            const std::function<bool(int64_t)>& has_checkpoint);
  // No new trial will come: tells the scheduler (once); next() never
  // answers kNew again.
  void no_more_trials(Scheduler& scheduler);
  bool no_more_trials() const { return no_more_trials_; }

  const std::deque<int64_t>& queued() const { return queued_; }
  // Changes with every change of a trial's status or of the queues.
  uint64_t version() const { return version_; }
  const std::set<int64_t>& paused() const { return paused_; }

 private:
  TrialStatus& at(int64_t trial);
  void move(int64_t trial, std::initializer_list<TrialStatus> from, TrialStatus to, const char* what);
  void leave_queues(int64_t trial);

  std::unordered_map<int64_t, TrialStatus> status_;
  std::deque<int64_t> queued_;  // PENDING trials waiting for a slot: retries and exploits first
  std::set<int64_t> paused_;    // PAUSED, ascending (choose_trial_to_run's order)
  bool no_more_trials_ = false;
  uint64_t version_ = 0;
};

}  // namespace tune
