// The "tpe" searcher: Optuna-compatible TPE.
#include <cmath>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_searcher_test_util.h"
#include "search/model_space.h"
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
  space.add("x", uniform(-5, 5)).add("y", uniform(-5, 5));
  return space;
}

double sphere(const Json& c) {
  const double x = c["x"].get<double>() - 1, y = c["y"].get<double>() + 2;
  return x * x + y * y;
}

TEST(TpeSearcher, BeatsRandomSearchOverSeeds) {
  for (bool multivariate : {false, true}) {
    int wins = 0;
    double tpe_sum = 0, random_sum = 0;
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      auto tpe = make_searcher(model_options("tpe", seed, {{"multivariate", multivariate}}), square(), 60, {});
      auto random = make_searcher(model_options("random", seed), square(), 60, {});
      const double a = drive(*tpe, 60, 1, sphere).best, b = drive(*random, 60, 1, sphere).best;
      wins += a < b;
      tpe_sum += a;
      random_sum += b;
    }
    EXPECT_GE(wins, 6) << multivariate;
    EXPECT_LT(tpe_sum, random_sum / 3) << multivariate;
  }
}

TEST(TpeSearcher, StartupTrialsAreRandomThenTheModelConcentrates) {
  auto tpe = make_searcher(model_options("tpe", 3, {{"n_startup_trials", 5}}), square(), 80, {});
  auto run = drive(*tpe, 80, 1, sphere);
  // The last 20 suggestions sit much nearer the optimum than uniform draws
  // (the mean sphere value over [-5, 5]^2 is 2 * 100/12 + 5 = 21.7).
  double late = 0;
  for (size_t i = 60; i < 80; ++i) late += run.losses[i];
  EXPECT_LT(late / 20, 21.7 / 3);
}

TEST(TpeSearcher, SameSeedSameSuggestions) {
  for (bool liar : {false, true}) {
    auto a = make_searcher(model_options("tpe", 5, {{"constant_liar", liar}}), square(), 30, {});
    auto b = make_searcher(model_options("tpe", 5, {{"constant_liar", liar}}), square(), 30, {});
    auto c = make_searcher(model_options("tpe", 6, {{"constant_liar", liar}}), square(), 30, {});
    auto ra = drive(*a, 30, 3, sphere), rb = drive(*b, 30, 3, sphere), rc = drive(*c, 30, 3, sphere);
    EXPECT_EQ(ra.configs, rb.configs);
    EXPECT_NE(ra.configs, rc.configs);
  }
}

TEST(TpeSearcher, ConstantLiarSpreadsConcurrentSuggestionsInADiscreteSpace) {
  SearchSpace space;
  space.add("a", randint(0, 10)).add("b", choice({"p", "q", "r"}));
  auto count_distinct = [&](bool liar) {
    auto tpe = make_searcher(model_options("tpe", 7, {{"constant_liar", liar}, {"n_startup_trials", 5}}), space, 40, {});
    for (int64_t i = 0; i < 10; ++i) {
      Json c = *tpe->suggest(i);
      tpe->on_complete(finished(i, c, std::fabs(c["a"].get<double>() - 4) + (c["b"] == "q" ? 0 : 3)));
    }
    std::set<Json> batch;
    for (int64_t i = 10; i < 18; ++i) batch.insert(*tpe->suggest(i));
    return batch.size();
  };
  EXPECT_GE(count_distinct(true), count_distinct(false));
  EXPECT_GE(count_distinct(true), 4u);
}

TEST(TpeSearcher, MixedSpaceValuesAreValid) {
  SearchSpace space;
  space.add("lr", loguniform(1e-5, 1e-1))
      .add("net.units", qlograndint(8, 512, 8))
      .add("net.layers", randint(1, 6))
      .add("p", quniform(0, 1, 0.25))
      .add("act", choice({"relu", "tanh"}))
      .constant("fixed", "yes");
  for (bool multivariate : {false, true}) {
    auto tpe = make_searcher(model_options("tpe", 8, {{"multivariate", multivariate}, {"n_startup_trials", 4}}), space,
                             30, {});
    auto run = drive(*tpe, 30, 2, [](const Json& c) {
      return std::pow(std::log10(c["lr"].get<double>()) + 3, 2) + (c["act"] == "tanh" ? 1.0 : 0.0) +
             c["net"]["layers"].get<double>() * 0.1;
    });
    for (const Json& c : run.configs) {
      EXPECT_TRUE(c["lr"].get<double>() >= 1e-5 && c["lr"].get<double>() < 1e-1) << c;
      ASSERT_TRUE(c["net"]["units"].is_number_integer()) << c;
      const int64_t units = c["net"]["units"].get<int64_t>();
      EXPECT_TRUE(units >= 8 && units <= 512 && units % 8 == 0) << c;
      const int64_t layers = c["net"]["layers"].get<int64_t>();
      EXPECT_TRUE(layers >= 1 && layers <= 5) << c;
      const double p = c["p"].get<double>();
      EXPECT_DOUBLE_EQ(p * 4, std::round(p * 4)) << c;
      EXPECT_TRUE(c["act"] == "relu" || c["act"] == "tanh") << c;
      EXPECT_EQ(c["fixed"], "yes");
    }
  }
}

TEST(TpeSearcher, FailuresAndNanDoNotBreakIt) {
  auto tpe = make_searcher(model_options("tpe", 9, {{"n_startup_trials", 3}}), square(), 30, {});
  for (int64_t i = 0; i < 30; ++i) {
    auto c = tpe->suggest(i);
    ASSERT_TRUE(c);
    if (i % 3 == 0) tpe->on_complete({i, *c, Json(), true});
    else if (i % 3 == 1) tpe->on_complete({i, *c, Json{{"loss", NAN}}, false});
    else tpe->on_complete(finished(i, *c, sphere(*c)));
  }
}

