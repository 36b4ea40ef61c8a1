// Several objectives in a sweep file (Ray Tune's metric and mode lists):
// what is read, what is refused and where.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "tuner/spec/sweep_spec.h"

namespace tune {
namespace {

using ::testing::ElementsAre;

const char* kBase = "trainable: t\nparam_space: {x: {uniform: [0, 1]}}\n";  // lines 1-2

SweepSpec parsed(const std::string& extra) { return parse_sweep(std::string(kBase) + extra, "sweep.yaml"); }

std::string objectives_error(const std::string& extra) {
  try {
    parsed(extra);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SweepSpecObjectives, ListsOfMetricsAndModesBecomeObjectives) {
  SweepSpec spec = parsed("metric: [loss, accuracy]\nmode: [min, max]\n");
  EXPECT_THAT(spec.objectives, ElementsAre(Objective{"loss", "min"}, Objective{"accuracy", "max"}));
  EXPECT_EQ(spec.metric, "loss");  // the first objective
  EXPECT_EQ(spec.mode, "min");
  const SearchOptions search = spec.search_options();
  EXPECT_EQ(search.objectives, spec.objectives);
  EXPECT_EQ(search.metric, "loss");

  SweepSpec one_mode = parsed("metric: [f1, f2, f3]\nmode: max\n");
  EXPECT_THAT(one_mode.objectives,
              ElementsAre(Objective{"f1", "max"}, Objective{"f2", "max"}, Objective{"f3", "max"}));

  EXPECT_TRUE(parsed("metric: loss\nmode: min\n").objectives.empty());  // one metric: as before
}

TEST(SweepSpecObjectives, TheObjectivesRoundTripThroughTheStoredSpec) {
  SweepSpec spec = parsed("metric: [loss, latency_ms]\nmode: [min, min]\nsearch: {algorithm: nsga2, seed: 3}\n");
  SweepSpec back = SweepSpec::from_json(spec.to_json());
  EXPECT_EQ(back.objectives, spec.objectives);
  EXPECT_EQ(back.metric, "loss");
  EXPECT_NO_THROW(back.validate());
  // A spec stored before objectives existed has none.
  Json old = parsed("metric: loss\nmode: min\n").to_json();
  old.erase("objectives");
  EXPECT_TRUE(SweepSpec::from_json(old).objectives.empty());
}

TEST(SweepSpecObjectives, MalformedListsAreRefusedAtTheirLine) {
  EXPECT_EQ(objectives_error("metric: [loss]\nmode: min\n"),
            "sweep.yaml:3: a list of metrics needs two or more (one metric is written metric: NAME)");
  EXPECT_EQ(objectives_error("metric: [loss, acc]\n"),
            "sweep.yaml:3: metrics need a mode: mode: [min, max, ...] or one mode for all");
  EXPECT_EQ(objectives_error("metric: [loss, acc]\nmode: [min]\n"), "sweep.yaml:4: mode lists 1 modes for 2 metrics");
  EXPECT_EQ(objectives_error("metric: [loss, acc]\nmode:\n  - min\n  - up\n"),
            "sweep.yaml:6: mode must be 'min' or 'max', got 'up'");
  EXPECT_EQ(objectives_error("metric:\n  - loss\n  - loss\nmode: min\n"), "sweep.yaml:5: metric 'loss' is listed twice");
  EXPECT_EQ(objectives_error("metric:\n  - loss\n  - [a]\nmode: min\n"),
            "sweep.yaml:5: metric must be a non-empty string, got a list");
  EXPECT_EQ(objectives_error("metric: loss\nmode: [min, max]\n"),
            "sweep.yaml:4: mode is a list but metric is not: write metric: [a, b] for several metrics");
}

// Schedulers and the searcher that rank trials by one number cannot take
// several (Ray's schedulers need one metric; Optuna prunes only
// single-objective studies; bayes models one metric): refused before
// anything runs, at the key. tpe takes several (Optuna's MOTPE).
TEST(SweepSpecObjectives, OneMetricSchedulersAndSearchersAreRefused) {
  const std::string two = "metric: [loss, acc]\nmode: [min, max]\n";
  EXPECT_EQ(objectives_error(two + "scheduler:\n  type: asha\n"),
            "sweep.yaml:6: scheduler: asha ranks trials by one metric; a sweep with several metrics runs with "
            "scheduler fifo");
  EXPECT_THAT(objectives_error(two + "search:\n  algorithm: bayes\n"),
              ::testing::StartsWith("sweep.yaml:6: search algorithm 'bayes' optimizes one metric"));
  EXPECT_EQ(objectives_error(two + "search: {algorithm: tpe, constant_liar: true}\n"),
            "sweep.yaml:5: search.constant_liar is not supported with several metrics (Optuna 3.1's "
            "multi-objective TPE ignores running trials)");
  for (const char* algorithm : {"nsga2", "tpe", "random", "grid"})
    EXPECT_EQ(objectives_error(two + "search: {algorithm: " + algorithm + "}\n"), "no error") << algorithm;
}

// A stop threshold on any objective follows that objective's mode, so it is
// no typo; a near miss of one still is.
TEST(SweepSpecObjectives, StopThresholdsMayNameAnyObjective) {
  const std::string two = "metric: [loss, accuracy]\nmode: [min, max]\n";
  EXPECT_EQ(objectives_error(two + "stop: {accuracy: 0.9}\n"), "no error");
  EXPECT_THAT(objectives_error(two + "stop: {acuracy: 0.9}\n"), ::testing::HasSubstr("did you mean 'accuracy'?"));
}

// A C++ spec states the objectives; metric/mode must then be the first.
TEST(SweepSpecObjectives, ACppSpecsMetricMustBeTheFirstObjective) {
  SweepSpec spec;
  spec.trainable = "t";
  spec.param_space.add("x", uniform(0, 1));
  spec.objectives = {{"loss", "min"}, {"acc", "max"}};
  spec.metric = "acc";
  spec.mode = "max";
  try {
    spec.validate();
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "the first objective (loss, min) must be the experiment's metric and mode (acc, max)");
  }
  spec.metric = "loss";
  spec.mode = "min";
  EXPECT_NO_THROW(spec.validate());
  spec.objectives = {{"loss", "min"}, {"loss", "max"}};
  EXPECT_THROW(spec.validate(), ConfigError);
  spec.objectives = {{"loss", "min"}, {"acc", "up"}};
  EXPECT_THROW(spec.validate(), ConfigError);
}

}  // namespace
}  // namespace tune
