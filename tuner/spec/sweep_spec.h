// SweepSpec: everything that defines an experiment. The sweep file (YAML), the
// CLI and the C++ API all fill this one struct, so each default is written
// once, here. It round-trips through JSON so the store holds what resume needs.
//
//   tune::SweepSpec spec = tune::load_sweep_file("sweep.yaml");  // throws ConfigError
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/names.h"  // closest_match
#include "search/search_space.h"
#include "search/searcher.h"

namespace tune {

struct Resources {
  // Ranks per trial. 1: the trial runs in-process (thread) when its trainable
  // allows it, else as a 1-rank MPI group; N > 1: an MPI group of N ranks.
  // Default: 1.
  int workers = 1;
  // Cores each rank may use (intra-op threads). Slots used by a trial =
  // workers * cpus_per_worker. Default: 1.
  int cpus_per_worker = 1;
  // Force an MPI worker group even for workers == 1. Default: false.
  bool use_mpi = false;
  // GPUs each rank gets (its own CUDA_VISIBLE_DEVICES). Default: 0.
  int gpus_per_worker = 0;
  // Where a trial's ranks go when there are several hosts: "pack" (as few
  // hosts as possible) or "spread" (as many as possible). Default: "pack".
  std::string placement = "pack";
};

struct StopCriteria {
  // Stop a trial after this many results. Default: none.
  std::optional<int64_t> training_iteration;
  // Stop a trial when a metric crosses a threshold. For the experiment's
  // `metric` the direction follows `mode` (<= for min, >= for max); for any
  // other key a trial stops when result[key] >= value (Ray's rule).
  std::map<std::string, double> metric_thresholds;
  // Stop the whole sweep after this many seconds of wall time. Default: none.
  std::optional<double> time_budget_s;

  // Stop a trial whose metric has flattened out (Ray's TrialPlateauStopper):
  // once it has reported `grace_period` values of `metric`, when the standard
  // deviation of its last `num_results` is below `std` and, with
  // `metric_threshold`, its latest value is at least that good for `mode`.
  struct Plateau {
    std::string metric;  // default: the sweep's metric
    std::string mode;    // "min" | "max"; default: the sweep's mode (needed with metric_threshold)
    double std = 0.01;
    int64_t num_results = 4;
    int64_t grace_period = 4;
    std::optional<double> metric_threshold;
  };
  std::optional<Plateau> plateau;  // Default: none.

