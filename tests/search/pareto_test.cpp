// Pareto dominance, non-dominated sorting, crowding distance, hypervolume.
#include "search/pareto.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace tune {
namespace {

using Points = std::vector<std::vector<double>>;
const double kInf = std::numeric_limits<double>::infinity();

TEST(Pareto, DominatesNeedsNoWorseEverywhereAndBetterSomewhere) {
  EXPECT_TRUE(dominates({1, 2}, {1, 3}));
  EXPECT_TRUE(dominates({0, 0, 0}, {1, 1, 1}));
  EXPECT_FALSE(dominates({1, 2}, {1, 2}));  // equal
  EXPECT_FALSE(dominates({1, 3}, {2, 2}));  // a trade-off
  EXPECT_FALSE(dominates({1, 3}, {1, 2}));
}

TEST(Pareto, FrontsRankPointsAndEqualPointsShareAFront) {
  //   0: (1, 4)  1: (2, 2)  2: (4, 1)  front 0
  //   3: (3, 3)  dominated by 1;  4: (2, 2) equals 1
  //   5: (4, 4)  dominated by 3;  6: (5, 5) dominated by 5
  const Points points = {{1, 4}, {2, 2}, {4, 1}, {3, 3}, {2, 2}, {4, 4}, {5, 5}};
  const auto fronts = non_dominated_fronts(points);
  ASSERT_EQ(fronts.size(), 4u);
  EXPECT_EQ(fronts[0], (std::vector<size_t>{0, 1, 2, 4}));
  EXPECT_EQ(fronts[1], (std::vector<size_t>{3}));
  EXPECT_EQ(fronts[2], (std::vector<size_t>{5}));
  EXPECT_EQ(fronts[3], (std::vector<size_t>{6}));
  EXPECT_TRUE(non_dominated_fronts({}).empty());
}

TEST(Pareto, OneObjectiveFrontsAreTheDistinctValuesInOrder) {
  const auto fronts = non_dominated_fronts({{3}, {1}, {2}, {1}});
  ASSERT_EQ(fronts.size(), 3u);
  EXPECT_EQ(fronts[0], (std::vector<size_t>{1, 3}));
  EXPECT_EQ(fronts[1], (std::vector<size_t>{2}));
  EXPECT_EQ(fronts[2], (std::vector<size_t>{0}));
}

TEST(Pareto, CrowdingGivesExtremesInfinityAndInteriorTheNormalizedGaps) {
  // A front on f1 + f2 = 4: f1 = 0, 1, 3, 4 (listed out of order).
  const Points points = {{3, 1}, {0, 4}, {4, 0}, {1, 3}};
  const std::vector<size_t> front = {0, 1, 2, 3};
  const auto d = crowding_distance(points, front);
  EXPECT_EQ(d[1], kInf);
  EXPECT_EQ(d[2], kInf);
  // (3, 1): neighbours f1 = 1 and 4 -> 3/4 in each objective.
  EXPECT_DOUBLE_EQ(d[0], 0.75 + 0.75);
  // (1, 3): neighbours f1 = 0 and 3 -> 3/4 in each objective.
  EXPECT_DOUBLE_EQ(d[3], 0.75 + 0.75);
  // A subset: distances follow the order of `front`.
  const auto sub = crowding_distance(points, {3, 0, 1});
  EXPECT_EQ(sub[2], kInf);
  EXPECT_EQ(sub[1], kInf);
  EXPECT_DOUBLE_EQ(sub[0], 1.0 + 1.0);
}

TEST(Pareto, CrowdingIgnoresALevelObjectiveAndGivesOneTiedExtremeInfinity) {
  // Objective 2 is level: only objective 1 counts.
  const Points level = {{0, 5}, {1, 5}, {3, 5}};
  const auto d = crowding_distance(level, {0, 1, 2});
  EXPECT_EQ(d[0], kInf);
  EXPECT_DOUBLE_EQ(d[1], 1.0);
  EXPECT_EQ(d[2], kInf);
  EXPECT_EQ(crowding_distance({{1, 1}}, {0}), std::vector<double>{0.0});
  // Duplicates of an extreme: the first in the front's order is the extreme.
  const Points ties = {{0, 2}, {0, 2}, {2, 0}};
  const auto t = crowding_distance(ties, {0, 1, 2});
  EXPECT_EQ(t[0], kInf);
  EXPECT_EQ(t[2], kInf);
  EXPECT_LT(t[1], kInf);
}

TEST(Pareto, HypervolumeOfKnownShapes) {
  // One point: the box to the reference.
  EXPECT_DOUBLE_EQ(hypervolume({{1, 2}}, {3, 3}), 2.0 * 1.0);
  // A staircase: (1,3), (2,2), (3,1) with reference (4,4): columns of width
  // 1 and heights 1, 2, 3.
  EXPECT_DOUBLE_EQ(hypervolume({{1, 3}, {2, 2}, {3, 1}}, {4, 4}), 6.0);
  // Dominated and duplicate points add nothing.
  EXPECT_DOUBLE_EQ(hypervolume({{1, 3}, {2, 2}, {3, 1}, {3, 3}, {2, 2}}, {4, 4}), 6.0);
  // Points outside the reference box (or on its boundary) add nothing.
  EXPECT_DOUBLE_EQ(hypervolume({{1, 3}, {5, 0}, {0, 4}, {-1, 7}}, {4, 4}), 3.0);
  EXPECT_DOUBLE_EQ(hypervolume({}, {1, 1}), 0.0);
  // 3-D: a cube, two overlapping boxes (inclusion-exclusion), a 1-D interval.
  EXPECT_DOUBLE_EQ(hypervolume({{0, 0, 0}}, {1, 2, 3}), 6.0);
  // [0,2]x[1,2]x[0,1] and [1,2]x[0,2]x[0,1]: volumes 2 and 2 overlapping in 1.
  EXPECT_DOUBLE_EQ(hypervolume({{0, 1, 0}, {1, 0, 0}}, {2, 2, 1}), 3.0);
  // Three axis-offset points, reference (2,2,2): each box has volume 4, each
  // pair overlaps in 2, all three in 1 -> 12 - 6 + 1 = 7.
  EXPECT_DOUBLE_EQ(hypervolume({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {2, 2, 2}), 7.0);
  EXPECT_DOUBLE_EQ(hypervolume({{0.25}, {0.5}}, {1}), 0.75);
}

// Random point sets of n points in [0, 1]^m, some duplicated, some on a grid
// (ties), some outside the unit reference.
Points random_points(std::mt19937& rng, size_t n, size_t m) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::uniform_int_distribution<int> kind(0, 3);
  Points points;
  for (size_t i = 0; i < n; ++i) {
    const int k = kind(rng);
    if (k == 0 && !points.empty()) {
      points.push_back(points[std::uniform_int_distribution<size_t>(0, points.size() - 1)(rng)]);
      continue;
    }
    std::vector<double> p(m);
    for (double& x : p) x = k == 1 ? std::round(u(rng) * 4) / 4 : u(rng) * 1.1;
    points.push_back(p);
  }
  return points;
}

TEST(Pareto, FrontsPartitionThePointsAndTheFirstIsExactlyTheNonDominated) {
  std::mt19937 rng(12345);
  for (int set = 0; set < 200; ++set) {
    const size_t m = 2 + set % 3, n = 1 + rng() % 40;
    const Points points = random_points(rng, n, m);
    const auto fronts = non_dominated_fronts(points);
    std::vector<int> seen(n, 0);
    for (size_t r = 0; r < fronts.size(); ++r) {
      ASSERT_FALSE(fronts[r].empty());
      EXPECT_TRUE(std::is_sorted(fronts[r].begin(), fronts[r].end()));
      for (size_t i : fronts[r]) {
        ++seen[i];
        // Nothing in its own or a later front dominates it; something in the
        // front before does.
        for (size_t later = r; later < fronts.size(); ++later)
          for (size_t j : fronts[later]) EXPECT_FALSE(dominates(points[j], points[i])) << set;
        if (r > 0)
          EXPECT_TRUE(std::any_of(fronts[r - 1].begin(), fronts[r - 1].end(),
                                  [&](size_t j) { return dominates(points[j], points[i]); }))
              << set;
      }
    }
    EXPECT_EQ(seen, std::vector<int>(n, 1)) << set;
    for (size_t i = 0; i < n; ++i) {
      const bool in_first = std::find(fronts[0].begin(), fronts[0].end(), i) != fronts[0].end();
      const bool dominated = std::any_of(points.begin(), points.end(), [&](const auto& p) { return dominates(p, points[i]); });
      EXPECT_EQ(in_first, !dominated) << set;
    }
  }
}

TEST(Pareto, FirstFrontsAreTheLeadingFrontsHoldingTheCount) {
  std::mt19937 rng(777);
  for (int set = 0; set < 200; ++set) {
    const size_t m = 2 + set % 3, n = 1 + rng() % 40, count = rng() % (n + 2);
    const Points points = random_points(rng, n, m);
    const auto all = non_dominated_fronts(points);
    const auto first = first_fronts(points, count);
    size_t held = 0, r = 0;
    while (held < count && r < all.size()) held += all[r++].size();
    EXPECT_EQ(first, std::vector<std::vector<size_t>>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(r)))
        << set;
  }
}

