// The "bayes" searcher's optimization quality where it takes many runs to
// show: a trust region against the global GP in 10-D, a plateau with narrow
// holes in 4-D, De Jong's foxholes in 2-D (10-20 seeds of 100-120 trials
// each). Labelled slow;quality (a binary of their own): they check outcomes,
// not memory, and under the sanitizers they took minutes.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "model_searcher_test_util.h"
#include "search/searcher.h"
#include "trainer/test_functions.h"

namespace tune {
namespace {

using testing_util::drive;
using testing_util::model_options;

double styblinski_tang(const Json& c) {
  double sum = 0;
  for (const auto& [key, value] : c.items()) {
    const double x = value.get<double>();
    sum += 0.5 * (x * x * x * x - 16 * x * x + 5 * x);
  }
  return sum + 39.16616570377142 * static_cast<double>(c.size());  // 0 at the minimum
}

TEST(BayesSearcher, TrustRegionFindsTheBasinsOfAHighDimensionalFunctionThatDefeatsTheGlobalGp) {
  SearchSpace space;
  for (int j = 0; j < 10; ++j) space.add("x" + std::to_string(j), uniform(-5, 5));
  std::vector<double> local, global, random;
  for (uint64_t seed : {11, 12, 13, 14, 15}) {
    auto with = make_searcher(model_options("bayes", seed), space, 120, {});
    auto without = make_searcher(model_options("bayes", seed, {{"trust_region", false}}), space, 120, {});
    auto uniform_random = make_searcher(model_options("random", seed), space, 120, {});
    local.push_back(drive(*with, 120, 1, styblinski_tang).best);
    global.push_back(drive(*without, 120, 1, styblinski_tang).best);
    random.push_back(drive(*uniform_random, 120, 1, styblinski_tang).best);
  }
  // Regret: ~14 per coordinate in the wrong basin, up to 160 on a wall; 120
  // random points reach ~160 in all, the global GP no better (seeds 11-15:
  // medians 90 with the region, 183 without, 159 random).
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  EXPECT_LT(median(local), 0.7 * median(global)) << testing::PrintToString(local) << testing::PrintToString(global);
  EXPECT_LT(median(local), 0.7 * median(random)) << testing::PrintToString(local) << testing::PrintToString(random);
}

// Shekel (m = 10) on [0, 10]^4: ten narrow holes (0.3-0.8 wide) on a nearly
// flat plateau; the global one (-10.54) at (4, 4, 4, 4), the next ones -5.1,
// -3.7 and -2.7.
double shekel10(const Json& c) {
  std::array<double, 4> x{};
  for (size_t j = 0; j < 4; ++j) x[j] = c["x" + std::to_string(j)].get<double>();
  return test_functions::shekel10(x);
}

TEST(BayesSearcher, LeavesAnExhaustedHoleOnAPlateauForTheDeepestOne) {
  SearchSpace space;
  for (int j = 0; j < 4; ++j) space.add("x" + std::to_string(j), uniform(0, 10));
  // A fit free to shrink the signal variance (min_signal_variance 0.05, the
  // floor before) explains the points in the first hole it finds as one dip in
  // a flat function and stays there; with the floor at the data's variance
  // the model keeps enough variance elsewhere to go on looking.
  int floor_found = 0, free_found = 0;
  for (uint64_t seed = 1000; seed < 1020; ++seed) {
    auto with_floor = make_searcher(model_options("bayes", seed), space, 100, {});
    auto free_fit = make_searcher(model_options("bayes", seed, {{"min_signal_variance", 0.05}}), space, 100, {});
    floor_found += drive(*with_floor, 100, 1, shekel10).best < -9.5;
    free_found += drive(*free_fit, 100, 1, shekel10).best < -9.5;
  }
  // Seeds 1000-1019 (as bench/run bayes): 13 of 20 find it with the floor, 7 without.
  EXPECT_GE(floor_found, 11);
  EXPECT_GE(floor_found, free_found + 4);
}

double foxholes(const Json& c) { return test_functions::foxholes(c["x"].get<double>(), c["y"].get<double>()); }

TEST(BayesSearcher, SearchesTheWholeSquareForTheOtherFoxholes) {
  // De Jong's foxholes: 25 narrow holes on a grid on a plateau. A trust region
  // shrinks onto the first hole found and refines it; in two dimensions the
  // default (auto) maximizes the acquisition over the whole square instead,
  // which goes on to other holes, deeper ones among them.
  SearchSpace space;
  space.add("x", uniform(-65.536, 65.536)).add("y", uniform(-65.536, 65.536));
  int global_found = 0, region_found = 0;
  for (uint64_t seed = 1000; seed < 1040; ++seed) {
    auto automatic = make_searcher(model_options("bayes", seed), space, 100, {});
    auto with_region = make_searcher(model_options("bayes", seed, {{"trust_region", true}}), space, 100, {});
    // Hole j bottoms out near j: a regret below 10 is one of the 10 deepest.
    global_found += drive(*automatic, 100, 1, foxholes).best - test_functions::kFoxholesMinimum < 10;
    region_found += drive(*with_region, 100, 1, foxholes).best - test_functions::kFoxholesMinimum < 10;
  }
  // Seeds 1000-1039: 26 of 40 over the square, 19 of 40 in the region. Ten
  // seeds are too few for the claim: by tens, 7-3, 7-4, 7-7 and 5-5; with the
  // searchers' generators seeded otherwise (one word instead of a seed_seq,
  // tried 2026-11-30) 6-4, 8-4, 6-5, 8-5, 28 of 40 against 18.
  EXPECT_GE(global_found, 22);
  EXPECT_GE(global_found, region_found + 4);
}

}  // namespace
}  // namespace tune
