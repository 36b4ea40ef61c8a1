// Searcher: proposes trial configs.
//
// Contract: the driver calls suggest(i) with i = 0, 1, 2, ... (the trial's
// index in the experiment). A searcher returns std::nullopt when it has no
// more configs to give (done() is then true). Results flow back through
// on_result / on_complete. Searchers are pure logic: no I/O, no threads, not
// thread safe (the driver calls them from its one event-loop thread).
//
// Resume: the driver rebuilds a searcher with the same options and calls
// restore(n, observations) with the number of configs already handed out and
// the results recorded so far; suggest(n) then continues the same stream, so a
// seeded run resumed after a crash proposes the same configs as an
// uninterrupted one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/search_space.h"

namespace tune {

// One of the metrics a multi-objective sweep optimizes together (Optuna's
// `directions`, Ray Tune's metric/mode lists).
struct Objective {
  std::string metric;
  std::string mode;  // "min" | "max"
  bool operator==(const Objective& o) const { return metric == o.metric && mode == o.mode; }
};

// Options shared by the sweep file's `search:` block, the CLI and the C++ API.
struct SearchOptions {
  // "random" | "grid" | "bayes" | "tpe" | "nsga2". Default: "random".
  std::string algorithm = "random";
  // Seed of the sample stream. Default: unset (a random seed is drawn and
  // recorded in the store, so `tune resume` continues the same stream).
  std::optional<uint64_t> seed;
  // Algorithm-specific options (the other keys of the sweep file's `search:`
  // block), e.g. {"n_initial_points": 10, "acquisition": "log-ei"}; validated
  // by make_searcher (docs/SEARCH.md lists them). random/grid take none.
  Json params = Json::object();
  // The metric to optimize and "min" | "max"; the driver fills them from the
  // experiment. Required by bayes, tpe and nsga2.
  std::string metric, mode;
  // A multi-objective sweep: every metric with its mode, two or more, the
  // first being metric/mode. Empty with one metric. Accepted by nsga2, tpe
  // (Optuna's multi-objective TPE), random and grid; bayes models one metric
  // and refuses it (ConfigError).
  std::vector<Objective> objectives;
};

// One finished trial, as the searcher sees it.
struct Observation {
  int64_t trial_index = 0;
  Json config;
  Json last_result;  // null when the trial produced no result
  bool error = false;
  // restore() only: the trial was suggested but has not finished (it will be
  // re-run with this config); model-based searchers count it as pending.
  bool running = false;
};

class Searcher {
 public:
  virtual ~Searcher() = default;

  // The config for trial `trial_index`, or nullopt when exhausted.
  virtual std::optional<Json> suggest(int64_t trial_index) = 0;
  // An intermediate result of a running trial. Default: ignored.
  virtual void on_result(int64_t /*trial_index*/, const Json& /*result*/) {}
  // The trial finished (terminated, stopped or failed for good).
  virtual void on_complete(const Observation& /*observation*/) {}
  // Total number of configs this searcher will produce, or -1 if unbounded.
  virtual int64_t total() const = 0;
  // Fast-forwards to `suggested` configs already produced (see header comment).
  virtual void restore(int64_t suggested, const std::vector<Observation>& observations) = 0;
};

// Builds the searcher for options.algorithm. Throws ConfigError (no
// file/line; the caller adds them) for an unknown algorithm, bad params, a
// space the algorithm cannot search, a missing metric/mode for bayes, tpe or
// nsga2, malformed objectives, or objectives given to bayes.
//
// "bayes", "tpe" and "nsga2" (search/bayes_searcher.cpp,
// search/tpe_searcher.cpp, search/nsga2_searcher.cpp, docs/SEARCH.md):
// points_to_evaluate first, then model-based suggestions; total =
// max(num_samples, len(points_to_evaluate)); grid_search is rejected.
//
// The "random" / "grid" searcher (Ray's BasicVariantGenerator semantics):
// points_to_evaluate come first (missing keys are sampled) and count toward
// num_samples; then each of the space's grid combinations is repeated
// num_samples times (grid varies fastest across consecutive trials), so the
// total is max(num_samples * grid_size, len(points_to_evaluate)).
// "grid" is the same generator; with no grid_search parameter and no sampled
// domain it yields exactly num_samples identical configs.
//
// Each config is a pure function of (seed, trial_index), which makes resume
// exact and suggest() O(parameters).
std::unique_ptr<Searcher> make_searcher(const SearchOptions& options, const SearchSpace& space,
                                        int64_t num_samples,
                                        const std::vector<Json>& points_to_evaluate);

// The algorithm names make_searcher accepts.
const std::vector<std::string>& searcher_names();

}  // namespace tune
