// The embedding API end to end, in-process: sweeps run for real against a
// store in a temporary directory.
#include "tuner/tuner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>

#include "tuner_test_util.h"
#include "base/error.h"

namespace tune {
namespace {

using testing::TempDir;

using testing::quiet_run;

SweepSpec quadratic_spec(const std::string& name, int samples) {
  return testing::one_parameter_spec(name, samples, 3, -2, 2);
}

TEST(Tuner, RunsEverySampleAndFindsTheBestByMetric) {
  TempDir dir;
  Tuner tuner([](Session& s) {
    double x = s.config()["x"];
    for (int i = 1; i <= 3; ++i) s.report({{"loss", x * x + 1.0 / i}});
  }, quadratic_spec("quad", 12), quiet_run(dir));
  ResultGrid results = tuner.fit();
  ASSERT_EQ(results.size(), 12u);
  EXPECT_EQ(results.num_terminated(), 12);
  double best_seen = 1e9;
  for (const auto& r : results.results()) {
    EXPECT_EQ(r.metrics["training_iteration"], 3);
    best_seen = std::min(best_seen, r.metrics["loss"].get<double>());
  }
  Result best = results.best();
  EXPECT_DOUBLE_EQ(best.metrics["loss"].get<double>(), best_seen);
  double x = best.config["x"];
  EXPECT_NEAR(best_seen, x * x + 1.0 / 3, 1e-12);
}

TEST(Tuner, StopsTrialsAtTrainingIterationAndMetricThreshold) {
  TempDir dir;
  SweepSpec spec = quadratic_spec("stops", 4);
  spec.stop.training_iteration = 4;
  Tuner tuner([](Session& s) {
    for (int i = 0; i < 1000; ++i) s.report({{"loss", 1.0}});
  }, spec, quiet_run(dir));
  ResultGrid stopped = tuner.fit();
  ASSERT_EQ(stopped.size(), 4u);
  for (const auto& r : stopped.results()) EXPECT_EQ(r.metrics["training_iteration"], 4);

  SweepSpec threshold = quadratic_spec("threshold", 3);
  threshold.stop.metric_thresholds["loss"] = 0.25;  // min mode: stop once loss <= 0.25
  Tuner second([](Session& s) {
    for (int i = 1; i < 1000; ++i) s.report({{"loss", 1.0 / i}});
  }, threshold, quiet_run(dir));
  ResultGrid by_threshold = second.fit();
  ASSERT_EQ(by_threshold.size(), 3u);
  for (const auto& r : by_threshold.results()) EXPECT_EQ(r.metrics["training_iteration"], 4);
}

TEST(Tuner, TheTimeBudgetEndsTheSweepAndStopsRunningTrials) {
  TempDir dir;
  SweepSpec spec = quadratic_spec("budget", 1000);
  spec.stop.time_budget_s = 0.3;
  Tuner tuner([](Session& s) {
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      s.report({{"loss", 1.0}});
    }
  }, spec, quiet_run(dir));
  ResultGrid results = tuner.fit();
  EXPECT_GE(results.size(), 2u);  // far fewer than 1000: the budget ended the sweep
  EXPECT_LT(results.size(), 10u);
  for (const auto& r : results.results()) {
    EXPECT_EQ(r.status, "TERMINATED");
    EXPECT_LT(r.metrics["training_iteration"].get<int>(), 100);
  }
}

// stop.plateau (Ray's TrialPlateauStopper, defaults std 0.01, 4 results,
// grace 4): loss = x*x + 1/i, whatever x, has its last 4 values' standard
// deviation (numpy's, as Ray's) first under 0.01 at i = 13 (0.00861; 0.0114
// at 12). With metric_threshold 1.0 a trial stops only once its loss is
// <= 1.0 too: never for |x| >= 1.
TEST(Tuner, APlateauStopsATrialOnceItsLastValuesAgree) {
  TempDir dir;
  auto trainable = [](Session& s) {
    const double x = s.config()["x"];
    for (int i = 1; i <= 200; ++i) s.report({{"loss", x * x + 1.0 / i}});
  };
  SweepSpec spec = quadratic_spec("plateau", 4);
  spec.stop.plateau = StopCriteria::Plateau{};
  ResultGrid flat = Tuner(trainable, spec, quiet_run(dir)).fit();
  ASSERT_EQ(flat.size(), 4u);
  for (const auto& r : flat.results()) EXPECT_EQ(r.metrics["training_iteration"], 13) << r.config.dump();

  SweepSpec bounded = quadratic_spec("plateau_threshold", 8);
  bounded.stop.plateau = StopCriteria::Plateau{};
  bounded.stop.plateau->metric_threshold = 1.0;
  ResultGrid results = Tuner(trainable, bounded, quiet_run(dir)).fit();
  ASSERT_EQ(results.size(), 8u);
  int ran_out = 0;
  for (const auto& r : results.results()) {
    const double x = r.config["x"];
    int expected = 200;  // the first i >= 13 whose loss is <= 1.0, if any
    for (int i = 13; i <= 200 && expected == 200; ++i)
      if (x * x + 1.0 / i <= 1.0) expected = i;
    EXPECT_EQ(r.metrics["training_iteration"], expected) << "x = " << x;
    ran_out += expected == 200;
  }
  EXPECT_GT(ran_out, 0) << "some x in [-2, 2] has |x| >= 1: the threshold kept it running";
  EXPECT_LT(ran_out, 8);
}

// stop.experiment_plateau (Ray's ExperimentPlateauStopper): every trial
// reports 1.0 once, one trial at a time; the best 3 are flat (std 0) from the
// 3rd result on, and with patience 2 the sweep stops at the 5th of 50.
TEST(Tuner, AnExperimentPlateauEndsTheSweep) {
  TempDir dir;
  SweepSpec spec = quadratic_spec("flat", 50);
  spec.max_concurrent_trials = 1;
  StopCriteria::ExperimentPlateau plateau;
  plateau.std = 0;
  plateau.top = 3;
  plateau.patience = 2;
  spec.stop.experiment_plateau = plateau;
  ResultGrid results = Tuner([](Session& s) { s.report({{"loss", 1.0}}); }, spec, quiet_run(dir)).fit();
  EXPECT_EQ(results.size(), 5u);
  for (const auto& r : results.results()) EXPECT_EQ(r.status, "TERMINATED");
}

TEST(Tuner, AFailingTrialIsErrorAndTheSweepGoesOn) {
  TempDir dir;
  Tuner tuner([](Session& s) {
    if (s.trial_index() % 2 == 1) throw std::runtime_error("boom in trial " + std::to_string(s.trial_index()));
    s.report({{"loss", 1.0}});
  }, quadratic_spec("failing", 6), quiet_run(dir));
  ResultGrid results = tuner.fit();
  EXPECT_EQ(results.num_errors(), 3);
  EXPECT_EQ(results.num_terminated(), 3);
  for (const auto& r : results.results()) {
    if (r.status == "ERROR") EXPECT_EQ(r.error, "boom in trial " + std::to_string(r.trial_index));
  }
}

TEST(Tuner, ANanMetricMakesTheTrialError) {
  TempDir dir;
  Tuner tuner([](Session& s) { s.report({{"loss", std::nan("")}}); }, quadratic_spec("nan", 2), quiet_run(dir));
  ResultGrid results = tuner.fit();
  ASSERT_EQ(results.num_errors(), 2);
  EXPECT_NE(results.results()[0].error.find("metric 'loss' is not finite"), std::string::npos);
}

TEST(Tuner, RetriesAFailedTrialFromItsLastCheckpoint) {
  TempDir dir;
  SweepSpec spec = quadratic_spec("retry", 1);
  spec.failure.max_failures = 2;
  std::atomic<int> starts{0};
  Tuner tuner([&](Session& s) {
    int start = starts++;
    int64_t first = s.iteration() + 1;
    if (start == 1) {
      // The retry resumes after the checkpoint taken at iteration 2.
      EXPECT_TRUE(s.checkpoint().has_value());
      EXPECT_EQ(s.checkpoint()->iteration, 2);
      EXPECT_EQ(first, 3);
      std::ifstream in(s.checkpoint()->path + "/state");
      int state = 0;
      in >> state;
      EXPECT_EQ(state, 2);
    }
    for (int64_t i = first; i <= 5; ++i) {
      if (start == 0 && i == 3) throw std::runtime_error("crash at 3");
      std::string dir = s.make_checkpoint_dir();
      std::ofstream(dir + "/state") << i;
      s.report({{"loss", 1.0 / i}}, dir);
    }
  }, spec, quiet_run(dir));
  ResultGrid results = tuner.fit();
  testing::expect_grid_is_the_stores(results, dir.path());
  EXPECT_EQ(starts.load(), 2);
  ASSERT_EQ(results.num_terminated(), 1);
  EXPECT_EQ(results.results()[0].metrics["training_iteration"], 5);
}

TEST(Tuner, GivesUpAfterMaxFailures) {
  TempDir dir;
  SweepSpec spec = quadratic_spec("give-up", 1);
  spec.failure.max_failures = 2;
  std::atomic<int> starts{0};
  Tuner tuner([&](Session&) {
    ++starts;
    throw std::runtime_error("always");
  }, spec, quiet_run(dir));
  const ResultGrid grid = tuner.fit();
  testing::expect_grid_is_the_stores(grid, dir.path());
  EXPECT_EQ(grid.num_errors(), 1);
  EXPECT_EQ(starts.load(), 3);  // the first attempt and two retries
}

TEST(Tuner, KeepsTheBestCheckpointsPlusTheLatest) {
  TempDir dir;
  SweepSpec spec = quadratic_spec("keep", 1);
  spec.checkpoint.num_to_keep = 2;
  const std::vector<double> losses = {5, 1, 4, 2, 3, 6};
  Tuner tuner([&](Session& s) {
    for (double loss : losses) {
      std::string d = s.make_checkpoint_dir();
      s.report({{"loss", loss}}, d);
    }
  }, spec, quiet_run(dir));
  testing::expect_grid_is_the_stores(tuner.fit(), dir.path());
  std::set<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() + "/keep/trial_00000")) {
    left.insert(entry.path().filename().string());
  }
  // Best two: iterations 2 (loss 1) and 4 (loss 2); latest: iteration 6.
  EXPECT_EQ(left, (std::set<std::string>{"checkpoint_000002", "checkpoint_000004", "checkpoint_000006"}));
  Result best = load_results(dir.path(), "keep").best();
  EXPECT_EQ(std::filesystem::path(best.checkpoint).filename(), "checkpoint_000002");
}

