// When the driver is killed (kill -9) while a worker group trains, the group
// ends at once instead of training on until its next report, possibly beside
// the group a `tune resume` starts for the same trial.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "test_util.h"

namespace tune {
namespace {

using testing::run_command;
using testing::run_tune;
using testing::TempDir;

// Processes whose environment carries MARK (the driver, mpirun, the ranks).
std::vector<int> marked_processes(const std::string& mark) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "environ");
    std::string environ((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (environ.find("TUNE_TEST_MARK=" + mark) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

TEST(DriverDeath, AGroupEndsWhenItsDriverIsKilledMidIteration) {
  TempDir dir;
  // Each iteration sleeps 8 s before it reports: without the watch, the
  // ranks would outlive the driver by up to 8 s.
  const std::string sweep = dir.write("s.yaml", R"(name: orphan
trainable: synthetic
metric: loss
mode: min
num_samples: 1
resources: {workers: 2}
param_space:
  x: 1.5
  iterations: 3
  sleep_s: 8
  checkpoint: true
)");
  const std::string mark = std::filesystem::path(dir.path()).filename();
  run_command("TUNE_TEST_MARK=" + mark + " " + TUNE_BINARY + " run " + sweep + " --storage " + dir.file("store") +
              " --quiet --slots 2 >/dev/null 2>&1 & echo $! >" + dir.file("pid"));
  int driver = 0;
  std::ifstream(dir.file("pid")) >> driver;
  ASSERT_GT(driver, 0);

  // Wait for the first result (the group runs and is in its second iteration).
  bool reported = false;
  for (int i = 0; i < 600 && !reported; ++i) {
    auto trials = run_tune("trials orphan --storage " + dir.file("store") + " --json");
    if (trials.exit_code == 0) {
      auto json = nlohmann::json::parse(trials.out, nullptr, false);
      reported = json.is_array() && !json.empty() && json[0].value("iteration", 0) >= 1;
    }
    if (!reported) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(reported);
  ASSERT_GE(marked_processes(mark).size(), 3u) << "driver, mpirun and two ranks";

  run_command("kill -9 " + std::to_string(driver));
  const auto killed = std::chrono::steady_clock::now();
  std::vector<int> left = marked_processes(mark);
  while (!left.empty() && std::chrono::steady_clock::now() - killed < std::chrono::seconds(4)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = marked_processes(mark);
  }
  for (int pid : left) run_command("kill -9 " + std::to_string(pid));  // leave nothing behind either way
  EXPECT_TRUE(left.empty()) << left.size() << " processes of the group outlived the driver by 4 s";
}

}  // namespace
}  // namespace tune
