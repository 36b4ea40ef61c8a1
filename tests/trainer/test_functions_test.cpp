// Benchmark functions against their published optima (Surjanovic & Bingham).
#include "trainer/test_functions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tune::test_functions {
namespace {

TEST(Branin, TakesItsMinimumAtAllThreePublishedPoints) {
  EXPECT_NEAR(branin(-M_PI, 12.275), kBraninMinimum, 1e-6);
  EXPECT_NEAR(branin(M_PI, 2.275), kBraninMinimum, 1e-6);
  EXPECT_NEAR(branin(9.42478, 2.475), kBraninMinimum, 1e-6);
}

TEST(Branin, IsNeverBelowItsMinimumOnTheDomain) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> x0(-5, 10), x1(0, 15);
  for (int i = 0; i < 100000; ++i) EXPECT_GE(branin(x0(rng), x1(rng)), kBraninMinimum - 1e-9);
}

TEST(Hartmann6, TakesItsPublishedMinimum) {
  EXPECT_NEAR(hartmann6({0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573}), kHartmann6Minimum, 1e-5);
}

TEST(Hartmann6, IsNeverBelowItsMinimumOnTheUnitCube) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 100000; ++i) {
    std::array<double, 6> x;
    for (double& v : x) v = u(rng);
    EXPECT_GE(hartmann6(x), kHartmann6Minimum - 1e-9);
  }
}

TEST(Shekel10, TakesItsPublishedMinimumNearFourFourFourFour) {
  // Published: -10.5364 at (4, 4, 4, 4) to 4 digits; the exact minimizer is a
  // stationary point a little off it.
  EXPECT_NEAR(shekel10({4, 4, 4, 4}), -10.5364, 1e-3);
  EXPECT_NEAR(shekel10(kShekel10Argmin), kShekel10Minimum, 1e-12);
  for (int j = 0; j < 4; ++j) {
    for (double h : {-1e-4, 1e-4}) {
      std::array<double, 4> x = kShekel10Argmin;
      x[static_cast<size_t>(j)] += h;
      EXPECT_GT(shekel10(x), kShekel10Minimum);
    }
  }
}

TEST(Shekel10, IsNeverBelowItsMinimumOnTheDomain) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 10);
  for (int i = 0; i < 100000; ++i) EXPECT_GE(shekel10({u(rng), u(rng), u(rng), u(rng)}), kShekel10Minimum - 1e-9);
}

}  // namespace
}  // namespace tune::test_functions
