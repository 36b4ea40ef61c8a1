// Multi-objective sweeps end to end: the objectives reach the store, the
// Pareto front read back (ResultGrid, `tune best`, `tune status`) is exactly
// the set of trials no other trial dominates, and stop thresholds follow each
// objective's mode.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>

#include "base/error.h"
#include "storage/analysis.h"
#include "tuner/cli/queries.h"
#include "tuner/tuner.h"
#include "tuner_test_util.h"

namespace tune {
namespace {

using ::testing::HasSubstr;
using tune::testing::quiet_run;
using tune::testing::two_objectives;
using tune::testing::TempDir;

// loss = (x - 0.3)^2 + y, accuracy = 1 - (x - 0.7)^2 - y / 2: x trades one
// for the other and y only hurts both, so the front is y near 0, x in [0.3, 0.7].
SweepSpec two_objective_spec(const std::string& name, int64_t samples, uint64_t seed) {
  SweepSpec spec;
  spec.name = name;
  spec.objectives = {{"loss", "min"}, {"accuracy", "max"}};  // metric/mode left to the Tuner
  spec.num_samples = samples;
  spec.search.seed = seed;
  spec.param_space.add("x", uniform(0, 1)).add("y", uniform(0, 1));
  return spec;
}

// a is at least as good as b on both and better on one (loss min, accuracy max).
bool dominates(const Json& a, const Json& b) {
  const double la = a["loss"], lb = b["loss"], aa = a["accuracy"], ab = b["accuracy"];
  return la <= lb && aa >= ab && (la < lb || aa > ab);
}

TEST(ParetoFront, TheFrontIsExactlyTheTrialsNoOtherTrialDominates) {
  TempDir dir;
  for (const char* algorithm : {"random", "nsga2"}) {
    SweepSpec spec = two_objective_spec(std::string("front-") + algorithm, 60, 11);
    spec.search.algorithm = algorithm;
    spec.search.params = algorithm == std::string("nsga2") ? Json{{"population_size", 10}} : Json::object();
    ResultGrid grid = Tuner(two_objectives, spec, quiet_run(dir)).fit();
    ASSERT_EQ(grid.num_terminated(), 60) << algorithm;

    std::set<std::string> expected;
    for (const Result& r : grid.results()) {
      bool dominated = false;
      for (const Result& other : grid.results()) dominated = dominated || dominates(other.metrics, r.metrics);
      if (!dominated) expected.insert(r.trial_name);
    }
    const std::vector<Result> front = grid.pareto_front();
    std::set<std::string> names;
    for (const Result& r : front) names.insert(r.trial_name);
    EXPECT_EQ(names, expected) << algorithm;
    EXPECT_GE(front.size(), 3u) << algorithm;  // a trade-off, not one winner
    for (size_t i = 1; i < front.size(); ++i)  // ordered by the first objective, best first
      EXPECT_LE(front[i - 1].metrics["loss"].get<double>(), front[i].metrics["loss"].get<double>());

    // One best trial needs a metric named; by one objective it is that one's best.
    try {
      grid.best();
      ADD_FAILURE() << "best() without a metric gave a trial";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("optimizes several metrics (loss (min), accuracy (max))"));
    }
    double best_accuracy = -1e9;
    for (const Result& r : grid.results()) best_accuracy = std::max(best_accuracy, r.metrics["accuracy"].get<double>());
    EXPECT_EQ(grid.best("accuracy", "max").metrics["accuracy"].get<double>(), best_accuracy);
  }
}

TEST(ParetoFront, TheCliListsTheFrontAndStatusNamesIt) {
  TempDir dir;
  ResultGrid grid = Tuner(two_objectives, two_objective_spec("cli-front", 30, 5), quiet_run(dir)).fit();
  const std::vector<Result> front = grid.pareto_front();
  ASSERT_FALSE(front.empty());

  cli::QueryOptions q;
  q.storage = dir.path();
  q.experiment = "cli-front";
  std::ostringstream table;
  EXPECT_EQ(cli::show_best(q, table), 0);
  EXPECT_THAT(table.str(), HasSubstr("Pareto front of cli-front: " + std::to_string(front.size()) +
                                     " trials no other trial beats on loss (min), accuracy (max) (scope last)"));
  for (const Result& r : front) EXPECT_THAT(table.str(), HasSubstr(r.trial_name));

  q.format = "json";
  std::ostringstream json_text;
  cli::show_best(q, json_text);
  const Json json = Json::parse(json_text.str());
  ASSERT_EQ(json["pareto_front"].size(), front.size());
  for (size_t i = 0; i < front.size(); ++i) {
    EXPECT_EQ(json["pareto_front"][i]["trial_name"], front[i].trial_name);
    EXPECT_EQ(json["pareto_front"][i]["values"]["accuracy"], front[i].metrics["accuracy"]);
  }
  EXPECT_EQ(json["objectives"][1], (Json{{"metric", "accuracy"}, {"mode", "max"}}));

  // --metric picks one objective's best trial, as for any experiment.
  q.format = "table";
  q.metric = "accuracy";
  q.mode = "max";
  std::ostringstream one;
  cli::show_best(q, one);
  EXPECT_THAT(one.str(), HasSubstr("best trial: " + grid.best("accuracy", "max").trial_name));

  q = {};
  q.storage = dir.path();
  q.experiment = "cli-front";
  q.format = "json";
  std::ostringstream status;
  cli::show_status(q, status);
  EXPECT_EQ(Json::parse(status.str())["pareto_front"].size(), front.size());
}

// A threshold on an objective follows its mode: accuracy (max) stops a trial
// once it reaches 0.5 or more, where loss (min) would stop at or below.
TEST(ParetoFront, AStopThresholdOnAnObjectiveFollowsItsMode) {
  TempDir dir;
  SweepSpec spec = two_objective_spec("stop-front", 2, 1);
  spec.stop.metric_thresholds = {{"accuracy", 0.5}};
  ResultGrid grid = Tuner(
                        [](Session& session) {
                          for (int i = 1; i <= 10; ++i)
                            session.report({{"loss", 1.0 / i}, {"accuracy", 0.1 * i}});
                        },
                        spec, quiet_run(dir))
                        .fit();
  for (const Result& r : grid.results()) EXPECT_EQ(r.metrics["training_iteration"], 5) << r.trial_name;
}

// predict and serve load one trial's checkpoint: with several metrics the
// user names the one that picks it (no silent choice of the first).
TEST(ParetoFront, TheCheckpointToServeNeedsAMetricNamed) {
  TempDir dir;
  ResultGrid grid = Tuner(
                        [](Session& session) {
                          const double x = session.config()["x"], y = session.config()["y"];
                          session.report({{"loss", (x - 0.3) * (x - 0.3) + y}, {"accuracy", 1 - (x - 0.7) * (x - 0.7) - y / 2}},
                                         session.make_checkpoint_dir());
                        },
                        two_objective_spec("serve-front", 8, 3), quiet_run(dir))
                        .fit();
  try {
    find_best_checkpoint(dir.path(), "serve-front");
    ADD_FAILURE() << "a checkpoint was chosen without a metric";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("optimizes several metrics: choose the trial with --metric and --mode"));
  }
  const BestCheckpoint chosen = find_best_checkpoint(dir.path(), "serve-front", "accuracy", "max");
  EXPECT_EQ(chosen.trial_name, grid.best("accuracy", "max").trial_name);
  EXPECT_EQ(chosen.path, grid.best("accuracy", "max").checkpoint);
}

TEST(ParetoFront, AnExperimentWithOneMetricHasNoFront) {
  TempDir dir;
  ResultGrid grid = Tuner([](Session& s) { s.report({{"loss", 1.0}}); },
                          tune::testing::one_parameter_spec("one", 2, 1), quiet_run(dir))
                        .fit();
  EXPECT_THROW(grid.pareto_front(), Error);
  EXPECT_EQ(grid.best().metrics["loss"], 1.0);
}

}  // namespace
}  // namespace tune