TEST(Pareto, ContributionsAreWhatEachPointAloneCovers) {
  // Reference (6, 6): (2, 2) alone covers [2, 5] x [2, 5] less the [3, 5] x
  // [3, 5] of (3, 3), which is dominated; (1, 5) [1, 2] x [5, 6]; (5, 1)
  // [5, 6] x [1, 2]. Duplicates cover nothing alone.
  const Points points = {{1, 5}, {2, 2}, {3, 3}, {5, 1}};
  const auto c = hypervolume_contributions(points, {6, 6});
  ASSERT_EQ(c.size(), 4u);
  EXPECT_DOUBLE_EQ(c[0], 1.0);
  EXPECT_DOUBLE_EQ(c[1], 5.0);
  EXPECT_DOUBLE_EQ(c[2], 0.0);
  EXPECT_DOUBLE_EQ(c[3], 1.0);
  EXPECT_EQ(hypervolume_contributions({{1, 1}, {1, 1}}, {2, 2}), (std::vector<double>{0.0, 0.0}));
}

TEST(Pareto, GreedySubsetPicksTheLargestGainGivenThoseAlreadyPicked) {
  // Reference (4, 4): (1, 1) covers the most (9); (1.2, 1.1) alone covers 8.12
  // but adds nothing to it; (0.5, 3) adds [0.5, 1] x [3, 4] (0.5), (3, 0.6)
  // [3, 4] x [0.6, 1] (0.4).
  const Points points = {{1.2, 1.1}, {1, 1}, {0.5, 3}, {3, 0.6}};
  EXPECT_EQ(greedy_hypervolume_subset(points, 3, {4, 4}), (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(greedy_hypervolume_subset(points, 9, {4, 4}).size(), 4u);
  EXPECT_TRUE(greedy_hypervolume_subset(points, 0, {4, 4}).empty());
}

TEST(Pareto, HypervolumeIn2DEqualsThe3DSliceAndGrowsWithEveryPoint) {
  std::mt19937 rng(777);
  for (int set = 0; set < 200; ++set) {
    const Points points = random_points(rng, 1 + rng() % 30, 2);
    const std::vector<double> reference = {1.0, 1.0};
    const double area = hypervolume(points, reference);
    // The same points at a constant third coordinate 0.25 below a reference
    // of 2: a prism of height 1.75.
    Points lifted = points;
    for (auto& p : lifted) p.push_back(0.25);
    EXPECT_NEAR(hypervolume(lifted, {1.0, 1.0, 2.0}), 1.75 * area, 1e-12) << set;
    // Adding points never shrinks it.
    Points grown;
    double before = 0;
    for (const auto& p : points) {
      grown.push_back(p);
      const double now = hypervolume(grown, reference);
      EXPECT_GE(now, before - 1e-15) << set;
      before = now;
    }
    EXPECT_DOUBLE_EQ(before, area);
  }
}

// The fraction of a regular grid's cell centres in [0, 1]^m that some point
// dominates (weakly).
double grid_estimate(const Points& points, size_t m, int cells) {
  std::vector<int> at(m, 0);
  long covered = 0, total = 0;
  while (true) {
    std::vector<double> x(m);
    for (size_t d = 0; d < m; ++d) x[d] = (at[d] + 0.5) / cells;
    covered += std::any_of(points.begin(), points.end(), [&](const auto& p) {
      for (size_t d = 0; d < m; ++d)
        if (p[d] > x[d]) return false;
      return true;
    });
    ++total;
    size_t d = 0;
    while (d < m && ++at[d] == cells) at[d++] = 0;
    if (d == m) break;
  }
  return static_cast<double>(covered) / static_cast<double>(total);
}

TEST(Pareto, HypervolumeMatchesAGridEstimateIn2DAnd3D) {
  std::mt19937 rng(99);
  for (int set = 0; set < 20; ++set) {
    const size_t m = 2 + set % 2;
    const Points points = random_points(rng, 3 + rng() % 15, m);
    const double exact = hypervolume(points, std::vector<double>(m, 1.0));
    const int cells = m == 2 ? 400 : 50;
    // The dominated region is an up-set: a line along any axis crosses its
    // boundary once, so at most m * cells^(m-1) cells are cut and the
    // estimate is off by at most m / cells.
    EXPECT_NEAR(grid_estimate(points, m, cells), exact, static_cast<double>(m) / cells) << set;
  }
}

TEST(Pareto, Hypervolume3DOfManyPointsOnASphereApproachesTheAnalyticValue) {
  // Points on the octant of the unit sphere, reference (1,1,1): the dominated
  // region tends to the cube minus the sphere's octant, 1 - pi/6 = 0.4764,
  // from below (0.4542 with this 31 x 31 grid of angles).
  std::vector<std::vector<double>> points;
  const int k = 30;
  for (int a = 0; a <= k; ++a)
    for (int b = 0; b <= k; ++b) {
      const double theta = M_PI / 2 * a / k, phi = M_PI / 2 * b / k;
      points.push_back({std::sin(theta) * std::cos(phi), std::sin(theta) * std::sin(phi), std::cos(theta)});
    }
  const double hv = hypervolume(points, {1, 1, 1});
  EXPECT_LT(hv, 1 - M_PI / 6);
  EXPECT_GT(hv, 1 - M_PI / 6 - 0.03);
}

}  // namespace
}  // namespace tune
