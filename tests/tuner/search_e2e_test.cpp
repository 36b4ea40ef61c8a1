// End-to-end: `tune run` with the model-based searchers on the builtin branin.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "test_util.h"

namespace tune {
namespace {

using Json = nlohmann::json;
using testing::run_command;
using testing::run_tune;
using testing::TempDir;
using testing::wait_gone;

std::string sweep(const std::string& name, const std::string& search) {
  return "name: " + name +
         "\n"
         "trainable: branin\n"
         "metric: value\n"
         "mode: min\n"
         "num_samples: 20\n"
         "max_concurrent_trials: 2\n"
         "search: " +
         search +
         "\n"
         "param_space:\n"
         "  x0: {uniform: [-5, 10]}\n"
         "  x1: {uniform: [0, 15]}\n"
         "  iterations: 2\n"
         "  noise: 0\n";
}

Json trials_of(const std::string& name, const std::string& storage) {
  auto trials = run_tune("trials " + name + " --storage " + storage + " --json");
  EXPECT_EQ(trials.exit_code, 0) << trials.err;
  return Json::parse(trials.out);
}

TEST(SearchEndToEnd, BayesAndTpeRunSweepsOnBranin) {
  TempDir dir;
  const std::string storage = dir.file("store");
  for (const std::string algorithm : {"bayes", "tpe"}) {
    const std::string name = "branin-" + algorithm;
    const std::string params = algorithm == "bayes" ? "n_initial_points: 6" : "n_startup_trials: 6";
    auto run = run_tune("run " + dir.write(name + ".yaml", sweep(name, "{algorithm: " + algorithm + ", seed: 5, " + params + "}")) +
                        " --storage " + storage + " --quiet");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    Json list = trials_of(name, storage);
    ASSERT_EQ(list.size(), 20u);
    std::set<Json> configs;
    double initial_best = 1e300, model_best = 1e300;
    for (const auto& t : list) {
      EXPECT_EQ(t["status"], "TERMINATED") << t;
      configs.insert(t["config"]);
      EXPECT_EQ(t["config"]["iterations"], 2);
      const double value = t["last_result"]["value"].get<double>();
      double& best = t["trial_index"].get<int>() < 6 ? initial_best : model_best;
      best = std::min(best, value);
    }
    EXPECT_EQ(configs.size(), 20u);
    if (algorithm == "bayes") {
      // Trials run two at a time, so which results the model has seen varies
      // from run to run; the model phase still beats the Sobol design by far
      // (Branin's minimum is 0.398, its mean over the box ~54).
      EXPECT_LT(model_best, initial_best / 3) << initial_best;
      EXPECT_LT(model_best, 5.0);
    }
  }
}

// Slow trials with checkpoints; kill -9 once two have finished, resume: every
// trial ends, the interrupted ones keep their configs, and the resumed
// searcher (rebuilt from the store, running trials counted as pending)
// proposes no repeat. `objectives` is the sweep's metric and mode lines.
void expect_resume_after_kill9(const std::string& objectives, const std::string& search) {
  TempDir dir;
  const std::string storage = dir.file("store");
  const std::string file = dir.write("slow.yaml",
                                     "trainable: synthetic\n" + objectives + "num_samples: 10\n"
                                     "max_concurrent_trials: 2\nsearch: " + search + "\n"
                                     "param_space:\n  x: {uniform: [0, 1]}\n  iterations: 6\n  sleep_s: 0.05\n"
                                     "  checkpoint: true\n");
  run_command(std::string(TUNE_BINARY) + " run " + file + " --name killed --storage " + storage + " --quiet & echo $! > " +
              dir.file("pid"));
  int pid = 0;
  std::ifstream(dir.file("pid")) >> pid;
  ASSERT_GT(pid, 0);
  bool two_done = false;
  for (int i = 0; i < 400 && !two_done; ++i) {
    auto status = run_tune("status killed --storage " + storage + " --json");
    if (status.exit_code == 0) two_done = Json::parse(status.out)["counts"].value("TERMINATED", 0) >= 2;
    if (!two_done) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(two_done);
  run_command("kill -9 " + std::to_string(pid));
  ASSERT_TRUE(wait_gone(pid)) << "kill -9 did not end the driver";
  const Json before = trials_of("killed", storage);
  auto resumed = run_tune("resume killed --storage " + storage + " --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const Json after = trials_of("killed", storage);
  ASSERT_EQ(after.size(), 10u);
  std::set<Json> configs;
  for (const auto& t : after) {
    EXPECT_EQ(t["status"], "TERMINATED") << t;
    EXPECT_EQ(t["iteration"], 6) << t;
    configs.insert(t["config"]);
  }
  EXPECT_EQ(configs.size(), 10u);
  for (const auto& b : before)
    for (const auto& a : after)
      if (a["trial_index"] == b["trial_index"]) EXPECT_EQ(a["config"], b["config"]);
}

TEST(SearchEndToEnd, BayesResumesAfterKill9) {
  expect_resume_after_kill9("metric: loss\nmode: min\n", "{algorithm: bayes, seed: 4, n_initial_points: 3}");
}

// synthetic reports loss = x^2 / i and state = x * i: a trade-off in x.
TEST(SearchEndToEnd, Nsga2ResumesAfterKill9) {
  expect_resume_after_kill9("metric: [loss, state]\nmode: [min, max]\n", "{algorithm: nsga2, seed: 4, population_size: 4}");
}

TEST(SearchEndToEnd, BadSearchOptionsNameTheLine) {
  TempDir dir;
  auto run = run_tune("run " + dir.write("sweep.yaml", sweep("bad", "{algorithm: bayes, acquisition: eii}")) +
                      " --storage " + dir.file("store") + " --quiet");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("sweep.yaml:7: search.acquisition must be one of log-ei, ei, ucb, pi, got 'eii'"),
            std::string::npos)
      << run.err;
}

// The README's multi-objective example as a user runs it: the sweep ends
// with its Pareto front, and `tune best` lists exactly the trials no other
// trial dominates on (f1, f2), each config on ZDT1's front shape (x0 = f1).
TEST(SearchEndToEnd, TheMultiObjectiveExampleEndsWithItsParetoFront) {
  TempDir dir;
  const std::string storage = dir.file("store");
  auto run = run_tune("run " + std::string(TUNE_SOURCE_DIR) + "/examples/sweeps/multi_objective.yaml --storage " +
                      storage + " --progress-interval 60");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("pareto front: "), std::string::npos) << run.out;

  const Json list = trials_of("zdt1-nsga2", storage);
  ASSERT_EQ(list.size(), 300u);
  auto best = run_tune("best zdt1-nsga2 --storage " + storage + " --json");
  ASSERT_EQ(best.exit_code, 0) << best.err;
  const Json front = Json::parse(best.out)["pareto_front"];
  std::set<std::string> names;
  for (const auto& m : front) names.insert(m["trial_name"].get<std::string>());
  size_t expected = 0;
  for (const auto& t : list) {
    const double f1 = t["last_result"]["f1"], f2 = t["last_result"]["f2"];
    bool dominated = false;
    for (const auto& o : list) {
      const double g1 = o["last_result"]["f1"], g2 = o["last_result"]["f2"];
      dominated = dominated || (g1 <= f1 && g2 <= f2 && (g1 < f1 || g2 < f2));
    }
    const std::string name = t["trial_name"].get<std::string>();
    EXPECT_EQ(names.count(name), dominated ? 0u : 1u) << name;
    expected += !dominated;
  }
  EXPECT_EQ(front.size(), expected);
  EXPECT_GE(front.size(), 3u);
  for (const auto& m : front) EXPECT_DOUBLE_EQ(m["values"]["f1"].get<double>(), m["config"]["x0"].get<double>());
}

}  // namespace
}  // namespace tune
