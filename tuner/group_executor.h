// Internal: runs trials as MPI worker groups on this machine: `mpirun -np N
// <program>` re-executes the program in worker mode (tune::init), rank 0
// connects back over a Unix socket in a private directory and speaks the
// protocol of tuner/protocol.h; the other ranks learn every command by MPI
// broadcast. A group is Starting until rank 0 connects, then Idle or Busy
// with one attempt; groups are reused across trials of the same size, idle
// ones beyond `idle_rank_limit` ranks are closed. A group whose mpirun exits
// fails its attempt (kFailed, lost) and is replaced when needed.
//
// Thread safety: start/cancel/poll/shutdown come from the driver's thread;
// an acceptor thread and one reader thread per connected group share the
// state under one mutex and push TrialEvents.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tuner/executor.h"

namespace tune::internal {

struct GroupExecutorOptions {
  std::string executable;   // re-executed as workers; default: this program
  std::string log_dir;      // each group's output: log_dir/group_<id>.log
  int idle_rank_limit = 1 << 20;
  double stop_grace_s = 5;  // after SIGTERM, SIGKILL
};

class GroupExecutor : public TrialExecutor {
 public:
  GroupExecutor(EventSink& events, GroupExecutorOptions options);
  ~GroupExecutor() override;

  void start(const AttemptId& attempt, TrialStart trial, const Placement& placement) override;
  void cancel(const AttemptId& attempt, const std::string& reason) override;
  void poll() override;
  int live() const override;
  void shutdown() override;

  // Groups alive (tests, progress).
  int live_groups() const;
  // Groups launched so far.
  int launched_groups() const;

 private:
  struct Group;
  struct State;
  std::shared_ptr<State> state_;
};

// Environment variables that make a re-executed program a worker.
inline constexpr const char* kSocketEnv = "TUNE_DRIVER_SOCKET";
inline constexpr const char* kGroupEnv = "TUNE_GROUP_ID";

ExecutorKind group_executor_kind();

}  // namespace tune::internal
