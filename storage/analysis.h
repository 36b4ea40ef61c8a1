// Reading results back: the best trial by a metric, as `tune best` and
// ResultGrid::best() compute it. Works on a Store, so it gives the same answer
// while a sweep runs, after it, and from another process.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "storage/store.h"

namespace tune {

// How one number per trial is taken from its results (Ray's `scope`):
//   "last"        the metric in the trial's last result (default)
//   "all"         the best value over all its results (min or max per mode)
//   "avg"         the mean over all its results
//   "last-5-avg"  the mean over its last 5 results; "last-10-avg" likewise
// Results without the metric (or with a non-finite value) are skipped.
std::optional<double> trial_score(const std::vector<ResultRecord>& results,
                                  const std::string& metric, const std::string& mode,
                                  const std::string& scope);

// Throws ConfigError for an unknown scope or mode.
void check_scope(const std::string& scope);

struct BestTrial {
  TrialRecord trial;
  double score = 0;
  Json metrics;                 // the result the score came from ("last"/"all") or the last one
  std::string checkpoint_path;  // the trial's best live checkpoint ("" if none)
};

// The best trial of an experiment (ties: lower trial index). Trials in any
// status count; ERROR trials too if they have results. nullopt if no trial has
// the metric. Throws ConfigError for a bad mode/scope.
std::optional<BestTrial> best_trial(Store& store, const ExperimentRecord& experiment,
                                    const std::string& metric, const std::string& mode,
                                    const std::string& scope = "last");

// The checkpoint of `trial` that is best by `metric`/`mode` (by recorded score
// when present, else the latest). "" if the trial has none.
std::string best_checkpoint(Store& store, int64_t trial_id, const std::string& mode);
// best_checkpoint() of every trial of an experiment that has a checkpoint, by
// trial id, from one query.
std::map<int64_t, std::string> best_checkpoints(Store& store, int64_t experiment_id, const std::string& mode);

// The checkpoint `tune predict` and `tune serve` use: the best trial of
// `experiment` in the store at `storage` by `metric`/`mode` (default: the
// experiment's), scope "last", and its best kept checkpoint. A store moved
// since the sweep still works: a recorded path that no longer exists is
// looked up as STORAGE/EXPERIMENT/<the part after /EXPERIMENT/>. Throws
// NotFoundError (no store, experiment, trial with the metric, or checkpoint)
// or ConfigError (no metric/mode, or no metric given for an experiment with
// several).
struct BestCheckpoint {
  std::string path;        // an existing directory
  std::string trial_name;  // "trial_00003"
  std::string metric;
  double score = 0;
};
BestCheckpoint find_best_checkpoint(const std::string& storage, const std::string& experiment,
                                    const std::string& metric = "", const std::string& mode = "");

}  // namespace tune
