// The "bayes" searcher: optimization quality on simple functions, seeds,
// concurrency, mixed spaces, failures and resume.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <set>
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_searcher_test_util.h"
#include "search/searcher.h"
#include "base/error.h"

namespace tune {
namespace {

using testing_util::drive;
using testing_util::finished;
using testing_util::model_options;
using ::testing::HasSubstr;

SearchSpace square() {
  SearchSpace space;
  space.add("x", uniform(0, 1)).add("y", uniform(0, 1));
  return space;
}

double bowl(const Json& c) {
  const double x = c["x"].get<double>(), y = c["y"].get<double>();
  return (x - 0.3) * (x - 0.3) + (y - 0.7) * (y - 0.7);
}

TEST(BayesSearcher, FindsTheMinimumOfABowlFarBetterThanRandom) {
  auto bayes = make_searcher(model_options("bayes", 1), square(), 25, {});
  auto random = make_searcher(model_options("random", 1), square(), 25, {});
  const double bayes_best = drive(*bayes, 25, 1, bowl).best;
  const double random_best = drive(*random, 25, 1, bowl).best;
  // 25 random points in the unit square land within 0.03 of (0.3, 0.7) with
  // probability ~7%; the GP homes in.
  EXPECT_LT(bayes_best, 1e-4);
  EXPECT_LT(bayes_best, random_best / 10);
}

TEST(BayesSearcher, MaximizesWhenModeIsMax) {
  auto bayes = make_searcher(model_options("bayes", 2, Json::object(), "max"), square(), 25, {});
  auto run = drive(*bayes, 25, 1, [](const Json& c) { return -bowl(c); });
  double best = -1e9;
  for (double v : run.losses) best = std::max(best, v);
  EXPECT_GT(best, -1e-4);
}

TEST(BayesSearcher, EveryAcquisitionOptimizes) {
  for (const char* acquisition : {"ei", "log-ei", "ucb", "pi"}) {
    auto bayes = make_searcher(model_options("bayes", 3, {{"acquisition", acquisition}}), square(), 25, {});
    EXPECT_LT(drive(*bayes, 25, 1, bowl).best, 2e-3) << acquisition;
  }
}

TEST(BayesSearcher, SameSeedSameSuggestionsDifferentSeedDifferent) {
  auto a = make_searcher(model_options("bayes", 7), square(), 16, {});
  auto b = make_searcher(model_options("bayes", 7), square(), 16, {});
  auto c = make_searcher(model_options("bayes", 8), square(), 16, {});
  auto ra = drive(*a, 16, 2, bowl), rb = drive(*b, 16, 2, bowl), rc = drive(*c, 16, 2, bowl);
  EXPECT_EQ(ra.configs, rb.configs);
  EXPECT_NE(ra.configs, rc.configs);
}

TEST(BayesSearcher, InitialDesignThenModelAndTotal) {
  auto bayes = make_searcher(model_options("bayes", 4, {{"n_initial_points", 3}}), square(), 5,
                             {Json{{"x", 0.5}}});
  EXPECT_EQ(bayes->total(), 5);
  auto first = bayes->suggest(0);
  ASSERT_TRUE(first);
  EXPECT_EQ((*first)["x"], 0.5);  // points_to_evaluate first, missing keys sampled
  EXPECT_TRUE((*first)["y"].is_number());
  auto run = drive(*bayes, 5, 1, bowl);  // continues from index 0 again: same config
  EXPECT_EQ(run.configs[0], *first);
  EXPECT_FALSE(bayes->suggest(5).has_value());
}

TEST(BayesSearcher, ConcurrentSuggestionsNeverRepeatAPointInADiscreteSpace) {
  SearchSpace space;
  space.add("opt", choice({"sgd", "adam", "rmsprop", "lamb"})).add("depth", randint(0, 5));  // 20 configs
  auto bayes = make_searcher(model_options("bayes", 5, {{"n_initial_points", 3}}), space, 20, {});
  std::vector<Json> configs;
  for (int64_t i = 0; i < 3; ++i) {
    configs.push_back(*bayes->suggest(i));
    bayes->on_complete(finished(i, configs.back(), configs.back()["depth"].get<double>()));
  }
  for (int64_t i = 3; i < 15; ++i) configs.push_back(*bayes->suggest(i));  // 12 pending at once
  EXPECT_EQ(std::set<Json>(configs.begin(), configs.end()).size(), configs.size());
}

TEST(BayesSearcher, PendingContinuousSuggestionsSpreadOut) {
  for (const char* parallel : {"kriging_believer", "cl_min", "cl_mean", "cl_max"}) {
    auto bayes = make_searcher(model_options("bayes", 6, {{"n_initial_points", 6}, {"parallel", parallel}}), square(),
                               20, {});
    auto run = drive(*bayes, 10, 1, bowl);
    std::vector<Json> batch;
    for (int64_t i = 10; i < 14; ++i) batch.push_back(*bayes->suggest(i));
    double closest = 1e9;
    for (size_t a = 0; a < batch.size(); ++a)
      for (size_t b = a + 1; b < batch.size(); ++b)
        closest = std::min(closest, std::hypot(batch[a]["x"].get<double>() - batch[b]["x"].get<double>(),
                                               batch[a]["y"].get<double>() - batch[b]["y"].get<double>()));
    EXPECT_GE(closest, 0.01) << parallel;  // min_pending_distance
  }
}

TEST(BayesSearcher, MixedNestedSpaceGivesValidValuesAndLearnsTheCategory) {
  SearchSpace space;
  space.add("lr", loguniform(1e-4, 1e-1))
      .add("model.width", qrandint(16, 128, 16))
      .add("model.depth", lograndint(1, 9))
      .add("dropout", quniform(0.0, 0.5, 0.1))
      .add("opt", choice({"sgd", "adam", "rmsprop"}))
      .add("shift", randn(0, 1))
      .constant("epochs", 3);
  auto f = [](const Json& c) {
    double loss = std::pow(std::log10(c["lr"].get<double>()) + 2.5, 2);
    loss += std::pow((c["model"]["width"].get<double>() - 64) / 64, 2);
    loss += 0.1 * std::fabs(c["model"]["depth"].get<double>() - 3) + std::fabs(c["dropout"].get<double>() - 0.2);
    loss += c["opt"] == "adam" ? 0.0 : 1.0;
    loss += 0.1 * std::pow(c["shift"].get<double>(), 2);
    return loss;
  };
  auto bayes = make_searcher(model_options("bayes", 9), space, 40, {});
  auto run = drive(*bayes, 40, 2, f);
  int adam_late = 0;
  for (size_t i = 0; i < run.configs.size(); ++i) {
    const Json& c = run.configs[i];
    const double lr = c["lr"].get<double>();
    EXPECT_TRUE(lr >= 1e-4 && lr < 1e-1) << c;
    ASSERT_TRUE(c["model"]["width"].is_number_integer()) << c;
    EXPECT_EQ(c["model"]["width"].get<int64_t>() % 16, 0) << c;
    EXPECT_TRUE(c["model"]["width"].get<int64_t>() >= 16 && c["model"]["width"].get<int64_t>() <= 128) << c;
    ASSERT_TRUE(c["model"]["depth"].is_number_integer()) << c;
    EXPECT_TRUE(c["model"]["depth"].get<int64_t>() >= 1 && c["model"]["depth"].get<int64_t>() < 9) << c;
    const double dropout = c["dropout"].get<double>();
    EXPECT_NEAR(dropout * 10, std::round(dropout * 10), 1e-9) << c;
    EXPECT_TRUE(c["opt"] == "sgd" || c["opt"] == "adam" || c["opt"] == "rmsprop") << c;
    EXPECT_EQ(c["epochs"], 3);
    if (i >= 30 && c["opt"] == "adam") ++adam_late;
  }
  EXPECT_GE(adam_late, 8);  // of the last 10
  EXPECT_LT(run.best, 0.3);
}

TEST(BayesSearcher, FailuresAndNanDoNotBreakTheModelAndFailingRegionsAreAvoided) {
  auto bayes = make_searcher(model_options("bayes", 10, {{"n_initial_points", 5}}), square(), 30, {});
  int model_in_failing_region = 0;
  for (int64_t i = 0; i < 30; ++i) {
    auto config = bayes->suggest(i);
    ASSERT_TRUE(config);
    const double x = (*config)["x"].get<double>();
    if (i >= 5 && x > 0.6) ++model_in_failing_region;
    if (x > 0.6) {  // fails: alternate an error, a NaN, a missing metric and no result at all
      switch (i % 4) {
        case 0: bayes->on_complete({i, *config, Json{{"loss", 1.0}}, true}); break;
        case 1: bayes->on_complete({i, *config, Json{{"loss", NAN}}, false}); break;
        case 2: bayes->on_complete({i, *config, Json{{"other", 1.0}}, false}); break;
        default: bayes->on_complete({i, *config, Json(), false}); break;
      }
    } else {
      bayes->on_complete(finished(i, *config, bowl(*config)));
    }
  }
  // 40% of the square fails; the model sends few of its 25 points there.
  EXPECT_LE(model_in_failing_region, 5);
}

TEST(BayesSearcher, AllTrialsFailingKeepsSuggestingDistinctPoints) {
  auto bayes = make_searcher(model_options("bayes", 11, {{"n_initial_points", 2}}), square(), 10, {});
  std::set<Json> seen;
  for (int64_t i = 0; i < 10; ++i) {
    auto config = bayes->suggest(i);
    ASSERT_TRUE(config);
    seen.insert(*config);
    bayes->on_complete({i, *config, Json(), true});
  }
  EXPECT_EQ(seen.size(), 10u);
}

TEST(BayesSearcher, RestoredSearcherContinuesExactlyWithPendingTrials) {
  auto live = make_searcher(model_options("bayes", 12, {{"n_initial_points", 4}}), square(), 30, {});
  std::vector<Json> configs;
  std::vector<Observation> observations;
  // 14 trials with two in flight; trials 12 and 13 are still running.
  for (int64_t i = 0; i < 14; ++i) {
    configs.push_back(*live->suggest(i));
    if (i >= 1 && i - 1 < 12) {
      observations.push_back(finished(i - 1, configs[static_cast<size_t>(i - 1)], bowl(configs[static_cast<size_t>(i - 1)])));
      live->on_complete(observations.back());
    }
  }
  // The driver hands finished trials in store order and running ones flagged.
  std::vector<Observation> stored(observations.rbegin(), observations.rend());
  for (int64_t i : {12, 13}) stored.push_back({i, configs[static_cast<size_t>(i)], Json(), false, true});
  auto resumed = make_searcher(model_options("bayes", 12, {{"n_initial_points", 4}}), square(), 30, {});
  resumed->restore(14, stored);
  for (int64_t i = 14; i < 17; ++i) EXPECT_EQ(*resumed->suggest(i), *live->suggest(i)) << i;
}

TEST(BayesSearcher, StoppedTrialsRankBelowFullBudgetOnes) {
  // Trials stopped at a low budget with a good-looking value must not attract
  // the model: with rank_below they count as no better than the worst
  // full-budget trial.
  auto bayes = make_searcher(model_options("bayes", 13, {{"n_initial_points", 6}}), square(), 20, {});
  for (int64_t i = 0; i < 6; ++i) {
    Json c = *bayes->suggest(i);
    const bool stopped = c["x"].get<double>() > 0.5;
    Json result{{"loss", stopped ? -10.0 : bowl(c)}, {"training_iteration", stopped ? 1 : 10}};
    bayes->on_complete({i, c, result, false});
  }
  int right = 0;
  for (int64_t i = 6; i < 12; ++i) {
    Json c = *bayes->suggest(i);
    if (c["x"].get<double>() > 0.5) ++right;
    bayes->on_complete({i, c, Json{{"loss", bowl(c)}, {"training_iteration", 10}}, false});
  }
  EXPECT_LE(right, 2);
}

// Styblinski-Tang in 10-D on [-5, 5]^10: separable, two basins per
// coordinate, steep walls. The global GP spends its budget on the walls (the
// posterior variance is largest there); the trust region (on by default)
// keeps the search near the incumbent and finds the basins.
TEST(BayesSearcher, TrustRegionAutoIsOnFromFourDimensions) {
  // trust_region: auto (the default) suggests exactly what false does in 2-D
  // and what true does in 4-D.
  auto four = [] {
    SearchSpace space;
    for (int j = 0; j < 4; ++j) space.add("x" + std::to_string(j), uniform(0, 10));
    return space;
  }();
  auto bowl4 = [](const Json& c) {
    double sum = 0;
    for (int j = 0; j < 4; ++j) sum += std::pow(c["x" + std::to_string(j)].get<double>() - 3.0, 2);
    return sum;
  };
  for (const auto& [space, f, same_as] :
       {std::tuple<SearchSpace, std::function<double(const Json&)>, bool>{square(), bowl, false}, {four, bowl4, true}}) {
    auto automatic = make_searcher(model_options("bayes", 5), space, 30, {});
    auto named = make_searcher(model_options("bayes", 5, {{"trust_region", "auto"}}), space, 30, {});
    auto forced = make_searcher(model_options("bayes", 5, {{"trust_region", same_as}}), space, 30, {});
    auto other = make_searcher(model_options("bayes", 5, {{"trust_region", !same_as}}), space, 30, {});
    const auto runs = drive(*automatic, 30, 1, f).configs;
    EXPECT_EQ(runs, drive(*named, 30, 1, f).configs);
    EXPECT_EQ(runs, drive(*forced, 30, 1, f).configs);
    EXPECT_NE(runs, drive(*other, 30, 1, f).configs);
  }
}

TEST(BayesSearcher, TrustRegionStillReachesEveryIntegerAndEveryCategory) {
  // The region is a box in the unit cube: integers (linear and log) must
  // still snap to every value near the incumbent, and one-hot categories are
  // left free, so the exact optimum is reached and every category is tried.
  SearchSpace space;
  space.add("n", randint(0, 200)).add("k", lograndint(1, 1000)).add("c", choice({"a", "b", "c", "d", "e"}));
  auto f = [](const Json& c) {
    const double n = c["n"].get<double>(), k = c["k"].get<double>();
    return std::pow(n - 137, 2) / 100 + std::pow(std::log(k) - std::log(37), 2) + (c["c"] == "d" ? 0.0 : 1.0);
  };
  auto bayes = make_searcher(model_options("bayes", 21), space, 60, {});
  auto run = drive(*bayes, 60, 1, f);
  EXPECT_EQ(run.best, 0.0);  // n = 137, k = 37, c = d exactly
  std::set<std::string> categories;
  for (const auto& c : run.configs) categories.insert(c["c"].get<std::string>());
  EXPECT_EQ(categories.size(), 5u);
}

TEST(BayesSearcher, RejectsBadOptionsAndGridSearch) {
  auto error_of = [](const SearchOptions& o, const SearchSpace& space) -> std::string {
    try {
      make_searcher(o, space, 5, {});
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of(model_options("bayes", 1, {{"acquisiton", "ei"}}), square()),
            "unknown key 'acquisiton' in search (did you mean 'acquisition'?)");
  EXPECT_EQ(error_of(model_options("bayes", 1, {{"n_candidates", "many"}}), square()),
            "search.n_candidates must be an integer in [1, 1000000], got 'many'");
  EXPECT_EQ(error_of(model_options("bayes", 1, {{"trust_region", "yes"}}), square()),
            "search.trust_region must be true, false or auto, got 'yes'");
  EXPECT_EQ(error_of(model_options("bayes", 1, {{"trust_region", 1}}), square()),
            "search.trust_region must be true, false or auto, got 1");
  EXPECT_EQ(error_of(model_options("bayes", 1, {{"xi", -1}}), square()),
            "search.xi must be a number in [0.0, 1e+300], got -1");
  EXPECT_EQ(error_of(model_options("bayes", 1, {{"min_signal_variance", 0}}), square()),
            "search.min_signal_variance must be a number in [0.001, 20.0], got 0");
  SearchSpace grid;
  grid.add("opt", grid_search({"a", "b"}));
  EXPECT_THAT(error_of(model_options("bayes", 1), grid), HasSubstr("grid_search is not supported"));
  SearchOptions no_metric = model_options("bayes", 1);
  no_metric.metric.clear();
  EXPECT_THAT(error_of(no_metric, square()), HasSubstr("needs the experiment's metric"));
}

}  // namespace
}  // namespace tune
