// make_searcher: validation shared by every algorithm, then dispatch.
#include <algorithm>
#include <limits>
#include <random>

#include "base/names.h"
#include "search/model_space.h"
#include "search/searcher.h"
#include "base/error.h"

namespace tune {
namespace internal {
std::unique_ptr<Searcher> make_basic_variant_searcher(uint64_t seed, const SearchSpace& space, int64_t num_samples,
                                                      const std::vector<Json>& points_to_evaluate);
}  // namespace internal

namespace {

// options.objectives, when given: two or more distinct metrics with a mode
// each, the first being the experiment's metric/mode.
void check_objectives(const SearchOptions& options) {
  const auto& objectives = options.objectives;
  if (objectives.empty()) return;
  if (objectives.size() < 2)
    throw ConfigError("a multi-objective search needs two or more objectives, got " +
                      std::to_string(objectives.size()));
  for (size_t k = 0; k < objectives.size(); ++k) {
    const Objective& o = objectives[k];
    if (o.metric.empty()) throw ConfigError("objective " + std::to_string(k + 1) + " has no metric name");
    if (o.mode != "min" && o.mode != "max")
      throw ConfigError("objective '" + o.metric + "' needs mode min or max, got '" + o.mode + "'");
    for (size_t j = 0; j < k; ++j)
      if (objectives[j].metric == o.metric) throw ConfigError("metric '" + o.metric + "' is listed twice");
  }
  if (!(objectives[0] == Objective{options.metric, options.mode}))
    throw ConfigError("the first objective (" + objectives[0].metric + ", " + objectives[0].mode +
                      ") must be the experiment's metric and mode (" + options.metric + ", " + options.mode + ")");
}

}  // namespace

std::unique_ptr<Searcher> make_searcher(const SearchOptions& options, const SearchSpace& space,
                                        int64_t num_samples, const std::vector<Json>& points_to_evaluate) {
  const auto& names = searcher_names();
  if (std::find(names.begin(), names.end(), options.algorithm) == names.end()) {
    const std::string hint = did_you_mean(options.algorithm, names);
    throw ConfigError::at("search.algorithm", "unknown search algorithm '" + options.algorithm + "'" +
                                                  (hint.empty() ? " (expected random, grid, bayes, tpe or nsga2)" : hint));
  }
  check_objectives(options);
  if (num_samples < 1)
    throw ConfigError("num_samples must be a positive integer, got " + std::to_string(num_samples));
  for (const auto& point : points_to_evaluate)
    if (!point.is_object()) throw ConfigError("points_to_evaluate entries must be objects, got " + point.dump());
  if (!options.params.is_object())
    throw ConfigError::at("search", "search options must be a mapping, got " + options.params.dump());
  const uint64_t seed = options.seed ? *options.seed
                                     : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  if (options.algorithm == "random" || options.algorithm == "grid") {
    internal::search_option_reader(options.params, {}, options.algorithm);
    const int64_t grid = space.grid_size();
    if (num_samples > std::numeric_limits<int64_t>::max() / grid)
      throw ConfigError("num_samples times the grid size is too large");
    return internal::make_basic_variant_searcher(seed, space, num_samples, points_to_evaluate);
  }
  if (options.metric.empty() || (options.mode != "min" && options.mode != "max"))
    throw ConfigError::at("search", "search algorithm '" + options.algorithm +
                                        "' needs the experiment's metric and mode (min or max)");
  const int64_t total = std::max<int64_t>(num_samples, static_cast<int64_t>(points_to_evaluate.size()));
  if (options.algorithm == "nsga2")
    return internal::make_nsga2_searcher(options, seed, space, points_to_evaluate, total);
  if (options.algorithm == "tpe")
    return internal::make_tpe_searcher(options, seed, space, points_to_evaluate, total);
  if (!options.objectives.empty())
    throw ConfigError::at("search.algorithm",
                          "search algorithm 'bayes' optimizes one metric; with several metrics use nsga2, tpe, "
                          "random or grid");
  return internal::make_bayes_searcher(options, seed, space, points_to_evaluate, total);
}

const std::vector<std::string>& searcher_names() {
  static const std::vector<std::string> names = {"random", "grid", "bayes", "tpe", "nsga2"};
  return names;
}

}  // namespace tune
