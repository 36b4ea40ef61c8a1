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
//           (a failure with retries left, or an exploit: first in line;
//            PENDING may also retry or fail: an exploit's copy that failed)
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
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

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
  // fail and retry also from PENDING: a trial waiting to start from an
  // exploit's copy fails when the copy does (the driver copies off its loop).
  void fail(int64_t trial);       // RUNNING | PAUSED | PENDING -> ERROR
  void retry(int64_t trial);      // RUNNING | PAUSED | PENDING -> PENDING, first in line (a retry, an exploit)
  void requeue(int64_t trial);    // RUNNING -> PENDING, not queued (interrupted: a resume restarts it)
  // The trial's last attempt has ended (the driver tells it so): a queued or
  // paused trial next() found busy may now run.
  void idle(int64_t trial);

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
  // `busy` is asked once about a trial that has joined the queue or PAUSED
  // since the last call: one found busy waits for idle(trial), which the
  // caller owes it when that trial's last attempt ends.
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

  std::deque<int64_t> queued() const {
    std::deque<int64_t> in_line;
    for (const auto& [seq, trial] : queued_) in_line.push_back(trial);
    return in_line;
  }
  size_t queued_count() const { return queued_.size(); }
  // Changes with every change of a trial's status or of the queues.
  uint64_t version() const { return version_; }
  const std::set<int64_t>& paused() const { return paused_; }

 private:
  TrialStatus& at(int64_t trial);
  void move(int64_t trial, std::initializer_list<TrialStatus> from, TrialStatus to, const char* what);
  void leave_queues(int64_t trial);

  std::unordered_map<int64_t, TrialStatus> status_;
  // PENDING trials waiting for a slot, by sequence number: retries and
  // exploits first (a retry's number is below every other's, a restored
  // trial's above).
  std::map<int64_t, int64_t> queued_;
  std::set<int64_t> paused_;    // PAUSED, ascending (choose_trial_to_run's order)
  // What next() offers without walking every queued or paused trial on each
  // free slot (with thousands of exploits or time-shared members in line,
  // a burst of starts was quadratic). A trial that joins the queue or
  // PAUSED is looked at by the next next() (fresh_): busy, it is parked
  // until idle(); not busy, it is ready: a queued one in queue order, a
  // paused one in ready_, ascending, what the scheduler is offered.
  void look_at_fresh(const std::function<bool(int64_t)>& busy);
  void make_ready(int64_t trial);
  std::vector<int64_t> fresh_;
  std::unordered_set<int64_t> parked_;
  std::unordered_map<int64_t, int64_t> queue_seq_;
  std::set<std::pair<int64_t, int64_t>> queued_ready_;  // (sequence, trial)
  std::vector<int64_t> ready_;
  int64_t front_seq_ = 0, back_seq_ = 0;
  bool no_more_trials_ = false;
  uint64_t version_ = 0;
};

}  // namespace tune