  // Stop the whole sweep once its best results agree (Ray's
  // ExperimentPlateauStopper): after each result, when the `top` best values
  // of `metric` so far (best for `mode`) have a standard deviation at most
  // `std`, for more than `patience` results in a row.
  struct ExperimentPlateau {
    std::string metric;  // default: the sweep's metric
    std::string mode;    // "min" | "max"; default: the sweep's mode
    double std = 0.001;
    int64_t top = 10;
    int64_t patience = 0;
  };
  std::optional<ExperimentPlateau> experiment_plateau;  // Default: none.
};

struct SchedulerOptions {
  // One of scheduler_names() (schedulers/scheduler.h): fifo, asha, hyperband,
  // median_stopping, pbt, pb2. Default: "fifo".
  std::string type = "fifo";
  Json params = Json::object();  // type-specific keys
};

struct CheckpointOptions {
  // Keep at most this many checkpoints per trial, best by score_attribute
  // (the latest is always kept as well, for restoring). 0 = keep all.
  // Default: 0.
  int num_to_keep = 0;
  // The metric that ranks checkpoints. Default: the experiment's metric.
  std::string score_attribute;
  // "min" | "max". Default: the experiment's mode.
  std::string score_order;
  // Every host sees the results directory at the same path: ranks write
  // checkpoints there directly instead of streaming them to the driver
  // (multi-host sweeps only). Default: false.
  bool shared_filesystem = false;
};

struct FailureOptions {
  // Retries of a failing trial (from its last checkpoint) before it is ERROR
  // for good. -1 = unlimited. Default: 0.
  int max_failures = 0;
  // A trial that reports nothing for this many seconds (a rank stuck in a
  // collective, a deadlock) is stopped and counts as a failure. Default:
  // none.
  std::optional<double> result_timeout_s;
  // A host whose trials are lost (processes killed, host unreachable) this
  // many times in a row takes no more trials until a check finds it healthy
  // again (host_check_interval_s). Default: 2.
  int max_host_failures = 2;
  // Several hosts: a host whose connections to the driver show no sign of
  // life for this long is unreachable; its groups are abandoned and their
  // attempts lost. Default: 10.
  double host_timeout_s = 10;
  // Several hosts: a worker group that has not connected to the driver this
  // long after its launch (ssh or srun hanging on a host, a daemon that
  // cannot reach back) is killed; its attempt is lost, blamed on its host
  // (several: each is checked). Default: 60.
  double start_timeout_s = 60;
  // A host taken out is checked again after this long, then twice as long
  // after each failed check (at most 5 min, or this if longer); it takes
  // trials again once a check passes. Default: 30.
  double host_check_interval_s = 30;
};

struct SweepSpec {
  std::string name;          // experiment name; default: "<trainable>-<timestamp>"
  std::string trainable;     // registered trainable name (CLI); empty for a C++ lambda
  std::string metric;        // default: none (then `best` needs --metric)
  std::string mode;          // "min" | "max"; required when metric is set
  // A multi-objective sweep (Optuna's `directions`, Ray Tune's metric and
  // mode lists): every metric with its mode, two or more. metric/mode are
  // then the first objective (left empty, the Tuner fills them in). The
  // sweep file writes `metric: [loss, latency]` with `mode: [min, min]` (or
  // one mode for all). Searched by nsga2, random or grid, scheduled FIFO;
  // the result is a Pareto front (ResultGrid::pareto_front, `tune best`).
  // Default: empty (one metric).
  std::vector<Objective> objectives;
  int64_t num_samples = 1;   // see make_searcher for the grid rule
  int max_concurrent_trials = 0;  // 0 = as many as the slots allow
  Resources resources;
  SearchOptions search;
  SchedulerOptions scheduler;
  StopCriteria stop;
  SearchSpace param_space;
  std::vector<Json> points_to_evaluate;
  CheckpointOptions checkpoint;
  FailureOptions failure;
  // What the trainable reads besides its config: the sweep file's `data:`
  // mapping and `preprocess:` list (e.g. a CSV and its preprocessors for
  // tabular trainables). Every trial sees them as Session::setup(); the
  // trainable's TrainableInfo::check_setup checks them before any trial
  // starts. Default: null (none).
  Json data;
  Json preprocess;
  // A command trainable (`trainable: {command: [...], cwd, env,
  // stop_grace_s}`): {"argv": [...], "cwd": absolute dir, "env": {...},
  // "stop_grace_s": s}; `trainable` is then "command". Null otherwise.
  Json command;

  // {"data": data, "preprocess": preprocess, "command": command (when set)}:
  // what Session::setup() returns.
  Json setup() const;

  // Throws ConfigError if inconsistent (mode without metric, bad values, bad
  // search or scheduler options...); the error's key_path() names the key.
  void validate() const;

  // `search` with the experiment's metric and mode filled in: what
  // make_searcher gets.
  SearchOptions search_options() const;

  Json to_json() const;
  static SweepSpec from_json(const Json& json);
};

// [{"metric": ..., "mode": ...}, ...]: how the store's spec_json and the
// CLI's JSON write `objectives`; objectives_from_json throws Json::exception
// if malformed.
Json objectives_to_json(const std::vector<Objective>& objectives);
std::vector<Objective> objectives_from_json(const Json& list);

// Reads and validates a sweep file. Throws ConfigError ("file:line: what") for
// unreadable files, invalid YAML, unknown keys (with a "did you mean" hint),
// wrong types, invalid domains and inconsistent options.
SweepSpec load_sweep_file(const std::string& path);
// Same, from text; `file` is used in messages.
SweepSpec parse_sweep(const std::string& yaml_text, const std::string& file);

}  // namespace tune
