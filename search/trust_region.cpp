#include "search/trust_region.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tune::internal {

UnitBox trust_region(const ModelSpace& space, const std::vector<std::vector<double>>& x,
                     const std::vector<double>& y, size_t design, const GaussianProcess& model,
                     const GpHyperparameters& hyper) {
  const size_t d = static_cast<size_t>(space.unit_dims());
  UnitBox region{std::vector<double>(d, 0.0), std::vector<double>(d, 1.0)};
  if (x.empty()) return region;
  constexpr double kInitialSide = 0.8, kMaxSide = 1.6, kMinSide = kInitialSide / 128;
  const int failure_tolerance = std::max(4, static_cast<int>(d));
  design = std::min(design, y.size());
  double best = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < design; ++k) best = std::min(best, y[k]);
  double side = kInitialSide;
  int successes = 0, failures = 0;
  for (size_t k = design; k < y.size(); ++k) {
    if (y[k] < best - 1e-3 * std::fabs(best)) {
      ++successes, failures = 0;
    } else {
      ++failures, successes = 0;
    }
    best = std::min(best, y[k]);
    if (successes == 3) side = std::min(2 * side, kMaxSide), successes = 0;
    if (failures == failure_tolerance) side /= 2, failures = 0;
    if (side < kMinSide) side = kInitialSide;
  }
  std::vector<double> means;
  model.predict_batch(x, &means, nullptr);
  const std::vector<double>& centre = x[static_cast<size_t>(std::min_element(means.begin(), means.end()) - means.begin())];
  double mean_log = 0;
  for (double l : hyper.lengthscales) mean_log += std::log(l);
  mean_log /= static_cast<double>(d);
  for (size_t j = 0; j < d; ++j) {
    const double half = 0.5 * side * std::exp(std::log(hyper.lengthscales[j]) - mean_log);
    region.lower[j] = std::max(0.0, centre[j] - half);
    region.upper[j] = std::min(1.0, centre[j] + half);
  }
  const auto& variables = space.variables();
  for (size_t v = 0; v < variables.size(); ++v) {
    const size_t j = space.offset(v);
    if (variables[v].type == ModelVariable::Type::kCategorical) {
      for (size_t c = 0; c < variables[v].choices.size() && variables[v].choices.size() > 1; ++c)
        region.lower[j + c] = 0.0, region.upper[j + c] = 1.0;
    } else if (variables[v].type == ModelVariable::Type::kDiscrete) {
      region.lower[j] = std::min(region.lower[j], discrete_neighbour(space, v, centre[j], -1));
      region.upper[j] = std::max(region.upper[j], discrete_neighbour(space, v, centre[j], +1));
    }
  }
  return region;
}

double discrete_neighbour(const ModelSpace& space, size_t v, double u, int direction) {
  const ModelVariable& var = space.variables()[v];
  if (!(var.high > var.low)) return u;
  auto snapped = [&](double w) { return space.snap(v, var.low + w * (var.high - var.low)); };
  const double here = snapped(u);
  for (int step = 1; step <= 256; ++step) {
    const double w = std::clamp(u + direction * step / 256.0, 0.0, 1.0);
    const double there = snapped(w);
    if (there != here) return std::clamp((there - var.low) / (var.high - var.low), 0.0, 1.0);
    if (w == 0.0 || w == 1.0) break;
  }
  return u;
}

}  // namespace tune::internal
