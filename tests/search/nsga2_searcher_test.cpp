// The "nsga2" searcher: NSGA-II, multi- and single-objective.
#include <algorithm>
#include <cmath>
#include <deque>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_searcher_test_util.h"
#include "multi_objective_test_util.h"
#include "search/pareto.h"
#include "search/searcher.h"
#include "base/error.h"

namespace tune {
namespace {

using namespace testing_util;  // NOLINT: the helpers of this folder


TEST(Nsga2Searcher, BeatsRandomSearchOnZdt1ByHypervolume) {
  const std::vector<double> reference = {1.1, 1.1};
  // The true front's hypervolume: the 0.1 x 1.1 strip right of f1 = 1, plus
  // the integral over [0, 1] of 1.1 - (1 - sqrt(f1)).
  const double best_possible = 0.1 * 1.1 + 0.1 + 2.0 / 3.0;
  std::vector<double> nsga2_hv, random_hv;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    auto nsga2 = make_searcher(two_objectives("nsga2", seed, {{"population_size", 40}}), unit_cube(6), 400, {});
    auto random = make_searcher(two_objectives("random", seed), unit_cube(6), 400, {});
    nsga2_hv.push_back(hypervolume(drive_zdt1(*nsga2, 400, 1), reference));
    random_hv.push_back(hypervolume(drive_zdt1(*random, 400, 1), reference));
    EXPECT_LT(nsga2_hv.back(), best_possible);
  }
  // Measured: nsga2 median 0.360 (seeds in [0.31, 0.43]), random 0.016
  // (seeds in [0, 0.19]; four found no point inside the reference box).
  EXPECT_GT(median(nsga2_hv), median(random_hv) + 0.2);
  EXPECT_GT(*std::min_element(nsga2_hv.begin(), nsga2_hv.end()),
            *std::max_element(random_hv.begin(), random_hv.end()));
}

TEST(Nsga2Searcher, SameSeedSameSuggestions) {
  auto options = two_objectives("nsga2", 5, {{"population_size", 6}});
  auto a = make_searcher(options, unit_cube(3), 40, {}), b = make_searcher(options, unit_cube(3), 40, {});
  auto c = make_searcher(two_objectives("nsga2", 6, {{"population_size", 6}}), unit_cube(3), 40, {});
  std::vector<Json> ca, cb, cc;
  drive_zdt1(*a, 40, 3, &ca);
  drive_zdt1(*b, 40, 3, &cb);
  drive_zdt1(*c, 40, 3, &cc);
  EXPECT_EQ(ca, cb);
  EXPECT_NE(ca, cc);
}

TEST(Nsga2Searcher, RestoredSearcherContinuesExactly) {
  // Population 5 with three trials pending at a time: generations are bred
  // from whatever of the previous one has finished. Some trials fail or miss
  // an objective.
  auto options = two_objectives("nsga2", 10, {{"population_size", 5}});
  const std::vector<Json> points = {{{"x0", 0.5}}};
  auto live = make_searcher(options, unit_cube(4), 60, points);
  std::vector<Json> configs;
  std::vector<Observation> done;
  for (int64_t i = 0; i < 23; ++i) {
    configs.push_back(*live->suggest(i));
    if (i < 3) continue;
    const int64_t f = i - 3;
    const Json& config = configs[static_cast<size_t>(f)];
    if (f % 7 == 3) done.push_back({f, config, Json(), true});
    else if (f % 7 == 5) done.push_back({f, config, Json{{"f1", 0.5}}, false});
    else done.push_back({f, config, result_of(zdt1(config)), false});
    live->on_complete(done.back());
  }
  std::vector<Observation> stored = done;
  for (int64_t i : {20, 21, 22}) stored.push_back({i, configs[static_cast<size_t>(i)], Json(), false, true});
  auto resumed = make_searcher(options, unit_cube(4), 60, points);
  resumed->restore(23, stored);
  for (int64_t i = 23; i < 30; ++i) EXPECT_EQ(*resumed->suggest(i), *live->suggest(i)) << i;
}

TEST(Nsga2Searcher, ChildrenComeOnlyFromFeasibleParents) {
  // No crossover, no mutation: a child is a copy of a tournament winner.
  // Trials 0 and 1 are infeasible (failed; missing f2), so generation 1 has
  // only trials 2 and 3 to copy.
  auto nsga2 = make_searcher(
      two_objectives("nsga2", 3, {{"population_size", 4}, {"crossover_prob", 0}, {"mutation_prob", 0}}),
      unit_cube(2), 8, {});
  std::vector<Json> gen0;
  for (int64_t i = 0; i < 4; ++i) gen0.push_back(*nsga2->suggest(i));
  nsga2->on_complete({0, gen0[0], Json(), true});
  nsga2->on_complete({1, gen0[1], Json{{"f1", 0.1}}, false});
  nsga2->on_complete({2, gen0[2], result_of({0.2, 0.8}), false});
  nsga2->on_complete({3, gen0[3], result_of({0.8, 0.2}), false});
  for (int64_t i = 4; i < 8; ++i) {
    const Json child = *nsga2->suggest(i);
    EXPECT_TRUE(child == gen0[2] || child == gen0[3]) << child;
  }
}

TEST(Nsga2Searcher, FewerThanTwoFeasibleParentsMeansRandomProposals) {
  auto nsga2 = make_searcher(
      two_objectives("nsga2", 4, {{"population_size", 3}, {"crossover_prob", 0}, {"mutation_prob", 0}}),
      unit_cube(2), 6, {});
  std::vector<Json> gen0;
  for (int64_t i = 0; i < 3; ++i) gen0.push_back(*nsga2->suggest(i));
  nsga2->on_complete({0, gen0[0], Json(), true});
  nsga2->on_complete({1, gen0[1], Json{{"f1", NAN}, {"f2", 1.0}}, false});
  nsga2->on_complete({2, gen0[2], result_of({0.5, 0.5}), false});
  for (int64_t i = 3; i < 6; ++i) EXPECT_EQ(std::count(gen0.begin(), gen0.end(), *nsga2->suggest(i)), 0) << i;
}

TEST(Nsga2Searcher, MixedSpaceValuesAreValid) {
  SearchSpace space;
  space.add("lr", loguniform(1e-5, 1e-1))
      .add("net.units", qlograndint(8, 512, 8))
      .add("net.layers", randint(1, 6))
      .add("p", quniform(0, 1, 0.25))
      .add("noise", qrandn(0, 1, 0.5))
      .add("act", choice({"relu", "tanh", "gelu"}))
      .add("one", choice({"only"}))
      .constant("fixed", "yes");
  SearchOptions options = model_options("nsga2", 8, {{"population_size", 6}, {"mutation_prob", 0.3}});
  options.metric = "f1";
  options.objectives = {{"f1", "min"}, {"f2", "max"}};
  auto nsga2 = make_searcher(options, space, 60, {{{"act", "tanh"}}});
  std::deque<int64_t> pending;
  std::vector<Json> configs;
  for (int64_t i = 0; i < 60; ++i) {
    configs.push_back(*nsga2->suggest(i));
    pending.push_back(i);
    if (pending.size() < 2) continue;
    const Json& c = configs[static_cast<size_t>(pending.front())];
    const double f1 = std::pow(std::log10(c["lr"].get<double>()) + 3, 2) + (c["act"] == "tanh" ? 1.0 : 0.0);
    const double f2 = c["net"]["units"].get<double>() * c["p"].get<double>();
    nsga2->on_complete({pending.front(), c, Json{{"f1", f1}, {"f2", f2}}, false});
    pending.pop_front();
  }
  EXPECT_EQ(configs[0]["act"], "tanh");
  std::set<Json> distinct(configs.begin(), configs.end());
  EXPECT_GT(distinct.size(), 40u);
  for (const Json& c : configs) {
    EXPECT_TRUE(c["lr"].get<double>() >= 1e-5 && c["lr"].get<double>() < 1e-1) << c;
    ASSERT_TRUE(c["net"]["units"].is_number_integer()) << c;
    const int64_t units = c["net"]["units"].get<int64_t>();
    EXPECT_TRUE(units >= 8 && units <= 512 && units % 8 == 0) << c;
    ASSERT_TRUE(c["net"]["layers"].is_number_integer()) << c;
    const int64_t layers = c["net"]["layers"].get<int64_t>();
    EXPECT_TRUE(layers >= 1 && layers <= 5) << c;
    const double p = c["p"].get<double>();
    EXPECT_TRUE(p >= 0 && p <= 1 && p * 4 == std::round(p * 4)) << c;
    const double noise = c["noise"].get<double>();
    EXPECT_EQ(noise * 2, std::round(noise * 2)) << c;
    EXPECT_TRUE(c["act"] == "relu" || c["act"] == "tanh" || c["act"] == "gelu") << c;
    EXPECT_EQ(c["one"], "only");
    EXPECT_EQ(c["fixed"], "yes");
  }
}

TEST(Nsga2Searcher, AsASingleObjectiveGeneticAlgorithmItBeatsRandomSearch) {
  SearchSpace space;
  space.add("x", uniform(-5, 5)).add("y", uniform(-5, 5)).add("z", uniform(-5, 5));
  auto sphere = [](const Json& c) {
    const double x = c["x"].get<double>() - 1, y = c["y"].get<double>() + 2, z = c["z"].get<double>();
    return x * x + y * y + z * z;
  };
  std::vector<double> nsga2_best, random_best;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    auto nsga2 = make_searcher(model_options("nsga2", seed, {{"population_size", 20}}), space, 300, {});
    auto random = make_searcher(model_options("random", seed), space, 300, {});
    nsga2_best.push_back(testing_util::drive(*nsga2, 300, 1, sphere).best);
    random_best.push_back(testing_util::drive(*random, 300, 1, sphere).best);
  }
  // 24 seeds: 8 left too much to chance (a change of the random searcher's
  // stream alone moved the wins from 7 of 8 to 5 of 8). Measured: medians 0.093
  // (nsga2) and 0.731 (random); nsga2 better on 21 of 24 seeds.
  EXPECT_LT(median(nsga2_best), median(random_best) / 2);
  int wins = 0;
  for (size_t k = 0; k < nsga2_best.size(); ++k) wins += nsga2_best[k] < random_best[k];
  EXPECT_GE(wins, 17);
}

