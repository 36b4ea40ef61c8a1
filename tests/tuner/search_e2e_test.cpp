// End-to-end: `tune run` with the model-based searchers on the builtin branin.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

#include "test_util.h"

namespace tune {
namespace {

using Json = nlohmann::json;
using testing::run_tune;
using testing::TempDir;

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

TEST(SearchEndToEnd, BadSearchOptionsNameTheLine) {
  TempDir dir;
  auto run = run_tune("run " + dir.write("sweep.yaml", sweep("bad", "{algorithm: bayes, acquisition: eii}")) +
                      " --storage " + dir.file("store") + " --quiet");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("sweep.yaml:7: search.acquisition must be one of log-ei, ei, ucb, pi, got 'eii'"),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace tune
