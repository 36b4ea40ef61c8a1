// Internal: runs trials as MPI worker groups: `mpirun -np N [--host ...]
// <program>` re-executes the program in worker mode (tune::init) on the
// attempt's placement; rank 0 connects back (tuner/exec/transport.h: a Unix
// socket on one machine, TCP on the driver's chosen address across hosts,
// after a token handshake) and speaks the protocol of tuner/exec/protocol.h; the
// other ranks learn every command by MPI broadcast. A group is Starting until
// rank 0 connects, then Idle or Busy with one attempt; groups are reused for
// trials of the same placement, idle ones beyond `idle_rank_limit` ranks are
// closed. A group whose mpirun exits fails its attempt (kFailed, lost) and is
// replaced when needed. Between hosts without a shared filesystem,
// checkpoints are streamed both ways (tuner/exec/checkpoint_transfer.h).
//
// Thread safety: start/cancel/poll/shutdown come from the driver's thread;
// an acceptor thread, and per connected group a reader and a writer thread,
// share the state under one mutex and push TrialEvents.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tuner/exec/executor.h"

namespace tune::internal {

struct GroupExecutorOptions {
  std::string executable;   // re-executed as workers; default: this program
  std::string log_dir;      // each group's output: log_dir/group_<id>.log
  int idle_rank_limit = 1 << 20;
  double stop_grace_s = 5;  // after SIGTERM, SIGKILL
  // Several hosts: the driver's address on the cluster's network (it listens
  // there, on TCP) and that network ("10.77.0.0/24"). "": one machine.
  std::string listen_address, network;
  // Hosts share no filesystem: checkpoints travel over the connection and
  // land under experiment_dir/trial_NNNNN/.
  bool stream_checkpoints = false;
  std::string experiment_dir;
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

// Environment variables that make a re-executed program a worker: where the
// driver listens, the token to prove, the group's id, and (with GPUs) each
// rank's devices ("0,1|2,3": rank r takes the r-th list).
inline constexpr const char* kEndpointEnv = "TUNE_DRIVER_ENDPOINT";
inline constexpr const char* kTokenEnv = "TUNE_DRIVER_TOKEN";
inline constexpr const char* kGroupEnv = "TUNE_GROUP_ID";
inline constexpr const char* kRankGpusEnv = "TUNE_RANK_GPUS";
inline constexpr const char* kNoGpus = "none";  // TUNE_RANK_GPUS of a group without GPUs
// Set by rank 0 of a worker group: the address its host reaches the driver from.
inline constexpr const char* kNodeAddressEnv = "TUNE_NODE_ADDRESS";

ExecutorKind group_executor_kind();

}  // namespace tune::internal
