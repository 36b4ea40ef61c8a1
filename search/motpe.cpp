// The multi-objective rule of the tpe searcher (Optuna 3.1's MOTPE, Ozaki et
// al. 2020): which trials form the "below" group and how they are weighted.
// search/tpe_searcher.cpp builds its estimators from them.
#include <algorithm>
#include <vector>

#include "search/model_space.h"
#include "search/pareto.h"

namespace tune::internal {
namespace {

// Optuna's EPS in MOTPE's reference point and weights.
constexpr double kEps = 1e-12;

// Optuna's reference point for MOTPE's hypervolumes: the worst value of each
// objective times 1.1 (0.9 when negative, 1e-12 when 0), so that every point
// lies strictly inside the box and has volume.
std::vector<double> motpe_reference(const std::vector<std::vector<double>>& points) {
  std::vector<double> reference = points.front();
  for (const auto& p : points)
    for (size_t d = 0; d < p.size(); ++d) reference[d] = std::max(reference[d], p[d]);
  for (double& r : reference) r = r == 0 ? kEps : std::max(1.1 * r, 0.9 * r);
  return reference;
}

}  // namespace

std::vector<size_t> tpe_multi_objective_below(const std::vector<std::vector<double>>& losses, size_t n_below) {
  std::vector<size_t> below;
  for (const auto& front : first_fronts(losses, n_below)) {
    if (below.size() + front.size() <= n_below) {
      below.insert(below.end(), front.begin(), front.end());
      continue;
    }
    if (below.size() < n_below) {
      std::vector<std::vector<double>> points;
      for (size_t k : front) points.push_back(losses[k]);
      for (size_t k : greedy_hypervolume_subset(points, n_below - below.size(), motpe_reference(points)))
        below.push_back(front[k]);
    }
    break;
  }
  std::sort(below.begin(), below.end());
  return below;
}

std::vector<double> tpe_multi_objective_weights(const std::vector<std::vector<double>>& below) {
  if (below.size() < 2) return std::vector<double>(below.size(), 1.0);
  std::vector<double> weights = hypervolume_contributions(below, motpe_reference(below));
  // Optuna adds 1e-12 so that dominated and duplicated points keep a sliver.
  double top = 0;
  for (double& w : weights) top = std::max(top, w += kEps);
  for (double& w : weights) w = std::clamp(w / top, 0.0, 1.0);
  return weights;
}

}  // namespace tune::internal
