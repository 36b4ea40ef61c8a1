// Internal: the driver's side of host checks (the check itself is
// tuner/exec/host_check.h): each check is one `mpirun -np 1` of the check
// program on the host, with a deadline; its answer is the check's own report
// (a CheckMessage on the executor's listener) or, when none came, what
// mpirun's log says. GroupExecutor owns one and calls it under its lock (it
// is not thread-safe itself).
//
//   HostChecks checks({executable, network, listen_address, 10, 30});
//   checks.start({"node2", {"/data/train.csv"}}, listener.endpoint(), listener.secret());
//   ... checks.reported(message);          // the acceptor thread, on a CheckMessage
//   checks.poll(); for (auto& r : checks.take()) ...
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "tuner/exec/host_check.h"
#include "tuner/exec/protocol.h"
#include "tuner/exec/transport.h"

namespace tune::internal {

class HostChecks {
 public:
  struct Options {
    std::string executable;              // the check program (tune-full, a worker binary)
    std::string network, listen_address;  // several hosts: as GroupExecutorOptions
    double host_timeout_s = 10;           // mpirun's liveness timeout across hosts
    double check_timeout_s = 30;          // a check not answered by then failed
  };
  explicit HostChecks(Options options) : options_(std::move(options)) {}
  // Kills the checks still running and removes their logs (kept with
  // TUNE_KEEP_CHECK_LOGS set).
  ~HostChecks();
  HostChecks(const HostChecks&) = delete;
  HostChecks& operator=(const HostChecks&) = delete;

  // Starts a check of request.host; one that cannot start is answered (failed) at once.
  void start(const HostCheckRequest& request, const std::string& endpoint, const Secret& secret);
  // A check's report: answers it, unless it is unknown or names another host.
  void reported(const CheckMessage& check);
  // Answers the checks whose mpirun ended without a report, or that ran out
  // of time (their mpirun is killed); reaps the ones that ended.
  void poll();
  // The answers since the last take().
  std::vector<HostCheckResult> take();
  // Kills every check still running (the executor shuts down).
  void kill_all();

  // Removes the check-log folders (FOLDER/tune-checks-XXXXXX) that a driver
  // killed with -9 left: only folders whose `owner` file names a process that
  // is gone and that hold nothing but check logs and that file. Returns how
  // many were removed. Run before each driver's first check.
  static int remove_abandoned_folders(const std::string& folder);

 private:
  struct Probe {
    HostCheckRequest request;
    pid_t pid = -1;
    std::string log_path;
    double deadline = 0;
    bool answered = false;
  };
  void launch(int id, Probe& probe, const std::string& endpoint, const Secret& secret);
  void answer(int id, bool ok, const std::string& problem);

  Options options_;
  std::map<int, Probe> probes_;
  int next_ = 0;
  std::string log_dir_;  // the checks' mpirun logs (a private temporary folder)
  std::vector<HostCheckResult> answers_;
};

}  // namespace tune::internal