TEST(TpeSearcher, RestoredSearcherContinuesExactly) {
  auto options = model_options("tpe", 10, {{"constant_liar", true}, {"n_startup_trials", 4}});
  auto live = make_searcher(options, square(), 40, {});
  std::vector<Json> configs;
  std::vector<Observation> done;
  for (int64_t i = 0; i < 12; ++i) {
    configs.push_back(*live->suggest(i));
    if (i >= 2) {
      done.push_back(finished(i - 2, configs[static_cast<size_t>(i - 2)], sphere(configs[static_cast<size_t>(i - 2)])));
      live->on_complete(done.back());
    }
  }
  std::vector<Observation> stored = done;
  for (int64_t i : {10, 11}) stored.push_back({i, configs[static_cast<size_t>(i)], Json(), false, true});
  auto resumed = make_searcher(options, square(), 40, {});
  resumed->restore(12, stored);
  for (int64_t i = 12; i < 15; ++i) EXPECT_EQ(*resumed->suggest(i), *live->suggest(i)) << i;
}

// Reference values: Optuna 3.1's _ParzenEstimator(...).log_pdf on the same
// observations (python3-optuna 3.1.0, default TPESampler parameters).
TEST(TpeParzenEstimator, MatchesOptuna31Univariate) {
  SearchSpace space;
  space.add("x", uniform(-5, 10));
  std::vector<Json> observed;
  for (double x : {1.0, -4.0, 7.5, 2.2, 9.9, 0.1, 3.3}) observed.push_back({{"x", x}});
  std::vector<Json> at;
  for (double x : {-5.0, -2.0, 0.0, 1.5, 4.0, 9.0}) at.push_back({{"x", x}});
  const std::vector<double> optuna = {-1.4665681978307465, -1.23817798, -1.04110743, -0.95467558, -1.1317688, -1.2015138};
  auto ours = internal::tpe_parzen_log_pdf(space, observed, at, false);
  for (size_t k = 0; k < at.size(); ++k) EXPECT_NEAR(ours[k], optuna[k], 1e-7) << k;
  // 30 observations: past 25 the weights ramp up with recency.
  observed.clear();
  for (int i = 0; i < 30; ++i) observed.push_back({{"x", -5 + 15 * std::fmod(i * 0.618034, 1.0)}});
  const std::vector<double> optuna30 = {-3.06227401, -2.62117107, -2.52792151, -2.50897868, -2.60767173, -2.57124443};
  ours = internal::tpe_parzen_log_pdf(space, observed, at, false);
  for (size_t k = 0; k < at.size(); ++k) EXPECT_NEAR(ours[k], optuna30[k], 1e-7) << k;
}

TEST(TpeParzenEstimator, MatchesOptuna31MultivariateMixed) {
  // FloatDistribution(1e-3, 1, log=True), IntDistribution(0, 9), CategoricalDistribution([p, q, r])
  SearchSpace space;
  space.add("a", loguniform(1e-3, 1)).add("b", randint(0, 10)).add("c", choice({"p", "q", "r"}));
  std::vector<Json> observed = {{{"a", 0.01}, {"b", 3}, {"c", "p"}},
                                {{"a", 0.5}, {"b", 7}, {"c", "r"}},
                                {{"a", 0.002}, {"b", 0}, {"c", "r"}},
                                {{"a", 0.1}, {"b", 9}, {"c", "q"}}};
  std::vector<Json> at = {{{"a", 0.001}, {"b", 0}, {"c", "p"}},
                          {{"a", 0.03}, {"b", 4}, {"c", "q"}},
                          {{"a", 0.9}, {"b", 9}, {"c", "r"}}};
  const std::vector<double> optuna = {-4.551325557631287, -4.737935816742347, -4.165075273542596};
  auto ours = internal::tpe_parzen_log_pdf(space, observed, at, true);
  for (size_t k = 0; k < at.size(); ++k) EXPECT_NEAR(ours[k], optuna[k], 1e-9) << k;
}

TEST(TpeParzenEstimator, ExactPdfIsANormalizedDensity) {
  // With exact_pdf the continuous density integrates to 1 over the bounds.
  SearchSpace space;
  space.add("x", uniform(-5, 10));
  std::vector<Json> observed;
  for (double x : {1.0, -4.0, 7.5, 2.2}) observed.push_back({{"x", x}});
  std::vector<Json> grid;
  const int steps = 3000;
  for (int i = 0; i < steps; ++i) grid.push_back({{"x", -5 + 15 * (i + 0.5) / steps}});
  auto logs = internal::tpe_parzen_log_pdf(space, observed, grid, false, true);
  double integral = 0;
  for (double l : logs) integral += std::exp(l) * 15.0 / steps;
  EXPECT_NEAR(integral, 1.0, 1e-4);
}

TEST(TpeSearcher, RejectsBadOptions) {
  auto error_of = [](const SearchOptions& o) -> std::string {
    try {
      make_searcher(o, square(), 5, {});
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of(model_options("tpe", 1, {{"n_startup_trial", 3}})),
            "unknown key 'n_startup_trial' in search (did you mean 'n_startup_trials'?)");
  EXPECT_EQ(error_of(model_options("tpe", 1, {{"n_ei_candidates", 0}})),
            "search.n_ei_candidates must be an integer in [1, 1000000], got 0");
  EXPECT_EQ(error_of(model_options("tpe", 1, {{"constant_liar", 1}})), "search.constant_liar must be true or false, got 1");
}

}  // namespace
}  // namespace tune
