// GaussianProcess: kernel, posterior and likelihood against hand-computed
// values and finite differences; expected improvement against quadrature.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "search/gp.h"
#include "base/error.h"

namespace tune {
namespace {

GpHyperparameters hyper(std::vector<double> l, double s2, double n2, double c) {
  GpHyperparameters h;
  h.lengthscales = std::move(l);
  h.signal_variance = s2;
  h.noise_variance = n2;
  h.mean = c;
  return h;
}

TEST(GpKernel, Matern52MatchesClosedForm) {
  // r = sqrt((0.3/0.5)^2 + (0.4/2)^2)
  const double r = std::sqrt(0.36 + 0.04);
  const double expected = 1.7 * (1 + std::sqrt(5.0) * r + 5.0 / 3.0 * r * r) * std::exp(-std::sqrt(5.0) * r);
  EXPECT_NEAR(GaussianProcess::kernel({0.1, 0.2}, {0.4, 0.6}, hyper({0.5, 2.0}, 1.7, 1e-3, 0)), expected, 1e-14);
  EXPECT_DOUBLE_EQ(GaussianProcess::kernel({0.3, 0.3}, {0.3, 0.3}, hyper({0.5, 2.0}, 1.7, 1e-3, 0)), 1.7);
}

TEST(GpPosterior, OnePointByHand) {
  GaussianProcess gp;
  const auto h = hyper({0.5}, 2.0, 0.5, 0.3);
  gp.set_data({{0.2}}, {5.0}, h);
  // One point: y standardizes to 0 (mean 5, scale 1).
  const double k = GaussianProcess::kernel({0.7}, {0.2}, h);
  double mean = 0, var = 0;
  gp.predict({0.7}, &mean, &var);
  EXPECT_NEAR(mean, 5.0 + 0.3 + k / 2.5 * (0.0 - 0.3), 1e-12);
  EXPECT_NEAR(var, 2.0 - k * k / 2.5, 1e-12);
  // log N(0; c, s2 + n2)
  EXPECT_NEAR(gp.log_marginal_likelihood(), -0.5 * 0.09 / 2.5 - 0.5 * std::log(2.5) - 0.5 * std::log(2 * M_PI), 1e-12);
}

TEST(GpPosterior, TwoPointsByHand) {
  GaussianProcess gp;
  const auto h = hyper({0.4, 0.8}, 1.3, 0.01, -0.2);
  const std::vector<std::vector<double>> x = {{0.1, 0.9}, {0.5, 0.4}};
  gp.set_data(x, {1.0, 4.0}, h);
  // Standardized targets: mean 2.5, scale 1.5 -> (-1, 1).
  const double a = 1.3 + 0.01, b = GaussianProcess::kernel(x[0], x[1], h);
  const double det = a * a - b * b;
  // K^-1 = [[a, -b], [-b, a]] / det
  const double r0 = -1 - (-0.2), r1 = 1 - (-0.2);
  const double al0 = (a * r0 - b * r1) / det, al1 = (-b * r0 + a * r1) / det;
  const std::vector<double> xs = {0.3, 0.5};
  const double k0 = GaussianProcess::kernel(xs, x[0], h), k1 = GaussianProcess::kernel(xs, x[1], h);
  const double mean_std = -0.2 + k0 * al0 + k1 * al1;
  const double quad = (a * k0 * k0 - 2 * b * k0 * k1 + a * k1 * k1) / det;
  double mean = 0, var = 0;
  gp.predict(xs, &mean, &var);
  EXPECT_NEAR(mean, 2.5 + 1.5 * mean_std, 1e-12);
  EXPECT_NEAR(var, (1.3 - quad) * 2.25, 1e-12);
  const double lml = -0.5 * (r0 * al0 + r1 * al1) - 0.5 * std::log(det) - std::log(2 * M_PI);
  EXPECT_NEAR(gp.log_marginal_likelihood(), lml, 1e-12);
  // Batch prediction agrees with the single one.
  std::vector<double> means, vars;
  gp.predict_batch({xs, x[0]}, &means, &vars);
  EXPECT_NEAR(means[0], mean, 1e-12);
  EXPECT_NEAR(vars[0], var, 1e-12);
}

TEST(GpPosterior, InterpolatesWithSmallNoiseAndRevertsToPriorFarAway) {
  GaussianProcess gp;
  const auto h = hyper({0.1}, 1.0, 1e-8, 0.0);
  gp.set_data({{0.1}, {0.2}, {0.3}}, {1.0, 2.0, 0.0}, h);
  double mean = 0, var = 0;
  gp.predict({0.2}, &mean, &var);
  EXPECT_NEAR(mean, 2.0, 1e-5);
  EXPECT_LT(var, 1e-6);
  gp.predict({50.0}, &mean, &var);  // far: prior mean c (standardized 0 -> y mean 1) and variance s2 * scale^2
  EXPECT_NEAR(mean, 1.0, 1e-9);
  EXPECT_NEAR(var, 2.0 / 3.0, 1e-9);
}

std::vector<std::vector<double>> random_points(int n, int d, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::vector<double>> x(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(d)));
  for (auto& row : x)
    for (auto& v : row) v = u(rng);
  return x;
}

TEST(GpLikelihood, GradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(3);
  const int d = 3;
  auto x = random_points(12, d, rng);
  std::vector<double> y;
  for (const auto& row : x) y.push_back(std::sin(6 * row[0]) + row[1] * row[1] - 0.5 * row[2]);
  GaussianProcess gp;
  gp.set_data(x, y, hyper({0.3, 0.6, 1.2}, 1.0, 1e-2, 0.0));
  std::uniform_real_distribution<double> u(-1, 1);
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<double> theta = {std::log(0.4) + 0.5 * u(rng), std::log(0.7) + 0.5 * u(rng), std::log(1.0) + 0.5 * u(rng),
                                 0.3 * u(rng), std::log(0.02) + u(rng), 0.5 * u(rng)};
    std::vector<double> grad;
    gp.log_marginal_likelihood_at(theta, &grad);
    ASSERT_EQ(grad.size(), theta.size());
    for (size_t i = 0; i < theta.size(); ++i) {
      const double eps = 1e-6;
      auto plus = theta, minus = theta;
      plus[i] += eps;
      minus[i] -= eps;
      const double fd = (gp.log_marginal_likelihood_at(plus, nullptr) - gp.log_marginal_likelihood_at(minus, nullptr)) /
                        (2 * eps);
      EXPECT_NEAR(grad[i], fd, 1e-5 * std::max(1.0, std::fabs(fd))) << "theta[" << i << "]";
    }
  }
}

