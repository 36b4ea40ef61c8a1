// Helpers for the bayes / tpe searcher tests: drive a searcher on a function.
#pragma once

#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <vector>

#include "search/searcher.h"

namespace tune::testing_util {

inline SearchOptions model_options(const std::string& algorithm, uint64_t seed, Json params = Json::object(),
                                   const std::string& mode = "min") {
  SearchOptions o;
  o.algorithm = algorithm;
  o.seed = seed;
  o.params = std::move(params);
  o.metric = "loss";
  o.mode = mode;
  return o;
}

inline Observation finished(int64_t index, const Json& config, double loss) {
  return {index, config, Json{{"loss", loss}, {"training_iteration", 1}}, false};
}

struct Run {
  std::vector<Json> configs;
  std::vector<double> losses;
  double best = std::numeric_limits<double>::infinity();
};

// Suggests `budget` configs keeping up to `concurrency` trials pending (the
// oldest finishes first) and reports f(config) as "loss".
inline Run drive(Searcher& searcher, int64_t budget, int concurrency, const std::function<double(const Json&)>& f) {
  Run run;
  std::deque<int64_t> pending;
  int64_t next = 0;
  while (next < budget || !pending.empty()) {
    while (next < budget && static_cast<int>(pending.size()) < concurrency) {
      auto config = searcher.suggest(next);
      if (!config) break;
      run.configs.push_back(*config);
      pending.push_back(next++);
    }
    if (pending.empty()) break;
    const int64_t index = pending.front();
    pending.pop_front();
    const double loss = f(run.configs[static_cast<size_t>(index)]);
    run.losses.push_back(loss);
    run.best = std::min(run.best, loss);
    searcher.on_complete(finished(index, run.configs[static_cast<size_t>(index)], loss));
  }
  return run;
}

}  // namespace tune::testing_util
