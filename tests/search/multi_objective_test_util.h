// Helpers for the multi-objective searcher tests (nsga2, tpe with several
// objectives): ZDT1 on the unit cube, driven with up to `concurrency` trials pending.
#pragma once

#include <algorithm>
#include <cmath>
#include <deque>
#include <string>
#include <vector>

#include "base/error.h"
#include "model_searcher_test_util.h"
#include "search/searcher.h"

namespace tune::testing_util {

inline SearchOptions two_objectives(const std::string& algorithm, uint64_t seed, Json params = Json::object()) {
  SearchOptions o = model_options(algorithm, seed, std::move(params));
  o.metric = "f1";
  o.objectives = {{"f1", "min"}, {"f2", "min"}};
  return o;
}

inline SearchSpace unit_cube(int n) {
  SearchSpace space;
  for (int k = 0; k < n; ++k) space.add("x" + std::to_string(k), uniform(0, 1));
  return space;
}

// ZDT1 (Zitzler, Deb, Thiele 2000): the Pareto front is f2 = 1 - sqrt(f1)
// where x1..x(n-1) = 0.
inline std::vector<double> zdt1(const Json& c) {
  const int n = static_cast<int>(c.size());
  const double f1 = c["x0"].get<double>();
  double sum = 0;
  for (int k = 1; k < n; ++k) sum += c["x" + std::to_string(k)].get<double>();
  const double g = 1 + 9 * sum / (n - 1);
  return {f1, g * (1 - std::sqrt(f1 / g))};
}

inline Json result_of(const std::vector<double>& f) { return {{"f1", f[0]}, {"f2", f[1]}, {"training_iteration", 1}}; }

// Suggests `budget` configs keeping up to `concurrency` pending (the oldest
// finishes first); returns every objective vector.
inline std::vector<std::vector<double>> drive_zdt1(Searcher& searcher, int64_t budget, int concurrency,
                                       std::vector<Json>* configs = nullptr) {
  std::vector<Json> local;
  std::vector<Json>& seen = configs ? *configs : local;
  std::vector<std::vector<double>> values;
  std::deque<int64_t> pending;
  int64_t next = 0;
  while (next < budget || !pending.empty()) {
    while (next < budget && static_cast<int>(pending.size()) < concurrency) {
      seen.push_back(*searcher.suggest(next));
      pending.push_back(next++);
    }
    const int64_t index = pending.front();
    pending.pop_front();
    const Json& config = seen[static_cast<size_t>(index)];
    values.push_back(zdt1(config));
    searcher.on_complete({index, config, result_of(values.back()), false});
  }
  return values;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// what() of the ConfigError make_searcher throws for `options` on a 2-D cube,
// or "no error".
inline std::string error_of(const SearchOptions& options) {
  try {
    make_searcher(options, unit_cube(2), 5, {});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace tune::testing_util
