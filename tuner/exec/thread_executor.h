// Internal: runs trials in the driver's process, one thread per running
// attempt (threads are made when needed and reused, never one per slot). A
// trial's report() pushes a kResult event and blocks until the driver's
// verdict. No MPI, no isolation: a crash of the trainable is a crash of the
// sweep. The executor for C++ functions and in-process registered
// trainables with one worker.
//
// cancel() makes the attempt's next report() stop it; an attempt that does
// not end within `stop_grace_s` of its cancel (a trainable stuck in a loop;
// at once when cancelled as hung, kCancelHung) is abandoned: reported kFailed at once, its thread left to finish alone and
// never joined. Abandoned threads hold only shared state, so the executor and
// the driver may go away before they do.
#pragma once

#include <memory>

#include "tuner/exec/executor.h"

namespace tune::internal {

class ThreadExecutor : public TrialExecutor {
 public:
  ThreadExecutor(EventSink& events, const Clock& clock, TrainableFunction function, double stop_grace_s = 10.0);
  ~ThreadExecutor() override;

  void start(const AttemptId& attempt, TrialStart trial, const Placement& placement) override;
  void cancel(const AttemptId& attempt, const std::string& reason) override;
  void poll() override;
  int live() const override;
  void shutdown() override;

  // Threads made so far (tests).
  int threads() const;

  struct Core;  // shared with the threads (opaque)

 private:
  std::shared_ptr<Core> core_;
};

ExecutorKind thread_executor_kind();

}  // namespace tune::internal
