// Reading a multi-objective experiment back: its Pareto front, as `tune best`,
// `tune status`, the end-of-sweep summary and ResultGrid::pareto_front()
// compute it (Optuna's study.best_trials).
#pragma once

#include <string>
#include <vector>

#include "search/searcher.h"
#include "storage/store.h"

namespace tune::internal {

// The objectives an experiment was run with (its stored spec's
// `objectives`); empty for an experiment with one metric.
std::vector<Objective> experiment_objectives(const ExperimentRecord& experiment);

struct ParetoTrial {
  TrialRecord trial;
  std::vector<double> values;   // one per objective, as reported, taken through `scope`
  Json metrics;                 // the trial's last result
  std::string checkpoint_path;  // its best live checkpoint by the first objective ("" if none)
};

// The trials no other trial dominates: each objective of a trial is read from
// its results through `scope` (storage/analysis.h: "last" by default); a
// trial lacking one of the objectives takes no part. Trials in any status
// count, like best_trial's. Ordered by the first objective, best first (ties:
// lower trial index). Throws ConfigError for a bad scope or fewer than two
// objectives.
std::vector<ParetoTrial> pareto_trials(Store& store, const ExperimentRecord& experiment,
                                       const std::vector<Objective>& objectives, const std::string& scope = "last");

// The Pareto front of `values` (values[k][i]: objective k of point i, as
// reported; NaN where missing): the indices of the points with every
// objective that no other such point dominates, ordered by the first
// objective, best first (ties: lower index).
std::vector<size_t> pareto_order(const std::vector<Objective>& objectives,
                                 const std::vector<std::vector<double>>& values);

// "loss (min), latency_ms (min)".
std::string describe_objectives(const std::vector<Objective>& objectives);

}  // namespace tune::internal
