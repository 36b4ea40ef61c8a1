// A registered trainable that prints without end (a debug line in its loop)
// runs in an MPI worker group whose output (mpirun's, forwarded from every
// rank) goes to STORAGE/EXP/logs/group_N.log on the driver's disk: the log is
// cut to its newest part past TUNE_GROUP_LOG_MAX_MB, so the disk does not fill
// and the sweep goes on.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
using testing::json_of;
using testing::run_command;
using testing::run_tune;
using testing::TempDir;

std::string tune_binary() { return TUNE_BINARY; }

TEST(GroupLogs, ARankThatPrintsWithoutEndKeepsItsGroupsLogWithinTheLimit) {
  TempDir dir;
  // 30 iterations of 256 KB each, 0.2 s apart: 7.5 MB at ~1.3 MB/s.
  const std::string file = dir.write("chatty.yaml", R"(name: chatty
trainable: synthetic
metric: loss
mode: min
num_samples: 1
resources: {workers: 1, use_mpi: true}
param_space:
  x: 1.0
  iterations: 30
  sleep_s: 0.2
  print_kb: 256
)");
  const std::string storage = dir.file("store");
  auto run = run_command("TUNE_GROUP_LOG_MAX_MB=1 " + tune_binary() + " run " + file + " --storage " + storage + " --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto trials = json_of(run_tune("trials chatty --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0]["status"], "TERMINATED");
  EXPECT_EQ(trials[0]["iteration"], 30);
  const std::string log = storage + "/chatty/logs/group_0.log";
  ASSERT_TRUE(fs::exists(log));
  // The limit, plus what one second (the trims' interval) adds, plus slack.
  EXPECT_LE(fs::file_size(log), 3u << 20) << "of 7.5 MB printed";
  std::ifstream in(log);
  std::string line;
  bool newest = false;
  while (std::getline(in, line)) newest = newest || line.rfind("iteration 30 ", 0) == 0;
  EXPECT_TRUE(newest) << "the newest output is kept";

  auto refused = run_command("TUNE_GROUP_LOG_MAX_MB=lots " + tune_binary() + " run " + file + " --storage " +
                             dir.file("other") + " --quiet");
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("TUNE_GROUP_LOG_MAX_MB must be a number of MB"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace tune