TEST(GpPosterior, InputGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(5);
  auto x = random_points(10, 2, rng);
  std::vector<double> y;
  for (const auto& row : x) y.push_back(std::cos(4 * row[0]) * row[1]);
  GaussianProcess gp;
  gp.set_data(x, y, hyper({0.3, 0.5}, 1.2, 1e-3, 0.1));
  for (const auto& at : random_points(4, 2, rng)) {
    double m = 0, v = 0;
    std::vector<double> gm, gv;
    gp.predict_with_gradient(at, &m, &v, &gm, &gv);
    for (size_t j = 0; j < 2; ++j) {
      const double eps = 1e-6;
      auto p = at, q = at;
      p[j] += eps;
      q[j] -= eps;
      double mp, vp, mq, vq;
      gp.predict(p, &mp, &vp);
      gp.predict(q, &mq, &vq);
      EXPECT_NEAR(gm[j], (mp - mq) / (2 * eps), 1e-6);
      EXPECT_NEAR(gv[j], (vp - vq) / (2 * eps), 1e-6);
    }
  }
}

TEST(GpFit, ImprovesLikelihoodAndPredictsASmoothFunction) {
  std::mt19937_64 rng(11);
  auto x = random_points(30, 2, rng);
  auto f = [](const std::vector<double>& p) { return std::sin(5 * p[0]) + 0.2 * p[1]; };
  std::vector<double> y;
  for (const auto& row : x) y.push_back(f(row));
  GaussianProcess fitted;
  fitted.fit(x, y, 1);
  GaussianProcess fixed;
  fixed.set_data(x, y, hyper({0.5, 0.5}, 1.0, 1e-3, 0.0));
  EXPECT_GT(fitted.log_marginal_likelihood(), fixed.log_marginal_likelihood());
  // The second input matters much less than the first: a longer lengthscale.
  EXPECT_GT(fitted.hyperparameters().lengthscales[1], fitted.hyperparameters().lengthscales[0]);
  double worst = 0;
  for (const auto& at : random_points(50, 2, rng)) {
    double m = 0, v = 0;
    fitted.predict(at, &m, &v);
    worst = std::max(worst, std::fabs(m - f(at)));
  }
  EXPECT_LT(worst, 0.05);
}

