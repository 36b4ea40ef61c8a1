// The "tpe" searcher with several objectives: Optuna 3.1's MOTPE.
#include <algorithm>
#include <cmath>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_searcher_test_util.h"
#include "multi_objective_test_util.h"
#include "search/model_space.h"
#include "search/pareto.h"
#include "search/searcher.h"
#include "base/error.h"

namespace tune {
namespace {

using namespace testing_util;  // NOLINT: the helpers of this folder

// Front 0: trials 0-2; front 1: trials 3-6; then 7; then 8.
const std::vector<std::vector<double>> kLosses = {{1, 5}, {2, 2},   {5, 1},     {2, 6}, {3, 3},
                                                  {6, 1.5}, {2.9, 3.1}, {4, 4}, {7, 7}};

TEST(MotpeSplit, WholeFrontsThenTheNextCutByHypervolumeContribution) {
  using internal::tpe_multi_objective_below;
  // Checked against Optuna 3.1's _split_observation_pairs on these losses.
  EXPECT_EQ(tpe_multi_objective_below(kLosses, 3), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(tpe_multi_objective_below(kLosses, 7), (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(tpe_multi_objective_below(kLosses, 8), (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Two of front 1 (reference 1.1 x its worst, (6.6, 6.6)): (3, 3) covers the
  // most (12.96); then (6, 1.5) adds 0.9 to it, (2, 6) 0.6 and (2.9, 3.1)
  // only 0.35, though alone (2.9, 3.1) covers 12.95.
  EXPECT_EQ(tpe_multi_objective_below(kLosses, 5), (std::vector<size_t>{0, 1, 2, 4, 5}));
  EXPECT_EQ(tpe_multi_objective_below(kLosses, 6), (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  // One of front 0 (reference (5.5, 5.5)): (2, 2) covers 12.25, the others 2.25.
  EXPECT_EQ(tpe_multi_objective_below(kLosses, 1), (std::vector<size_t>{1}));
}

TEST(MotpeSplit, BelowWeightsAreHypervolumeContributions) {
  using internal::tpe_multi_objective_weights;
  // The below group of 5 above, reference (6.6, 5.5): (2, 2) alone covers 5,
  // (5, 1) 1.3, (1, 5) 0.5; (3, 3) and (6, 1.5) are dominated: 1e-12 / 5.
  // Optuna 3.1's weights: [0.1, 1, 0.26, 2e-13, 2e-13].
  const auto w = tpe_multi_objective_weights({{1, 5}, {2, 2}, {5, 1}, {3, 3}, {6, 1.5}});
  ASSERT_EQ(w.size(), 5u);
  EXPECT_NEAR(w[0], 0.1, 1e-12);
  EXPECT_EQ(w[1], 1.0);
  EXPECT_NEAR(w[2], 0.26, 1e-12);
  EXPECT_NEAR(w[3], 2e-13, 1e-16);
  EXPECT_NEAR(w[4], 2e-13, 1e-16);
  EXPECT_EQ(tpe_multi_objective_weights({{3, 4}}), (std::vector<double>{1.0}));
  // Negative and zero worst values: the reference is 0.9 x and 1e-12.
  const auto v = tpe_multi_objective_weights({{-2, 0}, {-1, -1}});
  // (reference (-0.9, 1e-12)): (-2, 0) alone covers 1e-12 x 1, (-1, -1) about
  // 0.1 x 1; Optuna 3.1's weights: [2e-11, 1].
  EXPECT_NEAR(v[0], 2e-11, 1e-15);
  EXPECT_EQ(v[1], 1.0);
}

TEST(MotpeSearcher, BeatsRandomSearchOnZdt1ByHypervolume) {
  // Reference (1.1, 10) as in bench/run moo: f2 <= g <= 10, so every point counts.
  const std::vector<double> reference = {1.1, 10};
  std::vector<double> tpe_hv, random_hv;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    auto tpe = make_searcher(two_objectives("tpe", seed), unit_cube(6), 300, {});
    auto random = make_searcher(two_objectives("random", seed), unit_cube(6), 300, {});
    tpe_hv.push_back(hypervolume(drive_zdt1(*tpe, 300, 1), reference));
    random_hv.push_back(hypervolume(drive_zdt1(*random, 300, 1), reference));
  }
  // Measured: tpe median 9.98 (seeds in [9.44, 10.14]), random 9.07 (seeds in
  // [8.93, 9.20]); the true front scores 10.67.
  EXPECT_GT(median(tpe_hv), median(random_hv) + 0.5);
  EXPECT_GT(*std::min_element(tpe_hv.begin(), tpe_hv.end()),
            *std::max_element(random_hv.begin(), random_hv.end()));
}

TEST(MotpeSearcher, AMaxObjectiveIsANegatedMinObjective) {
  SearchOptions negated = two_objectives("tpe", 4);
  negated.objectives[1].mode = "max";
  auto plain = make_searcher(two_objectives("tpe", 4), unit_cube(3), 30, {});
  auto flipped = make_searcher(negated, unit_cube(3), 30, {});
  for (int64_t i = 0; i < 30; ++i) {
    const Json config = *plain->suggest(i);
    ASSERT_EQ(*flipped->suggest(i), config) << i;
    const auto f = zdt1(config);
    plain->on_complete({i, config, result_of(f), false});
    flipped->on_complete({i, config, result_of({f[0], -f[1]}), false});
  }
}

TEST(MotpeSearcher, RestoredSearcherContinuesExactly) {
  const auto options = two_objectives("tpe", 10, {{"n_startup_trials", 5}, {"multivariate", true}});
  auto live = make_searcher(options, unit_cube(4), 60, {});
  std::vector<Json> configs;
  std::vector<Observation> done;
  for (int64_t i = 0; i < 25; ++i) {
    configs.push_back(*live->suggest(i));
    const Json& config = configs.back();
    if (i % 6 == 4) done.push_back({i, config, Json(), true});
    else done.push_back({i, config, result_of(zdt1(config)), false});
    live->on_complete(done.back());
  }
  auto resumed = make_searcher(options, unit_cube(4), 60, {});
  resumed->restore(25, done);
  for (int64_t i = 25; i < 32; ++i) {
    const Json config = *live->suggest(i);
    EXPECT_EQ(*resumed->suggest(i), config) << i;
    const Observation o{i, config, result_of(zdt1(config)), false};
    live->on_complete(o);
    resumed->on_complete(o);
  }
}

// As in Optuna 3.1, a trial counts only with every objective finite; others
// (failed, missing an objective, NaN or infinite) are ignored: not in either
// group, not toward n_startup_trials. A searcher that saw them suggests what
// one that did not would.
TEST(MotpeSearcher, InfeasibleTrialsAreIgnored) {
  const auto options = two_objectives("tpe", 3, {{"n_startup_trials", 6}});
  auto feasible_only = make_searcher(options, unit_cube(3), 40, {});
  auto with_infeasible = make_searcher(options, unit_cube(3), 40, {});
  std::vector<Observation> good, all;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<Json> bad_results = {Json(), Json{{"f1", 0.0}}, Json{{"f1", 0.0}, {"f2", nan}},
                                         Json{{"f1", -inf}, {"f2", 0.0}}};
  for (int64_t i = 0; i < 24; ++i) {
    const Json config = *with_infeasible->suggest(i);
    if (i % 3 == 1) {
      all.push_back({i, config, bad_results[static_cast<size_t>(i / 3) % 4], i % 2 == 0});
    } else {
      all.push_back({i, config, result_of(zdt1(config)), false});
      good.push_back(all.back());
    }
    with_infeasible->on_complete(all.back());
  }
  feasible_only->restore(24, good);
  // 16 feasible trials: the model is on (with the 8 infeasible ones counted it
  // would also be; the equality below is what shows they are left out).
  for (int64_t i = 24; i < 30; ++i) EXPECT_EQ(*with_infeasible->suggest(i), *feasible_only->suggest(i)) << i;
}

TEST(MotpeSearcher, ConstantLiarAndEarlyStoppedAreRefusedAndBayesStillRefusesSeveralObjectives) {
  EXPECT_EQ(error_of(two_objectives("tpe", 1)), "no error");
  EXPECT_EQ(error_of(two_objectives("tpe", 1, {{"multivariate", true}, {"gamma", 0.2}})), "no error");
  EXPECT_EQ(error_of(two_objectives("tpe", 1, {{"constant_liar", true}})),
            "search.constant_liar is not supported with several metrics (Optuna 3.1's multi-objective TPE "
            "ignores running trials)");
  EXPECT_EQ(error_of(model_options("tpe", 1, {{"constant_liar", true}})), "no error");
  EXPECT_EQ(error_of(two_objectives("tpe", 1, {{"early_stopped", "as_is"}})),
            "search.early_stopped does not apply with several metrics (they run with scheduler fifo)");
  EXPECT_EQ(error_of(two_objectives("bayes", 1)),
            "search algorithm 'bayes' optimizes one metric; with several metrics use nsga2, tpe, random or grid");
}

}  // namespace
}  // namespace tune
