#include "storage/analysis.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"

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

}  // namespace
}  // namespace tune
