// Hung trials (`failure.result_timeout_s`), end to end with the `tune` binary:
// a trial that stops reporting (the synthetic trainable's hang_at) fails once
// it has been silent for the timeout, is retried per max_failures, a worker
// group is killed whole, and the sweep ends with the other trials unaffected.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "test_util.h"

namespace tune {
namespace {

using Json = nlohmann::json;
using testing::run_tune;
using testing::TempDir;

// Whether `pid` runs: exists and is no zombie (a container's pid 1 may never
// reap the orphans it inherits).
bool running(int pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] != 'Z';
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// trial name -> its trial, from `tune trials --json`.
std::map<std::string, Json> trials_by_name(const std::string& experiment, const std::string& storage) {
  auto listed = run_tune("trials " + experiment + " --storage " + storage + " --json");
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  std::map<std::string, Json> out;
  for (const auto& t : Json::parse(listed.out)) out[t["trial_name"].get<std::string>()] = t;
  return out;
}

// Every pid= line the ranks of a trial wrote to the record_env directory.
std::set<int> recorded_pids(const std::string& dir) {
  std::set<int> pids;
  for (int trial = 0; trial < 8; ++trial) {
    for (int rank = 0; rank < 2; ++rank) {
      std::ifstream in(dir + "/trial_" + std::to_string(trial) + "_rank_" + std::to_string(rank) + ".txt");
      for (std::string line; std::getline(in, line);)
        if (line.rfind("pid=", 0) == 0) pids.insert(std::stoi(line.substr(4)));
    }
  }
  return pids;
}

// In-process (threads of the driver): a hung trial is failed after the
// timeout and its thread abandoned at once; one that hangs only before its
// first checkpoint is restored from it and finishes, one that hangs every time
// ends ERROR after its retry, and the trials beside them are unaffected.
TEST(HungTrials, InProcessTrialsThatStopReportingFailAndAreRetried) {
  TempDir dir;
  const std::string sweep = R"(name: hung
trainable: synthetic
metric: loss
mode: min
failure: {max_failures: 1, result_timeout_s: 1.5}
param_space:
  hang_at: {grid_search: [0, 3]}
  hang_once: {grid_search: [true, false]}
  iterations: 5
  sleep_s: 0.05
  checkpoint: true
)";
  const auto start = std::chrono::steady_clock::now();
  auto run = run_tune("run " + dir.write("hung.yaml", sweep) + " --storage " + dir.file("store") + " --quiet --slots 4");
  const double took = seconds_since(start);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_LT(took, 15.0) << "the sweep waited for the hung threads";
  auto trials = trials_by_name("hung", dir.file("store"));
  ASSERT_EQ(trials.size(), 4u);
  for (const auto& [name, t] : trials) {
    if (t["config"]["hang_at"] == 0) {
      EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
      EXPECT_EQ(t["iteration"], 5);
      EXPECT_EQ(t["attempts"], 1);
    } else if (t["config"]["hang_once"] == true) {
      EXPECT_EQ(t["status"], "TERMINATED") << "retried from its checkpoint, which does not hang: " << t.dump();
      EXPECT_EQ(t["attempts"], 2);
      EXPECT_EQ(t["iteration"], 5);
      EXPECT_NEAR(t["last_result"]["state"].get<double>(), 5.0, 1e-9) << "x (1) per iteration, restored at 2";
    } else {
      EXPECT_EQ(t["status"], "ERROR") << t.dump();
      EXPECT_EQ(t["attempts"], 2);
      EXPECT_EQ(t["iteration"], 2) << "hung before its third result, twice";
      EXPECT_NE(t["error"].get<std::string>().find("no result for 1.5 s (failure.result_timeout_s)"), std::string::npos)
          << t.dump();
    }
  }
  auto status = Json::parse(run_tune("status hung --storage " + dir.file("store") + " --json").out);
  EXPECT_EQ(status["status"], "FINISHED");
}

// A 2-rank MPI group whose rank 0 stops reporting while rank 1 waits for it in
// report()'s broadcast (a rank stuck in a collective): the trial ends ERROR
// and the whole group is killed; no rank of it outlives the sweep. (The
// timeout counts from the attempt's launch, group start-up included, so it
// is generous here.)
TEST(HungTrials, AStuckWorkerGroupIsKilledWhole) {
  TempDir dir;
  const std::string sweep = R"(name: hung-mpi
trainable: synthetic
metric: loss
mode: min
resources: {workers: 2}
failure: {max_failures: 0, result_timeout_s: 6}
param_space:
  hang_at: 3
  hang_rank: 0
  iterations: 4
  record_env: )" + dir.file("env") + "\n";
  const auto start = std::chrono::steady_clock::now();
  auto run = run_tune("run " + dir.write("hung.yaml", sweep) + " --storage " + dir.file("store") + " --quiet --slots 2");
  const double took = seconds_since(start);
  EXPECT_EQ(run.exit_code, 1) << run.err;  // its only trial failed
  EXPECT_NE(run.err.find("no result for 6 s (failure.result_timeout_s)"), std::string::npos) << run.err;
  EXPECT_LT(took, 25.0);
  auto trials = trials_by_name("hung-mpi", dir.file("store"));
  ASSERT_EQ(trials.size(), 1u);
  const Json& t = trials.begin()->second;
  EXPECT_EQ(t["status"], "ERROR") << t.dump();
  EXPECT_EQ(t["attempts"], 1);
  // Both ranks started (each wrote its pid before training), so the check
  // below looks at two real processes, not at none.
  const std::set<int> pids = recorded_pids(dir.file("env"));
  ASSERT_EQ(pids.size(), 2u) << "each rank records its pid when it starts";
  for (int pid : pids) EXPECT_FALSE(running(pid)) << "rank pid " << pid << " outlived the sweep";
  EXPECT_EQ(t["iteration"], 2) << "rank 0 hung before its third result";
}

}  // namespace
}  // namespace tune
