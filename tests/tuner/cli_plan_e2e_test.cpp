// End-to-end: `tune --version`, `tune run FILE --dry-run` (the plan, nothing created) and
// `tune run FILE --smoke` (a couple of trials of two results), run as a user would.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "test_util.h"

namespace tune {
namespace {

using Json = nlohmann::json;
using testing::run_tune;
using testing::TempDir;

const char* kSweep = R"(name: plan-e2e
trainable: branin
metric: loss
mode: min
num_samples: 5
max_concurrent_trials: 2
search: {algorithm: random, seed: 3}
scheduler: {type: asha, max_t: 9, grace_period: 1, reduction_factor: 3}
stop: {training_iteration: 9, loss: 0.5}
param_space:
  x0: {uniform: [-5, 10]}
  x1: {uniform: [0, 15]}
  iterations: 9
points_to_evaluate: [{x0: 3.14, x1: 2.27}, {x0: 9.42, x1: 2.47}, {x0: -3.14, x1: 12.27}]
)";

TEST(CliVersion, BothProgramsPrintTheProjectVersion) {
  const auto light = run_tune("--version");
  EXPECT_EQ(light.exit_code, 0) << light.err;
  EXPECT_TRUE(std::regex_match(light.out, std::regex("tune [0-9]+\\.[0-9]+\\.[0-9]+\n"))) << light.out;
  const auto full = testing::run_command(std::string(TUNE_BUILD_DIR) + "/tune-full --version");
  EXPECT_EQ(full.out, light.out);
}

TEST(CliDryRun, PrintsThePlanAndCreatesNothing) {
  TempDir dir;
  const std::string file = dir.write("sweep.yaml", kSweep);
  const std::string storage = dir.file("store");
  const auto plan = run_tune("run " + file + " --dry-run --storage " + storage + " --slots 2");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  for (const char* line : {"experiment   plan-e2e in " , "trainable    branin", "trials       5 (num_samples 5, 3 points_to_evaluate first), at most 2 at a time",
                           "search       random, seed 3", "scheduler    asha {\"grace_period\":1,\"max_t\":9,\"reduction_factor\":3}",
                           "metric       loss (min)", "threads of the driver", "2 slots on this machine",
                           "stop         after 9 results; loss <= 0.5", "parameter    x0 {\"uniform\":[-5.0,10.0]}",
                           "constant     iterations = 9"}) {
    EXPECT_NE(plan.out.find(line), std::string::npos) << "no '" << line << "' in\n" << plan.out;
  }
  EXPECT_FALSE(std::filesystem::exists(storage)) << "--dry-run created the store";
}

TEST(CliDryRun, ABrokenSweepFailsAtItsLineAndAnExistingExperimentIsRefused) {
  TempDir dir;
  std::string text = kSweep;
  text.replace(text.find("grace_period: 1"), 15, "grace_priod: 1");
  const auto bad = run_tune("run " + dir.write("bad.yaml", text) + " --dry-run --storage " + dir.file("store"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.yaml:8:"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("grace_period"), std::string::npos) << "did you mean: " << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("store")));

  const std::string file = dir.write("sweep.yaml", kSweep);
  ASSERT_EQ(run_tune("run " + file + " --smoke --quiet --storage " + dir.file("store")).exit_code, 0);
  const auto again = run_tune("run " + file + " --dry-run --storage " + dir.file("store"));
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("experiment 'plan-e2e' already exists"), std::string::npos) << again.err;
}

TEST(CliSmoke, RunsTwoTrialsOfTwoResultsIntoTheStorage) {
  TempDir dir;
  const std::string storage = dir.file("store");
  const auto run = run_tune("run " + dir.write("sweep.yaml", kSweep) + " --smoke --quiet --storage " + storage);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("smoke run: num_samples 5 -> 2, points_to_evaluate 3 -> 2, stop.training_iteration 9 -> 2"),
            std::string::npos)
      << run.out;
  const Json trials = Json::parse(run_tune("trials plan-e2e --json --storage " + storage).out);
  ASSERT_EQ(trials.size(), 2u) << trials.dump();
  // Two results at most; ASHA (grace period 1) may stop the worse one after its first.
  int longest = 0;
  for (const Json& trial : trials) {
    EXPECT_EQ(trial["status"], "TERMINATED") << trial.dump();
    EXPECT_GE(trial["iteration"].get<int>(), 1) << trial.dump();
    EXPECT_LE(trial["iteration"].get<int>(), 2) << trial.dump();
    longest = std::max(longest, trial["iteration"].get<int>());
  }
  EXPECT_EQ(longest, 2);
  // The first two points_to_evaluate are the two trials.
  EXPECT_EQ(trials[0]["config"]["x0"], 3.14);
  EXPECT_EQ(trials[1]["config"]["x0"], 9.42);
}

TEST(CliSmoke, AGridRunsEachPointOnce) {
  TempDir dir;
  std::string text = kSweep;
  text.replace(text.find("iterations: 9"), 13, "iterations: 9\n  side: {grid_search: [left, middle, right]}");
  const std::string storage = dir.file("store");
  const auto run = run_tune("run " + dir.write("grid.yaml", text) + " --smoke --quiet --storage " + storage);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("num_samples 5 -> 1 (each of the 3 grid points once)"), std::string::npos) << run.out;
  const Json trials = Json::parse(run_tune("trials plan-e2e --json --storage " + storage).out);
  EXPECT_EQ(trials.size(), 3u) << trials.dump();
}

}  // namespace
}  // namespace tune
