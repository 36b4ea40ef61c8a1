#include "search/searcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "base/error.h"

namespace tune {
namespace {

using ::testing::HasSubstr;

SearchOptions seeded(uint64_t seed, const std::string& algorithm = "random") {
  SearchOptions options;
  options.algorithm = algorithm;
  options.seed = seed;
  return options;
}

SearchSpace mixed_space() {
  SearchSpace space;
  space.add("opt", grid_search({"sgd", "adam"})).add("layers", grid_search({1, 2, 3})).add("lr", loguniform(1e-5, 1e-1));
  return space;
}

std::vector<Json> drain(Searcher& searcher, int64_t from = 0) {
  std::vector<Json> out;
  for (int64_t i = from;; ++i) {
    auto config = searcher.suggest(i);
    if (!config) break;
    out.push_back(*config);
  }
  return out;
}

TEST(SearcherRandom, RepeatsEachGridCombinationNumSamplesTimes) {
  auto searcher = make_searcher(seeded(1), mixed_space(), 2, {});
  EXPECT_EQ(searcher->total(), 12);
  auto configs = drain(*searcher);
  ASSERT_EQ(configs.size(), 12u);
  std::map<std::pair<std::string, int>, int> counts;
  for (const auto& c : configs) counts[{c["opt"].get<std::string>(), c["layers"].get<int>()}]++;
  EXPECT_EQ(counts.size(), 6u);
  for (const auto& [combination, count] : counts) EXPECT_EQ(count, 2);
}

TEST(SearcherRandom, VariesTheGridFastestAcrossConsecutiveTrials) {
  auto configs = drain(*make_searcher(seeded(1), mixed_space(), 2, {}));
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(configs[i]["opt"], configs[i + 6]["opt"]);
    EXPECT_EQ(configs[i]["layers"], configs[i + 6]["layers"]);
    EXPECT_NE(configs[i]["lr"], configs[i + 6]["lr"]);  // a fresh sample per repeat
  }
  EXPECT_EQ(configs[0]["opt"], "sgd");
  EXPECT_EQ(configs[1]["layers"], 2);
  EXPECT_EQ(configs[3]["opt"], "adam");
}

TEST(SearcherRandom, ReturnsNulloptOnceExhausted) {
  auto searcher = make_searcher(seeded(5), mixed_space(), 1, {});
  EXPECT_TRUE(searcher->suggest(5).has_value());
  EXPECT_FALSE(searcher->suggest(6).has_value());
  EXPECT_FALSE(searcher->suggest(100).has_value());
  EXPECT_FALSE(searcher->suggest(-1).has_value());
}

TEST(SearcherRandom, ProposesPointsToEvaluateFirstAndCountsThemTowardNumSamples) {
  SearchSpace space;
  space.add("x", uniform(-5, 10)).add("y", uniform(0, 15));
  std::vector<Json> points = {Json{{"x", 3.14}, {"y", 2.27}}, Json{{"x", 1.0}}};
  auto searcher = make_searcher(seeded(3), space, 3, points);
  EXPECT_EQ(searcher->total(), 3);
  auto configs = drain(*searcher);
  ASSERT_EQ(configs.size(), 3u);
  EXPECT_EQ(configs[0], points[0]);
  EXPECT_EQ(configs[1]["x"], 1.0);
  EXPECT_GE(configs[1]["y"].get<double>(), 0);  // the missing key is sampled
  EXPECT_LT(configs[1]["y"].get<double>(), 15);
}

TEST(SearcherRandom, YieldsEveryPointEvenWhenThereAreMoreThanNumSamples) {
  SearchSpace space;
  space.add("x", uniform(0, 1));
  std::vector<Json> points;
  for (int i = 0; i < 5; ++i) points.push_back(Json{{"x", i}});
  auto configs = drain(*make_searcher(seeded(3), space, 2, points));
  ASSERT_EQ(configs.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(configs[i]["x"], i);
}

TEST(SearcherRandom, SameSeedGivesSameConfigsAndDifferentSeedsDiffer) {
  auto a = drain(*make_searcher(seeded(42), mixed_space(), 3, {}));
  auto b = drain(*make_searcher(seeded(42), mixed_space(), 3, {}));
  auto c = drain(*make_searcher(seeded(43), mixed_space(), 3, {}));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(SearcherRandom, DrawsAFreshSeedWhenNoneIsGiven) {
  SearchSpace space;
  space.add("x", uniform(0, 1));
  auto a = drain(*make_searcher(SearchOptions{}, space, 4, {}));
  auto b = drain(*make_searcher(SearchOptions{}, space, 4, {}));
  EXPECT_NE(a, b);
}

TEST(SearcherRandom, RestoredRunContinuesTheUninterruptedStream) {
  auto full = drain(*make_searcher(seeded(9), mixed_space(), 4, {}));
  auto resumed = make_searcher(seeded(9), mixed_space(), 4, {});
  resumed->restore(7, {});
  auto rest = drain(*resumed, 7);
  ASSERT_EQ(rest.size(), full.size() - 7);
  for (size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i], full[i + 7]) << i;
}

TEST(SearcherRandom, ConfigDependsOnlyOnSeedAndIndexNotCallOrder) {
  auto in_order = make_searcher(seeded(9), mixed_space(), 4, {});
  auto backwards = make_searcher(seeded(9), mixed_space(), 4, {});
  std::vector<Json> forward, reverse(24);
  for (int i = 0; i < 24; ++i) forward.push_back(*in_order->suggest(i));
  for (int i = 23; i >= 0; --i) reverse[i] = *backwards->suggest(i);
  EXPECT_EQ(forward, reverse);
}

TEST(SearcherGrid, WithOnlyConstantsYieldsNumSamplesIdenticalConfigs) {
  SearchSpace space;
  space.constant("epochs", 3).constant("model.act", "relu");
  auto configs = drain(*make_searcher(seeded(1, "grid"), space, 4, {}));
  ASSERT_EQ(configs.size(), 4u);
  for (const auto& c : configs) EXPECT_EQ(c, Json::parse(R"({"epochs": 3, "model": {"act": "relu"}})"));
}

TEST(SearcherGrid, ExpandsTheFullGridOnce) {
  SearchSpace space;
  space.add("a", grid_search({1, 2, 3})).add("b", grid_search({true, false}));
  auto configs = drain(*make_searcher(seeded(1, "grid"), space, 1, {}));
  EXPECT_EQ(configs.size(), 6u);
  EXPECT_EQ(std::set<Json>(configs.begin(), configs.end()).size(), 6u);
}

TEST(SearcherFactory, RejectsUnknownAlgorithmsAndBadCounts) {
  auto error_of = [](const SearchOptions& options, int64_t num_samples) -> std::string {
    try {
      make_searcher(options, SearchSpace(), num_samples, {});
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of(seeded(1, "x"), 1), "unknown search algorithm 'x' (expected random, grid, bayes, tpe or nsga2)");
  EXPECT_EQ(error_of(seeded(1, "bayes"), 1),
            "search algorithm 'bayes' needs the experiment's metric and mode (min or max)");
  EXPECT_EQ(error_of(seeded(1, "randm"), 1), "unknown search algorithm 'randm' (did you mean 'random'?)");
  EXPECT_THAT(error_of(seeded(1), 0), HasSubstr("num_samples must be a positive integer"));
  EXPECT_EQ(searcher_names(), (std::vector<std::string>{"random", "grid", "bayes", "tpe", "nsga2"}));
  SearchOptions with_params = seeded(1);
  with_params.params = {{"n_initial_points", 3}};
  EXPECT_EQ(error_of(with_params, 1), "unknown key 'n_initial_points' in search (algorithm 'random' takes only algorithm and seed)");
}

}  // namespace
}  // namespace tune
