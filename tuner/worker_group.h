// Internal: MPI worker groups (`mpirun -np N <exe>`), started and reused by the
// driver. A group is Starting until rank 0 connects back, then Idle or Busy
// with one trial. Groups are reused across trials of the same size; a group
// whose mpirun exits is Dead and replaced when needed.
//
// Threads: all methods are called from the driver thread. Each connected group
// has one reader thread that turns rank 0's messages into Events.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tuner/events.h"
#include "tuner/protocol.h"
#include "tuner/session_base.h"

namespace tune::internal {

struct GroupLaunchOptions {
  std::string executable;  // the program re-executed as worker (default: /proc/self/exe)
  std::string log_dir;     // mpirun's stdout/stderr go to log_dir/group_<id>.log
  std::vector<std::string> extra_mpirun_args;  // from TUNE_MPIRUN_ARGS
};

class WorkerGroupPool {
 public:
  WorkerGroupPool(EventQueue& events, GroupLaunchOptions options);
  ~WorkerGroupPool();  // shuts every group down (polite, then SIGKILL after a grace period)
  WorkerGroupPool(const WorkerGroupPool&) = delete;
  WorkerGroupPool& operator=(const WorkerGroupPool&) = delete;

  // Runs `start` on an idle group of `ranks` ranks, or on a newly launched one
  // (the run message is sent once it connects). Events carry `attempt`.
  void start(TrialStart start, int ranks, int attempt);

  // Driver-side handling of the pool's own events. Return the trial index that
  // was running on the group when it died (for kGroupExited), if any.
  void on_connected(int group, int fd);
  std::optional<int64_t> on_exited(int group, int status, std::string* log_tail);
  // The trial on `group` finished; the group becomes idle (reused).
  void release(int group);
  // The trial (index, attempt) running on `group`, if any.
  std::optional<std::pair<int64_t, int>> trial_on(int group) const;
  // Notices groups that died before connecting (pushes kGroupExited).
  void poll_starting();
  // Groups alive (for tests and the progress view).
  int live_groups() const;

  // Ranks in idle groups are asleep, but their processes hold memory: close
  // idle groups beyond this many ranks. Default: slots.
  void set_idle_rank_limit(int ranks) { idle_rank_limit_ = ranks; }

 private:
  struct Group;
  Group* find_idle(int ranks);
  Group* launch(int ranks);
  void send_run(Group& group);
  void shutdown(Group& group);
  void trim_idle();

  EventQueue& events_;
  GroupLaunchOptions options_;
  std::unique_ptr<UnixListener> listener_;
  std::thread acceptor_;
  bool stopping_ = false;
  int next_id_ = 0;
  int idle_rank_limit_ = 1 << 20;
  std::vector<std::unique_ptr<Group>> groups_;
};

}  // namespace tune::internal