TEST(GpFit, SameSeedSameFit) {
  std::mt19937_64 rng(2);
  auto x = random_points(15, 3, rng);
  std::vector<double> y;
  for (const auto& row : x) y.push_back(row[0] * row[1] - row[2]);
  GaussianProcess a, b;
  a.fit(x, y, 42);
  b.fit(x, y, 42);
  EXPECT_EQ(a.hyperparameters().lengthscales, b.hyperparameters().lengthscales);
  EXPECT_EQ(a.hyperparameters().noise_variance, b.hyperparameters().noise_variance);
  EXPECT_EQ(a.log_marginal_likelihood(), b.log_marginal_likelihood());
}

TEST(GpFit, RejectsBadData) {
  GaussianProcess gp;
  EXPECT_THROW(gp.fit({}, {}, 1), Error);
  EXPECT_THROW(gp.fit({{0.1}, {0.2, 0.3}}, {1, 2}, 1), Error);
  EXPECT_THROW(gp.fit({{0.1}}, {NAN}, 1), Error);
  EXPECT_THROW(gp.fit({{0.1}}, {1, 2}, 1), Error);
  double m, v;
  EXPECT_THROW(gp.predict({0.1}, &m, &v), Error);
}

TEST(GpFit, ConstantTargetsAndDuplicatesDoNotBreak) {
  GaussianProcess gp;
  gp.fit({{0.5, 0.5}, {0.5, 0.5}, {0.2, 0.1}}, {3.0, 3.0, 3.0}, 1);
  double m = 0, v = 0;
  gp.predict({0.4, 0.4}, &m, &v);
  EXPECT_NEAR(m, 3.0, 1e-6);
  EXPECT_TRUE(std::isfinite(v));
}

// ---- expected improvement ----

// h(z) = E[max(z - Z, 0)]... computed by Simpson quadrature of
// integral_{-inf}^{z} (z - t) phi(t) dt in long double.
long double h_by_quadrature(long double z) {
  const long double lo = z - 40, n = 200000;
  const long double step = (z - lo) / n;
  long double sum = 0;
  for (int i = 0; i <= static_cast<int>(n); ++i) {
    long double t = lo + i * step;
    long double f = (z - t) * std::exp(-0.5L * t * t) / std::sqrt(2 * static_cast<long double>(M_PI));
    sum += f * ((i == 0 || i == static_cast<int>(n)) ? 1 : (i % 2 ? 4 : 2));
  }
  return sum * step / 3;
}

// The model keeps its factor between set_data() calls and appends the rows
// of new points; whatever the history, every prediction must equal a fresh
// model's to the bit (the bayes searcher's exact resume depends on it).
TEST(GpPosterior, ReusedFactorGivesTheSameBitsAsAFreshModel) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto point = [&] { return std::vector<double>{u(rng), u(rng), u(rng)}; };
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  std::vector<std::vector<double>> probes;
  for (int k = 0; k < 40; ++k) probes.push_back(point());
  const auto h = hyper({0.3, 0.6, 1.2}, 1.3, 1e-4, 0.1);
  const auto h2 = hyper({0.3, 0.6, 1.1}, 1.3, 1e-4, 0.1);
  GaussianProcess reused;
  auto check = [&](const GpHyperparameters& hp, const std::string& step) {
    reused.set_data(x, y, hp);
    GaussianProcess fresh;
    fresh.set_data(x, y, hp);
    std::vector<double> m1, v1, m2, v2;
    reused.predict_batch(probes, &m1, &v1);
    fresh.predict_batch(probes, &m2, &v2);
    ASSERT_EQ(m1, m2) << step;
    ASSERT_EQ(v1, v2) << step;
    double a1, b1, a2, b2;
    std::vector<double> g1, g2, g3, g4;
    reused.predict_with_gradient(probes[0], &a1, &b1, &g1, &g2);
    fresh.predict_with_gradient(probes[0], &a2, &b2, &g3, &g4);
    ASSERT_EQ(a1, a2) << step;
    ASSERT_EQ(b1, b2) << step;
    ASSERT_EQ(g1, g3) << step;
    ASSERT_EQ(g2, g4) << step;
    ASSERT_EQ(reused.log_marginal_likelihood(), fresh.log_marginal_likelihood()) << step;
  };
  for (int k = 0; k < 30; ++k) {  // one point at a time, new targets each time
    x.push_back(point());
    y.push_back(std::sin(5 * x.back()[0]) + x.back()[1]);
    for (double& v : y) v += 1e-3;
    check(h, "append " + std::to_string(k));
  }
  for (int k = 0; k < 3; ++k) x.push_back(point()), y.push_back(0.5);  // pending points, then dropped
  check(h, "pending");
  x.resize(30), y.resize(30);
  check(h, "pending dropped");
  x.insert(x.begin() + 25, point()), y.insert(y.begin() + 25, 0.2);  // a trial finishing out of order
  check(h, "insert");
  x.erase(x.begin() + 3), y.erase(y.begin() + 3);
  check(h, "erase");
  check(h2, "new hyperparameters");
  for (int k = 0; k < 80; ++k) x.push_back(point()), y.push_back(u(rng));  // beyond the spare capacity
  check(h2, "grown");
  for (int k = 0; k < 5; ++k) x.push_back(x[static_cast<size_t>(k)]), y.push_back(y[static_cast<size_t>(k)]);
  check(hyper({0.3, 0.6, 1.1}, 1.3, 1e-12, 0.1), "duplicates, tiny noise (jitter)");
  x.push_back(point()), y.push_back(0.0);
  check(hyper({0.3, 0.6, 1.1}, 1.3, 1e-12, 0.1), "after jitter");
}