TEST(Nsga2Searcher, RejectsBadOptions) {
  EXPECT_EQ(error_of(two_objectives("nsga2", 1, {{"populaton_size", 3}})),
            "unknown key 'populaton_size' in search (did you mean 'population_size'?)");
  EXPECT_EQ(error_of(two_objectives("nsga2", 1, {{"population_size", 1}})),
            "search.population_size must be an integer in [2, 1000000], got 1");
  EXPECT_EQ(error_of(two_objectives("nsga2", 1, {{"mutation_prob", 1.5}})),
            "search.mutation_prob must be a number in [0.0, 1.0], got 1.5");
  EXPECT_EQ(error_of(two_objectives("nsga2", 1, {{"crossover_prob", -0.1}})),
            "search.crossover_prob must be a number in [0.0, 1.0], got -0.1");
  EXPECT_EQ(error_of(two_objectives("nsga2", 1, {{"swapping_prob", "half"}})),
            "search.swapping_prob must be a number in [0.0, 1.0], got 'half'");
  EXPECT_EQ(error_of(two_objectives("nsga2", 1, {{"mutation_prob", nullptr}})), "no error");
  SearchOptions no_metric = two_objectives("nsga2", 1);
  no_metric.metric.clear();
  no_metric.objectives.clear();
  EXPECT_EQ(error_of(no_metric), "search algorithm 'nsga2' needs the experiment's metric and mode (min or max)");
}

