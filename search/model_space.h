// Internal: the search space as model-based searchers see it, and the
// observation handling the bayes, tpe and nsga2 searchers share.
//
// Each sampled parameter becomes a numeric or categorical variable:
//   uniform / loguniform          continuous on [low, high] (log scale for log domains)
//   quniform / qloguniform         discrete: multiples of q in [low, high]
//   randint / lograndint           discrete integers in [low, high - 1]
//   qrandint / qlograndint         discrete multiples of q in [low, high]
//   randn / qrandn                 continuous (discrete with q) on mean +- 4 sd
//   choice                         categorical
//   grid_search                    rejected (ConfigError): model-based search picks values itself
// A variable's "internal" value is its position on the model's axis: the
// value, or its log for log domains, or the choice's index. Discrete numeric
// variables own the interval [v - q/2, v + q/2] around each allowed value v
// (in internal units) so that every value gets the same share of the axis.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/options.h"
#include "search/searcher.h"

namespace tune::internal {

struct ModelVariable {
  enum class Type { kContinuous, kDiscrete, kCategorical };
  std::string path;
  Type type = Type::kContinuous;
  bool log = false;
  bool integer = false;   // values are emitted as JSON integers
  double low = 0, high = 1;  // internal bounds (log applied; discrete widened by half a step)
  double q = 0;              // discrete: step in value units (>0)
  double kmin = 0, kmax = 0;  // discrete: allowed values are k * q for k in [kmin, kmax]
  double value_high = 0;      // continuous: values stay below this (Ray's [low, high))
  std::vector<Json> choices;  // categorical
};

class ModelSpace {
 public:
  // Throws ConfigError for grid_search parameters (naming `algorithm`).
  ModelSpace(const SearchSpace& space, const std::string& algorithm);

  const std::vector<ModelVariable>& variables() const { return variables_; }
  const SearchSpace& space() const { return space_; }

  // Internal value of variable v in a (nested) config; nullopt when absent or
  // not a valid value (e.g. a string for a numeric variable, an unknown choice).
  std::optional<double> internal(size_t v, const Json& config) const;
  // The value for an internal position (snapped to the allowed values and clamped).
  Json value(size_t v, double internal) const;
  // Snaps an internal position to the internal position of its value.
  double snap(size_t v, double internal) const;

  // Unit-cube encoding for the GP: one coordinate per numeric variable,
  // one per choice (one-hot) for categorical ones (none for a single choice).
  int unit_dims() const { return unit_dims_; }
  size_t offset(size_t v) const { return offsets_[v]; }
  // nullopt when some variable of the config cannot be encoded.
  std::optional<std::vector<double>> encode(const Json& config) const;
  // The config (constants included) for a point of the unit cube; categorical
  // coordinates pick the largest entry, numeric ones snap to allowed values.
  Json decode(const std::vector<double>& u) const;
  // encode(decode(u)): the point the config really is.
  std::vector<double> snap_unit(const std::vector<double>& u) const;
  // True for coordinates that vary continuously (refined by gradient steps).
  const std::vector<bool>& continuous_mask() const { return continuous_; }

  // A config from the given internal values (one per variable).
  Json config_from_internal(const std::vector<double>& internal) const;

 private:
  SearchSpace space_;
  std::vector<ModelVariable> variables_;
  std::vector<size_t> offsets_;
  std::vector<bool> continuous_;
  int unit_dims_ = 0;
};

// A finished trial reduced to what the models use.
struct ScoredTrial {
  int64_t index = 0;
  Json config;
  double loss = 0;     // metric oriented for minimization (negated for mode max)
  bool ok = false;     // false: failed, or no finite metric value
  double budget = 0;   // last_result.training_iteration (0 when absent)
  bool below_full_budget = false;  // stopped before the largest budget any ok trial reached
};

// The metric in a trial's last result (a dotted name reads a nested value)
// oriented for minimization (negated for mode max); nullopt when the trial
// failed or has no finite value for it.
std::optional<double> observed_loss(const Observation& o, const std::string& metric, const std::string& mode);

// Reads the metric from observations (error / missing / NaN -> ok = false)
// and marks trials stopped at a lower budget than the largest one seen.
// Sorted by trial index.
std::vector<ScoredTrial> score_trials(const std::vector<Observation>& observations, const std::string& metric,
                                      const std::string& mode);

// A fresh generator for (seed, stream, index): makes every suggestion a pure
// function of the seed, the trial index and the data.
std::mt19937_64 make_rng(uint64_t seed, uint64_t stream, uint64_t index);

// The reader of a model-based algorithm's options ("search.gamma must be a
// number in [1e-09, 1.0], got 2"). Throws ConfigError for a key not in
// `allowed` (with a did-you-mean).
OptionReader search_option_reader(const Json& params, const std::vector<std::string>& allowed,
                                  const std::string& algorithm);

// The model-based searchers (search/bayes_searcher.cpp, search/tpe_searcher.cpp).
std::unique_ptr<Searcher> make_bayes_searcher(const SearchOptions& options, uint64_t seed, const SearchSpace& space,
                                              const std::vector<Json>& points_to_evaluate, int64_t total);
std::unique_ptr<Searcher> make_tpe_searcher(const SearchOptions& options, uint64_t seed, const SearchSpace& space,
                                            const std::vector<Json>& points_to_evaluate, int64_t total);
// The "nsga2" searcher (search/nsga2_searcher.cpp): options.objectives, or
// the one metric/mode when it is empty.
std::unique_ptr<Searcher> make_nsga2_searcher(const SearchOptions& options, uint64_t seed, const SearchSpace& space,
                                              const std::vector<Json>& points_to_evaluate, int64_t total);

// tpe with several objectives (MOTPE, Optuna 3.1; search/motpe.cpp).
// The "below" group of n_below among `losses` (one vector per trial, oriented
// for minimization): whole non-dominated fronts while they fit, then greedy
// hypervolume subset selection in the front that does not; ascending indices.
std::vector<size_t> tpe_multi_objective_below(const std::vector<std::vector<double>>& losses, size_t n_below);
// The below points' weights in l(x): each one's hypervolume contribution
// among them plus 1e-12, divided by the largest (1 for a lone point).
std::vector<double> tpe_multi_objective_weights(const std::vector<std::vector<double>>& below);

// Testing hook: log-density of the TPE Parzen estimator built from the
// `observed` configs (one joint estimator over every variable), at `at`.
std::vector<double> tpe_parzen_log_pdf(const SearchSpace& space, const std::vector<Json>& observed,
                                       const std::vector<Json>& at, bool multivariate, bool exact_pdf = false);

}  // namespace tune::internal