TEST(ExpectedImprovement, MatchesQuadrature) {
  for (double z : {-3.0, -1.0, 0.0, 0.5, 2.0}) {
    const double sd = 0.7, best = 1.0, mean = best - z * sd;
    const double expected = sd * static_cast<double>(h_by_quadrature(z));
    EXPECT_NEAR(expected_improvement(mean, sd, best), expected, 1e-9 * std::max(1.0, expected)) << z;
  }
  EXPECT_DOUBLE_EQ(expected_improvement(0.2, 0.0, 1.0), 0.8);
  EXPECT_DOUBLE_EQ(expected_improvement(2.0, 0.0, 1.0), 0.0);
}

TEST(ExpectedImprovement, LogEiMatchesClosedFormInLongDouble) {
  // Closed form h(z) = z Phi(z) + phi(z) evaluated in long double, where the
  // cancellation at moderately negative z still leaves > 12 digits.
  for (double z = -35; z <= 6; z += 0.25) {
    long double zl = z;
    long double Phi = 0.5L * std::erfc(-zl / std::sqrt(2.0L));
    long double phi = std::exp(-0.5L * zl * zl) / std::sqrt(2 * static_cast<long double>(M_PI));
    long double h = zl * Phi + phi;
    EXPECT_NEAR(log_h(z), static_cast<double>(std::log(h)), 1e-8 * std::max(1.0, std::fabs(static_cast<double>(std::log(h)))))
        << z;
  }
  // Far tail: h(z) ~ phi(z) / z^2; log EI stays finite where EI underflows.
  EXPECT_EQ(expected_improvement(1e3, 1.0, 0.0), 0.0);
  const double tail = log_expected_improvement(1e3, 1.0, 0.0);
  EXPECT_TRUE(std::isfinite(tail));
  EXPECT_NEAR(tail, -0.5 * 1e6 - 0.5 * std::log(2 * M_PI) - 2 * std::log(1e3), 1e-3);
  EXPECT_NEAR(log_expected_improvement(0.3, 2.0, 1.0), std::log(expected_improvement(0.3, 2.0, 1.0)), 1e-12);
}

TEST(Erfcx, MatchesDefinitionAndAsymptotics) {
  for (double x : {0.0, 0.5, 3.0, 10.0, 20.0})
    EXPECT_NEAR(erfcx(x), static_cast<double>(std::exp(static_cast<long double>(x) * x) * std::erfc(static_cast<long double>(x))),
                1e-13 * erfcx(x));
  // Continuity across the switch to the asymptotic series at 25.
  EXPECT_NEAR(erfcx(25.0 - 1e-12), erfcx(25.0 + 1e-12), 1e-10 * erfcx(25.0));
  EXPECT_NEAR(erfcx(1e4) * 1e4 * std::sqrt(M_PI), 1.0, 1e-8);
}

}  // namespace
}  // namespace tune