TEST(Tuner, EveryReportedResultIsInTheStore) {
  TempDir dir;
  std::atomic<int> reports{0};
  Tuner tuner([&](Session& s) {
    for (int i = 0; i < 50; ++i) {
      s.report({{"loss", 1.0}});
      ++reports;  // counted only once acknowledged
    }
  }, quadratic_spec("durable", 8), quiet_run(dir, 4));
  tuner.fit();
  auto store = Store::open(dir.path(), true);
  auto experiment = store->find_experiment("durable");
  size_t stored = 0;
  for (const auto& t : store->trials(experiment->id)) stored += store->results(t.id).size();
  EXPECT_EQ(stored, static_cast<size_t>(reports.load()));
  EXPECT_EQ(stored, 400u);
}

TEST(Tuner, RefusesAnExistingExperimentName) {
  TempDir dir;
  auto trainable = [](Session& s) { s.report({{"loss", 1.0}}); };
  Tuner(trainable, quadratic_spec("twice", 1), quiet_run(dir)).fit();
  EXPECT_THROW(Tuner(trainable, quadratic_spec("twice", 1), quiet_run(dir)).fit(), Error);
}

TEST(Tuner, RejectsNamesThatAreNotSafeFolderNames) {
  TempDir dir;
  auto trainable = [](Session& s) { s.report({{"loss", 1.0}}); };
  EXPECT_THROW(Tuner(trainable, quadratic_spec("../escape", 1), quiet_run(dir)).fit(), ConfigError);
  EXPECT_FALSE(Store::exists(dir.path()));
}

TEST(Tuner, RestoreContinuesWithTheRemainingSamples) {
  TempDir dir;
  auto trainable = [](Session& s) { s.report({{"loss", s.config()["x"].get<double>()}}); };
  SweepSpec spec = quadratic_spec("restore", 5);
  ResultGrid first = Tuner(trainable, spec, quiet_run(dir)).fit();
  ResultGrid again = Tuner::restore("restore", quiet_run(dir), trainable).fit();
  testing::expect_grid_is_the_stores(again, dir.path());
  ASSERT_EQ(again.size(), 5u);  // nothing left to run: the same five trials
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(again.results()[i].config, first.results()[i].config);
}

}  // namespace
}  // namespace tune
