// What a group's mpirun log says about its end, on logs OpenMPI 4.1 writes
// (copied from runs on the test hosts): the host to blame, and why a launch
// failed. And `tune hosts`' view of an experiment's hosts from its events.
#include "tuner/exec/mpirun_log.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"
#include "tuner/cli/hosts_command.h"

namespace tune::internal {
namespace {

std::string write_log(const testing::TempDir& dir, const std::string& text) {
  const std::string path = dir.file("group.log");
  std::ofstream(path) << text;
  return path;
}

TEST(MpirunLog, ALostDaemonIsBlamedOnItsNode) {
  testing::TempDir dir;
  const std::string log = write_log(dir, R"(--------------------------------------------------------------------------
ORTE has lost communication with a remote daemon.

  HNP daemon   : [[41286,0],0] on node vm
  Remote daemon: [[41286,0],2] on node 10.77.0.12

This is usually due to either a failure of the TCP network
connection to the node, or possibly an internal failure of
the daemon itself. We cannot recover from this failure, and
therefore will terminate the job.
--------------------------------------------------------------------------
)");
  EXPECT_EQ(log_culprits(log), std::vector<std::string>{"10.77.0.12"});
  EXPECT_FALSE(trainable_crashed(log));
}

TEST(MpirunLog, ARankKilledOnItsNodeAndAnUnreachablePeerAreBlamedInOrder) {
  testing::TempDir dir;
  const std::string log = write_log(dir, R"(--------------------------------------------------------------------------
WARNING: Open MPI failed to TCP connect to a peer MPI process.  This
should not happen.

Your Open MPI job may now hang or fail.

  Local host: tunehost3
  PID:        17479
  Message:    connect() to 10.77.0.12:1024 failed
  Error:      Operation now in progress (115)
--------------------------------------------------------------------------
mpirun noticed that process rank 1 with PID 0 on node 10.77.0.11 exited on signal 9 (Killed).
)");
  EXPECT_EQ(log_culprits(log), (std::vector<std::string>{"10.77.0.12", "10.77.0.11"}));
  EXPECT_FALSE(trainable_crashed(log)) << "SIGKILL is not the trainable's crash";
}

TEST(MpirunLog, NothingToBlameInACleanLog) {
  testing::TempDir dir;
  EXPECT_TRUE(log_culprits(write_log(dir, "epoch 1 loss 0.3\n")).empty());
  EXPECT_TRUE(log_culprits(dir.file("missing.log")).empty());
}

TEST(MpirunLog, LaunchFailuresSayWhatIsMissing) {
  testing::TempDir dir;
  EXPECT_EQ(launch_failure(write_log(dir, R"(--------------------------------------------------------------------------
mpirun was unable to launch the specified application as it could not access
or execute an executable:

Executable: /tmp/tune-copy/tune-full
Node: 10.77.0.11

while attempting to start process rank 0.
--------------------------------------------------------------------------
)"),
                           "/tmp/tune-copy/tune-full"),
            "cannot run /tmp/tune-copy/tune-full (not found there): install tune at the same path on every host");
  EXPECT_EQ(launch_failure(write_log(dir, "ssh: connect to host 10.77.0.11 port 22: Connection refused\n"
                                          "--------------------------------------------------------------------------\n"
                                          "ORTE was unable to reliably start one or more daemons.\n"),
                           "tune-full"),
            "did not start OpenMPI's daemon (orted): is openmpi-bin installed there, and can this machine reach it "
            "(ssh, or OMPI_MCA_plm_rsh_agent)? (ssh: connect to host 10.77.0.11 port 22: Connection refused)");
  EXPECT_EQ(launch_failure(write_log(dir, "/opt/tune/libexec/tune/tune-full: error while loading shared libraries: "
                                          "libtorch.so.2.1: cannot open shared object file: No such file or directory\n"),
                           "tune-full"),
            "cannot start tune-full: /opt/tune/libexec/tune/tune-full: error while loading shared libraries: "
            "libtorch.so.2.1: cannot open shared object file: No such file or directory");
  EXPECT_EQ(launch_failure(write_log(dir, "all went well\n"), "tune-full"), "");
}

EventRecord event(const std::string& kind, Json detail) {
  EventRecord e;
  e.kind = kind;
  e.detail = std::move(detail);
  return e;
}

TEST(HostStates, FoldTheExperimentsEventsIntoOneRowPerHost) {
  const std::vector<EventRecord> events = {
      event("started", {{"hosts", {{{"name", "a"}, {"slots", 2}, {"gpus", 1}}, {{"name", "b"}, {"slots", 2}, {"gpus", 0}}}}}),
      event("trial_started", {{"hosts", {"a", "b"}}}),
      event("trial_started", {{"hosts", {"a"}}}),
      event("trial_retry", {{"hosts", {"b"}}, {"suspects", Json::array()}}),
      event("trial_retry", {{"hosts", Json::array()}, {"suspects", {"a", "b"}}}),
      event("hosts_excluded", {{"host", "b"}, {"hosts", {"b"}}}),
      event("host_check_failed", {{"host", "b"}, {"problem", "host b did not answer"}}),
      event("host_added", {{"host", "c"}, {"slots", 4}, {"gpus", 0}}),
      event("host_drained", {{"host", "a"}}),
      event("host_request", {{"action", "add"}, {"host", "z"}}),  // a request is not a host
  };
  const Json hosts = cli::host_states(events);
  ASSERT_EQ(hosts.size(), 3u) << hosts.dump();
  EXPECT_EQ(hosts[0], (Json{{"host", "a"}, {"slots", 2}, {"gpus", 1}, {"state", "drained"}, {"attempts", 2},
                            {"lost", 0}, {"problem", nullptr}}));
  EXPECT_EQ(hosts[1], (Json{{"host", "b"}, {"slots", 2}, {"gpus", 0}, {"state", "taken out"}, {"attempts", 1},
                            {"lost", 1}, {"problem", "host b did not answer"}}));
  EXPECT_EQ(hosts[2]["state"], "active");
  EXPECT_EQ(hosts[2]["slots"], 4);
  // A readmitted host is active again.
  std::vector<EventRecord> back = events;
  back.push_back(event("host_readmitted", {{"host", "b"}}));
  EXPECT_EQ(cli::host_states(back)[1]["state"], "active");
}

}  // namespace
}  // namespace tune::internal
