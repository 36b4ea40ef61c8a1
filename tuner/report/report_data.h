// Internal: what an HTML report shows of one experiment, taken from the store
// (report_data.cpp) and analysed (report_analysis.cpp) before it is written
// as the page's JSON (report_json.cpp). Plain data, no I/O after extraction.
//
// Times are seconds since the experiment's creation. A metric value that is
// missing, null in the store (NaN/inf when reported) or not a number is NaN.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "search/searcher.h"
#include "storage/store.h"
#include "tuner/report/report.h"

namespace tune::report {

// A point on a trial's learning curve where something happened to it.
enum class MarkKind { kStopped, kPaused, kPromoted, kExploited, kRetried, kError };
const char* mark_name(MarkKind kind);

struct Mark {
  int64_t trial = 0;      // trial index
  int64_t iteration = 0;  // training_iteration of the result it sits on
  double value = 0;       // the metric there (NaN when the result has none)
  double progress = 0;    // the scheduler's progress attribute there (NaN if absent)
  MarkKind kind = MarkKind::kStopped;
};

struct TrialData {
  int64_t index = 0;
  int64_t row = 0;                // trials.id
  std::string status;
  int attempts = 0;
  std::string error;
  Json params;                    // flattened config: {"a.b": value}
  double value = NAN;             // the metric in its last result that has it (`tune best`'s "last")
  double best = NAN;              // its best over all results (by mode)
  int64_t iterations = 0;         // last iteration reported
  double end = NAN;               // time of its last result
  std::vector<int64_t> curve_x;   // learning curve (iterations), downsampled
  std::vector<double> curve_y;
};

// One attempt of a trial holding a slot, [start, end].
struct Interval {
  int64_t trial = 0;
  int attempt = 0;
  double start = 0, end = 0;
  int lane = 0;      // 0.. within its host, assigned so intervals never overlap
  std::string host;  // "" unless the driver recorded it (trial_started events)
};

// A successive-halving rung: trials that reached `milestone` of the rung
// attribute, and the value each had there.
struct RungData {
  double milestone = 0;
  std::vector<int64_t> trials;
  std::vector<double> values;
  std::vector<bool> continued;  // went on past the rung
  double cutoff = NAN;          // the worst value among those that went on
};

// Median stopping: the median over trials of their running mean of the
// metric at each point of the progress attribute (what a trial must beat).
struct MedianCurve {
  std::string attribute;
  std::vector<double> progress, median;
};

struct ExploitData {
  int64_t trial = 0, donor = 0;  // trial indices
  int64_t iteration = 0, donor_iteration = 0;
  double time = 0;
  Json changes;  // {"lr": [old, new]} for each flattened key that changed
};

struct Importance {
  std::string param;
  double value = 0;  // share of the metric's variance explained, sums to 1
};

struct ExperimentData {
  ExperimentRecord record;
  std::string metric, mode;       // what is plotted (options or the experiment's)
  std::string scheduler, search;  // types from the spec
  double wall_s = 0;              // creation to last update (to now while running)
  bool running = false;
  std::vector<std::string> params;      // sampled parameters (values differ across trials)
  std::vector<TrialData> trials;        // by index
  std::vector<Mark> marks;
  std::vector<Interval> intervals;
  std::vector<std::string> hosts;       // empty: one unnamed host
  int lanes = 0;                        // peak concurrent trials (per host, at most)
  int slots_per_trial = 1;
  double utilisation = NAN;             // busy lane-seconds / (lanes x span)
  std::string rung_attribute;
  std::vector<RungData> rungs;
  MedianCurve median;
  std::vector<ExploitData> exploits;
  std::vector<Importance> importance;
  int64_t best_trial = -1;              // index, by `value` (ties: lower index)
  std::string best_checkpoint;
  // A multi-objective experiment (its stored spec's objectives; empty with
  // one metric): each objective's value per trial, in `trials` order, taken
  // as TrialData::value is (its last result that has it), and the Pareto
  // front as `tune best` gives it (trial indices, by the first objective,
  // best first).
  std::vector<Objective> objectives;
  std::vector<std::vector<double>> objective_values;  // [objective][trial]
  std::vector<int64_t> pareto_front;
  size_t results = 0;                   // results read
  size_t curve_points = 0;              // points kept in the curves
};

// Reads everything the report shows of `experiment` in one pass over its
// results. `now` (unix seconds) ends the intervals of running trials.
ExperimentData extract_experiment(Store& store, const ExperimentRecord& experiment,
                                  const ReportOptions& options, double now);

// A field of the rest of an experiment's data: its path in the experiment's
// object ("trials.status"; "trials.p.0" for the first part of "trials.p[]")
// and its value as JSON text.
struct LaterField {
  std::string path;
  std::string json;
};

// Appends the experiment as the JSON the page reads (report_json.cpp; the
// layout is documented at the top of report_assets/report.js): to `out` the
// object with what the first screen's charts need, to `later` the rest a
// field at a time (the fields `out`'s "later" lists), which the page reads
// when it needs them.
void append_experiment_json(std::string& out, std::vector<LaterField>& later, const ExperimentData& data);

// --- analysis (report_analysis.cpp, report_schedule.cpp), separate for tests

// columns' value of `key` in `row` (training_iteration is the iteration).
double result_value(const ResultColumns& columns, const std::string& key, size_t row);

// Rungs (ASHA, HyperBand) or the median curve (median stopping) from the
// trials' results; `spans` are each trial row's [begin, end) in `columns`.
void analyse_schedule(ExperimentData& data, const ResultColumns& columns,
                      const std::map<int64_t, std::pair<size_t, size_t>>& spans);
// PBT lineage: each exploit with trial indices and the flattened keys it changed.
void add_exploits(ExperimentData& data, const std::vector<ExploitRecord>& exploits);

// First-order variance decomposition with quantile bins (numbers) or one bin
// per value (anything else): for each parameter, the variance of the bin
// means of `values` over their total variance, normalised to sum to 1.
// Trials with a NaN value are left out; empty when fewer than 3 remain or no
// parameter explains any variance.
std::vector<Importance> parameter_importance(const std::vector<std::string>& params,
                                             const std::vector<TrialData>& trials);

// Largest-triangle-three-buckets: indices of at most `budget` points of
// (x, y) keeping its shape, always the first and last. NaN y values are
// dropped first.
std::vector<size_t> downsample(const std::vector<double>& x, const std::vector<double>& y,
                               size_t budget);

// Assigns each interval the lowest lane free at its start (per host); returns
// the number of lanes used, the peak concurrency.
int assign_lanes(std::vector<Interval>& intervals);
// Busy lane-seconds over lanes x (last end - first start); NaN without intervals.
double utilisation(const std::vector<Interval>& intervals, int lanes);

// A trial's results as the analyses need them: (progress, value) in the
// order reported.
struct TrialProgress {
  int64_t trial = 0;
  std::vector<double> progress, values;
};

// Rungs at `milestones` (ascending); `minimize` orders the cut-off.
std::vector<RungData> rung_data(const std::vector<TrialProgress>& trials,
                                const std::vector<double>& milestones, bool minimize);

// The median of running means at up to `points` progress values.
MedianCurve median_curve(const std::vector<TrialProgress>& trials, size_t points);

}  // namespace tune::report
