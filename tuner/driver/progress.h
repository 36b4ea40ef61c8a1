// Internal: the progress table printed while a sweep runs (Ray-style).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tune::internal {

struct ProgressRow {
  int64_t trial_index;
  std::string status;
  nlohmann::json config;
  nlohmann::json last_result;
  std::string error;
};

// At most `max_rows` trials are listed (running first, then the best by
// metric); the header counts every status. The parameter columns are the
// sampled parameters (`sampled`, dotted paths, in that order, at most
// kMaxParamColumns); constants fill the columns only when nothing is sampled.
inline constexpr size_t kMaxParamColumns = 10;
// `eta_s`, when known, is shown after the elapsed time.
std::string render_progress(const std::string& experiment, const std::string& metric,
                            const std::string& mode, const std::vector<ProgressRow>& rows,
                            double elapsed_s, int used_slots, int slots, bool final,
                            const std::vector<std::string>& sampled = {}, size_t max_rows = 20,
                            std::optional<double> eta_s = std::nullopt,
                            const std::vector<std::string>& more_metrics = {});

// The rows render_progress() lists, in its order (running first, then by
// metric, best first, then by index), at most `max_rows`: indexes into `rows`.
// Only their config and last result are shown; of the others only status and
// the metric (in last_result) are read.
std::vector<size_t> progress_order(const std::string& metric, const std::string& mode,
                                   const std::vector<ProgressRow>& rows, size_t max_rows);

// What an ETA is estimated from.
struct EtaInput {
  int64_t total_trials = -1;          // the searcher's total; -1 = unbounded
  std::vector<double> finished_s;     // run time of each finished trial
  std::vector<double> running_s;      // run time so far of each running (or paused) trial
  int concurrency = 1;                // trials at once
  std::optional<double> budget_left;  // seconds left of stop.time_budget_s
};
// Seconds until the sweep ends: the trials not started take the mean finished
// trial's time, the running ones what they lack of it, `concurrency` at a
// time; capped by the time budget. nullopt before any trial has finished
// (and without a budget) or for an unbounded searcher without a budget.
std::optional<double> estimate_eta(const EtaInput& input);

// 75 -> "1m15s", 3725 -> "1h02m", 4.2 -> "4s".
std::string format_duration(double seconds);

// A plain text table with aligned columns.
std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);

// Short display of a JSON value (numbers with 5 significant digits).
std::string format_value(const nlohmann::json& value);

}  // namespace tune::internal
