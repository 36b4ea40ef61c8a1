// Gaussian-process regression for model-based search (the `bayes` searcher)
// and for schedulers that model a metric (PB2).
//
// Model: f ~ GP(c, k) with a Matérn-5/2 ARD kernel
//   k(x, x') = s2 * (1 + sqrt5 r + 5/3 r^2) * exp(-sqrt5 r),  r^2 = sum_j (x_j - x'_j)^2 / l_j^2,
// a constant mean c and Gaussian observation noise n2: y = f(x) + eps, eps ~ N(0, n2).
// Targets are standardized internally (zero mean, unit variance); inputs are
// expected in the unit cube [0, 1]^d (the caller maps its space there).
//
// Hyperparameters theta = (log l_1..log l_d, log s2, log n2, c) are fitted by
// maximizing the log marginal likelihood plus weak log-normal priors, inside
// box bounds, with NLopt's bounded L-BFGS from several starting points (the
// default point and `restarts` random ones drawn from the seed).
//
// Usage:
//   tune::GaussianProcess gp;
//   gp.fit(x, y, /*seed=*/7);           // x: n rows of d values in [0,1], y: n targets
//   double mean, variance;
//   gp.predict(point, &mean, &variance);  // in the units of y
//
// Not thread safe; predict() is const and may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace tune {

struct GpOptions {
  // Random restarts of the hyperparameter optimizer besides the default
  // starting point (or the previous fit's hyperparameters, see warm_start).
  int restarts = 4;
  // Maximum log-likelihood evaluations per start.
  int max_evaluations = 100;
  // Box bounds on the hyperparameters (lengthscales in unit-cube units,
  // variances in standardized units).
  double min_lengthscale = 0.01, max_lengthscale = 20.0;
  double min_signal_variance = 0.05, max_signal_variance = 20.0;
  double min_noise_variance = 1e-6, max_noise_variance = 1.0;
  // Fixed noise: when > 0, the noise variance (standardized units) is not
  // learned but held at this value.
  double fixed_noise_variance = 0.0;
  // Add weak log-normal priors on the lengthscales and the noise (MAP instead
  // of maximum likelihood); keeps fits with few points sane.
  bool use_priors = true;
  // Start the optimizer from the previous fit's hyperparameters too.
  bool warm_start = true;
  // When > 0 and there are more points: the multi-start phase runs on the
  // latest max_restart_points points only, and the best start is then
  // polished on all of them (cheaper fits for large data sets).
  int max_restart_points = 0;
};

// Hyperparameters in natural units (targets standardized).
struct GpHyperparameters {
  std::vector<double> lengthscales;
  double signal_variance = 1.0;
  double noise_variance = 1e-3;
  double mean = 0.0;  // constant mean, standardized units
};

class GaussianProcess {
 public:
  explicit GaussianProcess(GpOptions options = {});
  ~GaussianProcess();
  GaussianProcess(const GaussianProcess& other);
  GaussianProcess& operator=(const GaussianProcess& other);
  GaussianProcess(GaussianProcess&&) noexcept;
  GaussianProcess& operator=(GaussianProcess&&) noexcept;

  // Fits the hyperparameters (multi-start bounded L-BFGS on the log marginal
  // likelihood) and then the posterior. Rows of `x` must have equal size d >= 1
  // and values in [0, 1] (values outside are accepted but the bounds assume the
  // unit cube); `y` must be finite. Throws tune::Error on bad shapes, empty or
  // non-finite data. Deterministic for a given seed.
  void fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y, uint64_t seed);

  // Sets the data with the given hyperparameters, without optimizing them
  // (e.g. a cheap update between full fits). Same checks as fit(). When the
  // kernel's hyperparameters are those of the previous call, the Cholesky
  // rows of the leading points that did not change are kept and only the
  // rest are factored (O(n^2) per new point instead of O(n^3) in all); the
  // factor is always built row by row, so the result is the same to the bit
  // as on a fresh GaussianProcess.
  void set_data(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                const GpHyperparameters& hyperparameters);

  // Posterior mean and variance of the latent f at x (without observation
  // noise), in the units of y. Before any fit: throws tune::Error.
  void predict(const std::vector<double>& x, double* mean, double* variance) const;
  // Same, also the gradients d mean / dx and d variance / dx (size d each).
  void predict_with_gradient(const std::vector<double>& x, double* mean, double* variance,
                             std::vector<double>* mean_gradient, std::vector<double>* variance_gradient) const;
  // Batch: rows of `x`; fills means and variances (resized).
  void predict_batch(const std::vector<std::vector<double>>& x, std::vector<double>* means,
                     std::vector<double>* variances) const;

  // Log marginal likelihood of the standardized targets at the fitted
  // hyperparameters (without priors).
  double log_marginal_likelihood() const;

  // The fitted hyperparameters; y's mean and standard deviation used to
  // standardize.
  const GpHyperparameters& hyperparameters() const;
  double y_mean() const;
  double y_scale() const;
  int dimensions() const;
  int size() const;
  bool fitted() const;
  const GpOptions& options() const;

  // Testing hooks: the kernel value between two points and the log marginal
  // likelihood (standardized targets, no priors) with its gradient with respect
  // to theta = (log l_1..log l_d, log s2, log n2, c) for the current data.
  static double kernel(const std::vector<double>& a, const std::vector<double>& b,
                       const GpHyperparameters& hyperparameters);
  double log_marginal_likelihood_at(const std::vector<double>& theta, std::vector<double>* gradient) const;

  struct Impl;  // opaque (search/gp.cpp)

 private:
  GpOptions options_;
  std::unique_ptr<Impl> impl_;
};

// Standard normal helpers and expected improvement (for minimization: the
// improvement is max(best - f, 0) with f ~ N(mean, sd^2)).
double normal_pdf(double z);
double normal_cdf(double z);
// erfcx(x) = exp(x^2) erfc(x), accurate for large x.
double erfcx(double x);
// EI = sd * h(z), h(z) = z Phi(z) + phi(z), z = (best - mean) / sd.
double expected_improvement(double mean, double sd, double best);
// log h(z), accurate down to z = -1e10 (no cancellation; see Ament et al. 2023,
// "Unexpected improvements to expected improvement").
double log_h(double z);
// log EI = log sd + log h(z). sd must be > 0.
double log_expected_improvement(double mean, double sd, double best);

}  // namespace tune
