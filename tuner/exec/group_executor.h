// Internal: runs trials as MPI worker groups: `mpirun -np N [--host ...]
// <program>` re-executes the program in worker mode (tune::init) on the
// attempt's placement; rank 0 connects back (tuner/exec/transport.h: a Unix
// socket on one machine, TCP on the driver's chosen address across hosts,
// after the secret's handshake) and speaks the protocol of
// tuner/exec/protocol.h; the other ranks learn every command by MPI
// broadcast. A group is Starting until rank 0 connects, then Idle or Busy with
// one attempt; groups are reused for trials of the same placement, idle ones
// beyond `idle_rank_limit` ranks are closed. A group whose mpirun exits fails
// its attempt (kFailed, lost) and is replaced when needed. Between hosts
// without a shared filesystem, checkpoints are streamed both ways
// (tuner/exec/checkpoint_transfer.h).
//
// Across hosts every host of a group holds a connection to the driver (rank
// 0's, and a watch from the lowest rank of each other host), kept alive so
// that a dead or unreachable host shows within `host_timeout_s`. The first
// of them to break names the host to blame; the group is then abandoned at
// once (mpirun killed, its slots free), and the attempt is lost with
// TrialEvent::lost_hosts naming that host (or the host mpirun's log names).
// Hosts are checked with check_host() (tuner/exec/host_check.h).
//
// Thread safety: start/cancel/poll/shutdown/check_host come from the driver's
// thread; an acceptor thread, a watcher thread, and per connected group a
// reader and a writer thread share the state under one mutex and push
// TrialEvents.
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
  // Several hosts: the cluster key file (tuner/exec/transport.h); the secret
  // is derived from it per run. One machine: a random key.
  std::string key_file;
  // Several hosts: a host whose connection shows no life for this long is
  // dead (TCP keepalive and user timeout; OpenMPI's daemons likewise).
  double host_timeout_s = 10;
  // A host check that has not reported after this long failed.
  double check_timeout_s = 30;
  // A group's log (mpirun's output and its ranks') is cut to its newest part
  // past this (trim_log). 0: no limit.
  uint64_t log_max_bytes = 64ull << 20;
  // Several hosts: a group not connected this long after its mpirun started
  // is killed and its attempt lost (failure.start_timeout_s). 0: no limit.
  double start_timeout_s = 60;
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
  bool checks_hosts() const override { return true; }
  void check_host(const HostCheckRequest& request) override;
  std::vector<HostCheckResult> take_host_checks() override;

  // Groups alive (tests, progress).
  int live_groups() const;
  // Groups launched so far.
  int launched_groups() const;

 private:
  struct Group;
  struct State;
  std::shared_ptr<State> state_;
};

ExecutorKind group_executor_kind();

}  // namespace tune::internal
