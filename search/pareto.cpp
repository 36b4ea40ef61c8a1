#include "search/pareto.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace tune {
namespace {

// The hypervolume of `points` (each strictly below `reference` everywhere)
// over the coordinates [first, first + dims).
double hypervolume_from(std::vector<const double*> points, const double* reference, size_t first, size_t dims) {
  if (points.empty()) return 0;
  if (dims == 1) {
    double best = reference[first];
    for (const double* p : points) best = std::min(best, p[first]);
    return reference[first] - best;
  }
  std::sort(points.begin(), points.end(), [first](const double* a, const double* b) {
    return a[first] != b[first] ? a[first] < b[first] : a[first + 1] < b[first + 1];
  });
  if (dims == 2) {
    // Sweep in x: each point that lowers the best y so far adds the strip
    // from its x to the next such point's x (the reference's for the last).
    double volume = 0, best_y = reference[first + 1];
    const double* last = nullptr;
    for (const double* p : points) {
      if (p[first + 1] >= best_y) continue;
      if (last) volume += (p[first] - last[first]) * (reference[first + 1] - best_y);
      best_y = p[first + 1];
      last = p;
    }
    return volume + (reference[first] - last[first]) * (reference[first + 1] - best_y);
  }
  // Slice along the first coordinate: between the k-th and the next point's
  // value, the points 0..k dominate a (dims - 1)-dimensional region.
  double volume = 0;
  std::vector<const double*> slice;
  for (size_t k = 0; k < points.size(); ++k) {
    slice.push_back(points[k]);
    const double next = k + 1 < points.size() ? points[k + 1][first] : reference[first];
    const double depth = next - points[k][first];
    if (depth > 0) volume += depth * hypervolume_from(slice, reference, first + 1, dims - 1);
  }
  return volume;
}

}  // namespace

bool dominates(const std::vector<double>& a, const std::vector<double>& b) {
  bool better = false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] > b[i]) return false;
    better = better || a[i] < b[i];
  }
  return better;
}

std::vector<std::vector<size_t>> non_dominated_fronts(const std::vector<std::vector<double>>& points) {
  const size_t n = points.size();
  std::vector<std::vector<size_t>> dominated(n);  // dominated[i]: the points i dominates
  std::vector<size_t> count(n, 0);                 // count[i]: how many points dominate i
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      if (dominates(points[i], points[j])) {
        dominated[i].push_back(j);
        ++count[j];
      } else if (dominates(points[j], points[i])) {
        dominated[j].push_back(i);
        ++count[i];
      }
    }
  std::vector<std::vector<size_t>> fronts;
  std::vector<size_t> front;
  for (size_t i = 0; i < n; ++i)
    if (count[i] == 0) front.push_back(i);
  while (!front.empty()) {
    std::vector<size_t> next;
    for (size_t i : front)
      for (size_t j : dominated[i])
        if (--count[j] == 0) next.push_back(j);
    std::sort(next.begin(), next.end());
    fronts.push_back(std::move(front));
    front = std::move(next);
  }
  return fronts;
}

std::vector<std::vector<size_t>> first_fronts(const std::vector<std::vector<double>>& points, size_t count) {
  std::vector<std::vector<size_t>> fronts;
  std::vector<size_t> rest(points.size());
  std::iota(rest.begin(), rest.end(), 0);
  for (size_t held = 0; held < count && !rest.empty();) {
    std::vector<size_t> front, next;
    for (size_t i : rest) {
      const bool beaten = std::any_of(rest.begin(), rest.end(), [&](size_t j) { return dominates(points[j], points[i]); });
      (beaten ? next : front).push_back(i);
    }
    held += front.size();
    fronts.push_back(std::move(front));
    rest = std::move(next);
  }
  return fronts;
}

std::vector<double> crowding_distance(const std::vector<std::vector<double>>& points,
                                      const std::vector<size_t>& front) {
  std::vector<double> distance(front.size(), 0.0);
  if (front.empty()) return distance;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<size_t> order(front.size());
  for (size_t m = 0; m < points[front[0]].size(); ++m) {
    std::iota(order.begin(), order.end(), 0);
    auto value = [&](size_t k) { return points[front[order[k]]][m]; };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return points[front[a]][m] < points[front[b]][m]; });
    const double range = value(order.size() - 1) - value(0);
    if (!(range > 0)) continue;  // the front is level in this objective: it tells members apart by nothing
    // Of members tied at the largest value, the first in front order is the
    // extreme, as at the smallest: duplicates of an extreme point then share
    // one infinity instead of each taking one end.
    auto top = order.end() - 1;
    while (top != order.begin() && points[front[*(top - 1)]][m] == points[front[order.back()]][m]) --top;
    std::rotate(top, top + 1, order.end());
    distance[order.front()] = inf;
    distance[order.back()] = inf;
    for (size_t k = 1; k + 1 < order.size(); ++k) distance[order[k]] += (value(k + 1) - value(k - 1)) / range;
  }
  return distance;
}

double hypervolume(const std::vector<std::vector<double>>& points, const std::vector<double>& reference) {
  std::vector<const double*> inside;
  for (const auto& p : points) {
    bool below = true;
    for (size_t i = 0; i < reference.size() && below; ++i) below = p[i] < reference[i];
    if (below) inside.push_back(p.data());
  }
  if (reference.empty()) return 0;
  return hypervolume_from(std::move(inside), reference.data(), 0, reference.size());
}

std::vector<double> hypervolume_contributions(const std::vector<std::vector<double>>& points,
                                              const std::vector<double>& reference) {
  const double total = hypervolume(points, reference);
  std::vector<double> out;
  out.reserve(points.size());
  std::vector<std::vector<double>> others(points.begin(), points.end());
  for (size_t k = 0; k < points.size(); ++k) {
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(k));
    out.push_back(total - hypervolume(others, reference));
    others.insert(others.begin() + static_cast<std::ptrdiff_t>(k), points[k]);
  }
  return out;
}

std::vector<size_t> greedy_hypervolume_subset(const std::vector<std::vector<double>>& points, size_t k,
                                              const std::vector<double>& reference) {
  const size_t n = points.size();
  std::vector<double> gain(n);  // what each point would add to the picked ones
  for (size_t j = 0; j < n; ++j) gain[j] = hypervolume({points[j]}, reference);
  std::vector<bool> taken(n, false);
  std::vector<std::vector<double>> picked;
  std::vector<size_t> order;
  double picked_volume = 0;
  while (order.size() < std::min(k, n)) {
    size_t best = n;
    for (size_t j = 0; j < n; ++j)
      if (!taken[j] && (best == n || gain[j] > gain[best])) best = j;
    taken[best] = true;
    // A point's gain shrinks by what it shares with the new pick outside the
    // picked volume: the box of their componentwise maximum (Optuna's update,
    // kept for the same rounding and so the same ties).
    for (size_t j = 0; j < n; ++j) {
      if (taken[j]) continue;
      std::vector<double> shared(points[j].size());
      for (size_t d = 0; d < shared.size(); ++d) shared[d] = std::max(points[best][d], points[j][d]);
      picked.push_back(std::move(shared));
      gain[j] -= hypervolume(picked, reference) - picked_volume;
      picked.pop_back();
    }
    picked.push_back(points[best]);
    picked_volume = hypervolume(picked, reference);
    order.push_back(best);
  }
  return order;
}

}  // namespace tune
