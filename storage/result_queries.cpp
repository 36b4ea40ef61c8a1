// Whole-experiment reads: one statement each, results filtered by the
// experiment's trial ids rather than joined.
#include "storage/internal/result_queries.h"

#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/json.h"
#include "storage/internal/json_scan.h"
#include "storage/internal/rows.h"

namespace tune::storage_internal {
namespace {

constexpr const char* kExperimentResults =
    "SELECT r.id, r.trial_id, r.iteration, r.attempt, r.time, r.metrics_json FROM results r"
    " WHERE r.trial_id IN (SELECT id FROM trials WHERE experiment_id = ?)"
    " ORDER BY r.trial_id, r.id";
// The same rows in storage order: one sequential pass over the table (the
// unary + keeps SQLite off the trial index, whose lookups cost more than
// reading every page once), regrouped by trial afterwards.
constexpr const char* kExperimentResultsScan =
    "SELECT r.trial_id, r.iteration, r.attempt, r.time, r.metrics_json FROM results r"
    " WHERE +r.trial_id IN (SELECT id FROM trials WHERE experiment_id = ?)"
    " ORDER BY r.id";
constexpr const char* kExperimentEvents =
    "SELECT id, trial_id, time, kind, detail_json FROM events WHERE experiment_id = ? ORDER BY id";
// A walk of the rowids after ?1 (to ?2), not of the experiment's index (the
// unary + keeps the planner off it): a driver polls this every second, and
// the index walk read every event of the sweep each time (~30 ms a poll at
// 200,000 events, a stall of the loop's answers).
constexpr const char* kEventsAfter =
    "SELECT id, trial_id, time, kind, detail_json FROM events"
    " WHERE id > ?1 AND id <= ?2 AND +experiment_id = ?3 AND kind = ?4 ORDER BY id";
constexpr const char* kNewestEvent = "SELECT coalesce(max(id), 0) FROM events";

// Rows whose text the scanner refuses (escaped keys) take the slow path.
void parse_numbers(const char* text, size_t size, const std::vector<std::string>& keys, double* out) {
  const Json metrics = parse_json(std::string_view(text, size));
  for (size_t k = 0; k < keys.size(); ++k) {
    out[k] = NAN;
    if (!metrics.is_object()) continue;
    auto it = metrics.find(keys[k]);
    if (it != metrics.end() && it->is_number()) out[k] = it->get<double>();
  }
}

}  // namespace

namespace {
std::vector<EventRecord> event_rows(SQLite::Statement& s) {
  std::vector<EventRecord> out;
  while (s.executeStep()) {
    EventRecord e;
    e.id = s.getColumn(0).getInt64();
    if (!s.getColumn(1).isNull()) e.trial_id = s.getColumn(1).getInt64();
    e.time = time_column(s.getColumn(2));
    e.kind = s.getColumn(3).getString();
    e.detail = json_column(s.getColumn(4), "events");
    out.push_back(std::move(e));
  }
  return out;
}
}  // namespace

std::vector<EventRecord> read_events(SQLite::Database& db, int64_t experiment_id) {
  SQLite::Statement s(db, kExperimentEvents);
  s.bind(1, experiment_id);
  return event_rows(s);
}

std::vector<EventRecord> read_events_after(SQLite::Database& db, int64_t experiment_id, const std::string& kind,
                                           int64_t after_id, int64_t* newest) {
  const int64_t last = db.execAndGet(kNewestEvent).getInt64();
  SQLite::Statement s(db, kEventsAfter);
  s.bind(1, after_id);
  s.bind(2, last);
  s.bind(3, experiment_id);
  s.bind(4, kind);
  std::vector<EventRecord> out = event_rows(s);
  if (newest) *newest = std::max(after_id, last);
  return out;
}

// Rows arrive in storage order (one sequential pass over the table); a
// stable sort by trial then groups each trial's rows, still in report order.
void group_by_trial(ResultColumns& c) {
  std::vector<size_t> order(c.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return c.trial_id[a] < c.trial_id[b]; });
  auto permute = [&](auto& column) {
    auto copy = column;
    for (size_t i = 0; i < order.size(); ++i) column[i] = copy[order[i]];
  };
  permute(c.trial_id);
  permute(c.iteration);
  permute(c.attempt);
  permute(c.time);
  for (auto& values : c.values) permute(values);
}

ResultColumns read_result_columns(SQLite::Database& db, int64_t experiment_id,
                                  const std::vector<std::string>& keys) {
  SQLite::Statement s(db, kExperimentResultsScan);
  s.bind(1, experiment_id);
  ResultColumns out;
  out.keys = keys;
  out.values.resize(keys.size());
  std::vector<double> row(keys.size());
  while (s.executeStep()) {
    out.trial_id.push_back(s.getColumn(0).getInt64());
    out.iteration.push_back(s.getColumn(1).getInt64());
    out.attempt.push_back(s.getColumn(2).getInt());
    out.time.push_back(time_column(s.getColumn(3)));
    const SQLite::Column metrics = s.getColumn(4);
    const char* text = metrics.isNull() ? "{}" : metrics.getText();
    const size_t size = metrics.isNull() ? 2 : static_cast<size_t>(metrics.getBytes());
    if (!scan_numbers(std::string_view(text, size), keys, row.data())) {
      parse_numbers(text, size, keys, row.data());
    }
    for (size_t k = 0; k < keys.size(); ++k) out.values[k].push_back(row[k]);
  }
  if (!std::is_sorted(out.trial_id.begin(), out.trial_id.end())) group_by_trial(out);
  return out;
}

void visit_results(SQLite::Database& db, int64_t experiment_id,
                   const std::function<void(const ResultRecord&)>& visit) {
  SQLite::Statement s(db, kExperimentResults);
  s.bind(1, experiment_id);
  ResultRecord r;
  while (s.executeStep()) {
    r.id = s.getColumn(0).getInt64();
    r.trial_id = s.getColumn(1).getInt64();
    r.iteration = s.getColumn(2).getInt64();
    r.attempt = s.getColumn(3).getInt();
    r.time = time_column(s.getColumn(4));
    r.metrics = json_column(s.getColumn(5), "results");
    visit(r);
  }
}

}  // namespace tune::storage_internal
