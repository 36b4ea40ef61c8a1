// Internal: how the driver runs trials. A TrialExecutor starts attempts of
// trials and reports what happens to them as TrialEvents; the driver holds one
// executor per sweep and never asks which kind it is.
//
//   class ThreadExecutor : public TrialExecutor { ... };
//   ExecutorKind thread_executor_kind();  // {"threads", 100, accepts, create}
//   register_executor(thread_executor_kind());  // executor.cpp's built-ins
//
// Contract:
// - The driver calls start/cancel/poll/shutdown from its one thread.
// - Every started attempt ends with exactly one kEnded or kFailed event for
//   its AttemptId (after cancel() too); kResult events come before it. Events
//   are pushed to the EventSink from any thread.
// - A kResult event's `reply` must be called exactly once, by the driver,
//   after the batch holding the result is committed; the trial's process or
//   thread waits for it (kRunAhead answers let it send one more result first:
//   SessionBase::report). kContinue and kRunAhead let the trial go on; kStop
//   ends it (its next step is to stop and report kEnded with stopped = true).
// - The attempt's Placement (slots on hosts) is the driver's; the executor
//   runs the attempt's ranks there.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/json.h"
#include "trainer/session.h"
#include "tuner/exec/clock.h"
#include "tuner/exec/host_check.h"
#include "tuner/exec/session_base.h"

namespace tune {
struct RunConfig;
struct SweepSpec;
}  // namespace tune

namespace tune::internal {

// One start of one trial: attempts of a trial are numbered 1, 2, ...
struct AttemptId {
  int64_t trial = -1;
  int attempt = 0;
  bool operator==(const AttemptId& o) const { return trial == o.trial && attempt == o.attempt; }
  bool operator<(const AttemptId& o) const { return trial != o.trial ? trial < o.trial : attempt < o.attempt; }
};

struct TrialEvent {
  enum class Kind {
    kResult,  // metrics (+ checkpoint directory, local to the driver); reply once
    kEnded,   // the trainable returned (stopped: it stopped on a kStop verdict)
    kFailed,  // message: what went wrong; lost: the attempt's processes or hosts went away (killed,
              // unreachable, no result in time), not the trainable's own error (an exception, a crash)
  };
  Kind kind = Kind::kEnded;
  AttemptId attempt;
  Json metrics;
  std::string checkpoint;
  bool stopped = false;
  std::string message;
  bool lost = false;
  // A lost attempt: the hosts to blame (the one that died, became
  // unreachable or killed a rank). Empty: no host is to blame (a hung
  // trainable the driver ended).
  std::vector<std::string> lost_hosts;
  // The executor could not tell which of lost_hosts is at fault (the group
  // never started and mpirun did not say): the driver checks each.
  bool blame_uncertain = false;
  // kFailed: the driver's process had no descriptor left to start the trial
  // (its hard RLIMIT_NOFILE), which is not the trial's failure.
  bool out_of_descriptors = false;
  std::function<void(Verdict)> reply;
};

// Thread-safe queue of events from executors to the driver.
class EventSink {
 public:
  void push(TrialEvent event);
  // Ends the wait of take() without an event (the driver has other work:
  // a checkpoint copy finished).
  void wake();
  // Waits up to `timeout` for at least one event (or a wake()), then takes all.
  std::deque<TrialEvent> take(std::chrono::microseconds timeout);

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<TrialEvent> events_;
  bool woken_ = false;
};

// Where an attempt runs: how many ranks on which host, in rank order.
struct Placement {
  struct Share {
    std::string host;       // "" = this machine, without a hostfile
    int ranks = 1;
    std::vector<int> gpus;  // GPU ids on that host: gpus_per_rank for each of its ranks, in order
  };
  std::vector<Share> hosts;
  int slots = 0;          // slots held (ranks x cpus_per_worker)
  int gpus_per_rank = 0;
  int ranks() const;
};

class TrialExecutor {
 public:
  virtual ~TrialExecutor() = default;
  // Starts `attempt` of a trial. Never blocks on the trial.
  virtual void start(const AttemptId& attempt, TrialStart trial, const Placement& placement) = 0;
  // Ends a running attempt now (hung, interrupted, time budget): best effort;
  // its kEnded/kFailed event still follows, unless the executor must abandon
  // it (a thread that never returns), in which case it reports kFailed at once.
  // `reason` kCancelHung: the attempt reported nothing for
  // failure.result_timeout_s; an executor need not wait for it to stop.
  virtual void cancel(const AttemptId& attempt, const std::string& reason) = 0;
  static constexpr const char* kCancelHung = "no result";
  // Housekeeping on every turn of the driver's loop (launch failures...).
  virtual void poll() {}
  // Attempts started and not yet reported ended.
  virtual int live() const = 0;
  // Ends everything the executor runs and releases it; attempts still live
  // are cancelled. Called once, last.
  virtual void shutdown() = 0;

  // Executors that place ranks on other hosts check them
  // (tuner/exec/host_check.h): check_host starts a check in the background;
  // its outcome is one of take_host_checks()' results (within the
  // executor's check timeout). Others check nothing.
  virtual bool checks_hosts() const { return false; }
  virtual void check_host(const HostCheckRequest& request) { (void)request; }
  virtual std::vector<HostCheckResult> take_host_checks() { return {}; }
};

// What an executor factory gets.
struct ExecutorContext {
  const SweepSpec& spec;
  const RunConfig& run;
  const RegisteredTrainable* trainable;  // nullptr when `function` is given
  TrainableFunction function;            // a C++ function run in-process
  std::string experiment_dir;
  int slots = 1;             // the sweep's slots, over every host
  bool single_host = true;   // every host is this machine
  // Several hosts: the driver's address on their network, the network, and
  // the cluster key file every host holds (tuner/exec/transport.h).
  std::string listen_address, network, key_file;
  EventSink& events;
  const Clock& clock;
};

// Executor kinds, tried in priority order (highest first) for each sweep.
struct ExecutorKind {
  std::string name;
  int priority = 0;
  std::function<bool(const ExecutorContext&)> accepts;
  std::function<std::unique_ptr<TrialExecutor>(const ExecutorContext&)> create;
};
void register_executor(ExecutorKind kind);
// The first registered kind that accepts the sweep; throws ConfigError if none.
std::unique_ptr<TrialExecutor> make_executor(const ExecutorContext& context, std::string* chosen = nullptr);
std::vector<std::string> executor_names();

}  // namespace tune::internal
