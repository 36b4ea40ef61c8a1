#include "storage/analysis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/error.h"
#include "storage/store.h"
#include "test_util.h"

namespace tune {
namespace {

std::vector<ResultRecord> curve(const std::vector<double>& losses) {
  std::vector<ResultRecord> results;
  for (size_t i = 0; i < losses.size(); ++i) {
    ResultRecord r;
    r.iteration = static_cast<int64_t>(i + 1);
    r.metrics = {{"loss", losses[i]}};
    results.push_back(r);
  }
  return results;
}

TEST(TrialScore, LastTakesTheFinalValue) {
  EXPECT_DOUBLE_EQ(*trial_score(curve({5, 1, 3}), "loss", "min", "last"), 3);
}

TEST(TrialScore, AllTakesTheBestValueInTheModesDirection) {
  EXPECT_DOUBLE_EQ(*trial_score(curve({5, 1, 3}), "loss", "min", "all"), 1);
  EXPECT_DOUBLE_EQ(*trial_score(curve({5, 1, 3}), "loss", "max", "all"), 5);
}

TEST(TrialScore, AveragesOverAllOrTheLastFiveOrTen) {
  std::vector<double> values;
  for (int i = 1; i <= 12; ++i) values.push_back(i);
  EXPECT_DOUBLE_EQ(*trial_score(curve(values), "loss", "min", "avg"), 6.5);
  EXPECT_DOUBLE_EQ(*trial_score(curve(values), "loss", "min", "last-5-avg"), 10);
  EXPECT_DOUBLE_EQ(*trial_score(curve(values), "loss", "min", "last-10-avg"), 7.5);
  EXPECT_DOUBLE_EQ(*trial_score(curve({2, 4}), "loss", "min", "last-5-avg"), 3);
}

TEST(TrialScore, SkipsMissingAndNonFiniteValues) {
  auto results = curve({4, 2});
  ResultRecord other;
  other.metrics = {{"accuracy", 0.5}};
  results.push_back(other);
  EXPECT_DOUBLE_EQ(*trial_score(results, "loss", "min", "last"), 2);
  EXPECT_FALSE(trial_score(results, "missing", "min", "last").has_value());
}

TEST(TrialScore, RejectsUnknownScopeAndMode) {
  EXPECT_THROW(trial_score(curve({1}), "loss", "min", "best"), ConfigError);
  EXPECT_THROW(trial_score(curve({1}), "loss", "lowest", "last"), ConfigError);
}

// best_checkpoints (one query for the experiment) picks, for every trial,
// what best_checkpoint (one query a trial) picks: random trials of random
// checkpoints, scored or not, some deleted, in two experiments.
TEST(BestCheckpoints, EachTrialsPickIsBestCheckpointsOwn) {
  testing::TempDir tmp;
  auto store = Store::open(tmp.path());
  std::mt19937_64 rng(7);
  const int64_t a = store->create_experiment(ExperimentRecord{0, "a"});
  const int64_t b = store->create_experiment(ExperimentRecord{0, "b"});
  std::vector<int64_t> trials_of_a;
  for (int64_t index = 0; index < 60; ++index) {
    for (const int64_t experiment : {a, b}) {
      const int64_t trial = store->add_trial(experiment, index, {{"i", index}});
      if (experiment == a) trials_of_a.push_back(trial);
      const int checkpoints = static_cast<int>(rng() % 5);  // none for a fifth of the trials
      for (int k = 0; k < checkpoints; ++k) {
        std::optional<double> score;
        if (rng() % 3 != 0) score = static_cast<double>(rng() % 7);  // ties too
        const int64_t id = store->add_checkpoint(trial, k + 1, "t" + std::to_string(trial) + "/c" + std::to_string(k), score, k);
        if (rng() % 5 == 0) store->mark_checkpoint_deleted(id);
      }
    }
  }
  for (const std::string mode : {"min", "max"}) {
    const auto picks = best_checkpoints(*store, a, mode);
    size_t with = 0;
    for (const int64_t trial : trials_of_a) {
      const std::string one = best_checkpoint(*store, trial, mode);
      const auto it = picks.find(trial);
      EXPECT_EQ(it == picks.end() ? "" : it->second, one) << "trial " << trial << " " << mode;
      with += !one.empty();
    }
    EXPECT_EQ(picks.size(), with) << "a trial of the other experiment, or one without a checkpoint, was picked";
    EXPECT_GT(with, 20u);
  }
}

}  // namespace
}  // namespace tune
