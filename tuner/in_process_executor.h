// Internal: runs trials on a fixed pool of driver threads (no MPI, no
// isolation). A trial's report() pushes an Event and blocks until the driver
// replies.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "tuner/events.h"
#include "tuner/session_base.h"

namespace tune::internal {

class InProcessExecutor {
 public:
  InProcessExecutor(EventQueue& events, int threads);
  ~InProcessExecutor();  // joins; trials still running block this (they end at their next report)
  InProcessExecutor(const InProcessExecutor&) = delete;
  InProcessExecutor& operator=(const InProcessExecutor&) = delete;

  // Queues the trial; a free thread runs it. Events carry `attempt`.
  void start(TrialStart start, TrainableFunction function, int attempt);
  // Trials queued or running (their outcome event not yet pushed).
  int active() const { return active_.load(); }

 private:
  struct Job {
    TrialStart start;
    TrainableFunction function;
    int attempt;
  };
  void run(Job job);

  EventQueue& events_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool closing_ = false;
  std::atomic<int> active_{0};
  std::vector<std::thread> threads_;
};

}  // namespace tune::internal