TEST(Nsga2Searcher, BayesRefusesSeveralObjectivesAndTpeAndRandomAcceptThem) {
  EXPECT_EQ(error_of(two_objectives("bayes", 1)),
            "search algorithm 'bayes' optimizes one metric; with several metrics use nsga2, tpe, random or grid");
  EXPECT_EQ(error_of(two_objectives("tpe", 1)), "no error");
  EXPECT_EQ(error_of(two_objectives("random", 1)), "no error");
  EXPECT_EQ(error_of(two_objectives("grid", 1)), "no error");
}

TEST(Nsga2Searcher, ObjectivesMustBeTwoOrMoreDistinctMetricsLedByTheExperiments) {
  auto with = [](std::vector<Objective> objectives, const std::string& metric = "f1") {
    SearchOptions o = two_objectives("nsga2", 1);
    o.metric = metric;
    o.objectives = std::move(objectives);
    return error_of(o);
  };
  EXPECT_EQ(with({{"f1", "min"}}), "a multi-objective search needs two or more objectives, got 1");
  EXPECT_EQ(with({{"f1", "min"}, {"f1", "max"}}), "metric 'f1' is listed twice");
  EXPECT_EQ(with({{"f1", "min"}, {"", "max"}}), "objective 2 has no metric name");
  EXPECT_EQ(with({{"f1", "min"}, {"f2", "up"}}), "objective 'f2' needs mode min or max, got 'up'");
  EXPECT_EQ(with({{"f2", "min"}, {"f1", "min"}}),
            "the first objective (f2, min) must be the experiment's metric and mode (f1, min)");
  EXPECT_EQ(with({{"f1", "min"}, {"f2", "max"}, {"f3", "min"}}), "no error");
}

}  // namespace
}  // namespace tune
