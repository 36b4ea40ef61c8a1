// Extraction: one statement for the results (the metric, the iteration time
// and the schedulers' progress attribute), then per trial: its curve, its
// attempts as slot intervals, and the marks where the scheduler acted.
//
// The store has no "paused" or "promoted" event: a new attempt that follows
// neither a retry, an exploit nor an interruption is a pause and a promotion.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "search/search_space.h"
#include "storage/analysis.h"
#include "tuner/query/pareto_front.h"
#include "tuner/report/report_data.h"

namespace tune::report {
namespace {

constexpr const char* kIterationTime = "time_this_iter_s";
constexpr const char* kIteration = "training_iteration";

bool better(double a, double b, bool minimize) { return minimize ? a < b : a > b; }

// The progress attribute of a scheduler (docs/SCHEDULERS.md defaults).
std::string progress_attribute(const std::string& scheduler, const Json& params) {
  if (params.is_object() && params.contains("time_attr") && params["time_attr"].is_string()) {
    return params["time_attr"].get<std::string>();
  }
  const bool seconds = scheduler.rfind("median_stopping", 0) == 0 || scheduler == "pbt" || scheduler == "pb2";
  return seconds ? "time_total_s" : kIteration;
}

// A trial's rows in the columns, split by attempt.
struct Attempt {
  int number = 0;
  size_t first = 0, last = 0;  // row indices, inclusive
};

struct Context {
  const ResultColumns& columns;
  double origin = 0, now = 0;
  bool early_stopping = false;
  int64_t max_iterations = 0;
  std::set<std::pair<int64_t, int>> retries;           // (trial row, attempt) that failed and was retried
  std::vector<double> restarts;                        // interrupted / resumed: the sweep stopped there
  std::map<int64_t, std::vector<double>> exploits;     // trial row -> exploit times
  std::map<std::pair<int64_t, int>, const EventRecord*> starts;  // trial_started events

  Context(const ResultColumns& c, const std::vector<EventRecord>& events, const std::vector<ExploitRecord>& xs)
      : columns(c) {
    for (const auto& e : events) {
      const int attempt = json_field(e.detail, "attempt", 0);
      if (e.kind == "trial_retry" && e.trial_id) retries.insert({*e.trial_id, attempt});
      if (e.kind == "trial_started" && e.trial_id) starts[{*e.trial_id, attempt}] = &e;
      if (e.kind == "interrupted" || e.kind == "resumed") restarts.push_back(e.time);
    }
    for (const auto& x : xs) exploits[x.trial_id].push_back(x.time);
  }
  static bool any_between(const std::vector<double>& times, double from, double to) {
    for (double t : times) {
      if (t >= from && t <= to) return true;
    }
    return false;
  }
};

void add_mark(ExperimentData& data, const Context& ctx, const TrialData& trial, size_t row, MarkKind kind) {
  data.marks.push_back({trial.index, ctx.columns.iteration[row], ctx.columns.values[0][row],
                        result_value(ctx.columns, data.rung_attribute, row), kind});
}

void mark_attempts(ExperimentData& data, const Context& ctx, const TrialData& trial,
                   const std::vector<Attempt>& attempts) {
  const auto& time = ctx.columns.time;
  for (size_t a = 0; a + 1 < attempts.size(); ++a) {
    const Attempt& before = attempts[a];
    const Attempt& after = attempts[a + 1];
    const double from = time[before.last], to = time[after.first];
    if (ctx.retries.count({trial.row, before.number})) {
      add_mark(data, ctx, trial, before.last, MarkKind::kRetried);
      continue;
    }
    auto exploits = ctx.exploits.find(trial.row);
    if (exploits != ctx.exploits.end() && Context::any_between(exploits->second, from, to)) {
      add_mark(data, ctx, trial, before.last, MarkKind::kExploited);
    } else if (!Context::any_between(ctx.restarts, from, to)) {
      add_mark(data, ctx, trial, before.last, MarkKind::kPaused);
      add_mark(data, ctx, trial, after.first, MarkKind::kPromoted);
    }
  }
  if (attempts.empty()) return;
  const size_t last = attempts.back().last;
  if (trial.status == kError) add_mark(data, ctx, trial, last, MarkKind::kError);
  if (trial.status == kPaused) add_mark(data, ctx, trial, last, MarkKind::kPaused);
  if (trial.status == kTerminated && ctx.early_stopping && trial.iterations < ctx.max_iterations) {
    add_mark(data, ctx, trial, last, MarkKind::kStopped);
  }
}

// When each attempt held its slot. Its start is its first result's time less
// that iteration's duration, unless the driver recorded a trial_started event.
void add_intervals(ExperimentData& data, const Context& ctx, const TrialRecord& record,
                   const std::vector<Attempt>& attempts) {
  auto started = [&](int attempt) -> const EventRecord* {
    auto it = ctx.starts.find({record.id, attempt});
    return it == ctx.starts.end() ? nullptr : it->second;
  };
  auto push = [&](int attempt, double start, double end) {
    const EventRecord* event = started(attempt);
    Interval interval{record.trial_index, attempt, start, std::max(start, end), 0, ""};
    if (event) {
      interval.start = event->time - ctx.origin;
      interval.host = json_field(event->detail, "host", std::string());
    }
    data.intervals.push_back(interval);
  };
  const bool current_has_results = !attempts.empty() && attempts.back().number == record.attempts;
  for (const Attempt& a : attempts) {
    const double duration = result_value(ctx.columns, kIterationTime, a.first);
    double start = ctx.columns.time[a.first] - (std::isfinite(duration) ? duration : 0);
    double end = ctx.columns.time[a.last];
    if (a.number == record.attempts) {
      // A failure ends the attempt (its last iteration may have run long).
      // A TERMINATED trial's ended_at is no guide: one that ends while paused
      // (HyperBand's losers) ends long after it left its slot.
      if (record.status == kRunning) end = ctx.now;
      if (record.status == kError) end = std::max(end, record.ended_at);
    }
    push(a.number, start - ctx.origin, end - ctx.origin);
  }
  if (!current_has_results && record.attempts > 0 && record.status == kRunning && record.started_at > 0) {
    push(record.attempts, record.started_at - ctx.origin, ctx.now - ctx.origin);
  }
}

// The rows of each trial (columns are ordered by trial row id).
std::map<int64_t, std::pair<size_t, size_t>> rows_by_trial(const ResultColumns& columns) {
  std::map<int64_t, std::pair<size_t, size_t>> spans;
  for (size_t i = 0; i < columns.size(); ++i) {
    auto [it, fresh] = spans.try_emplace(columns.trial_id[i], i, i + 1);
    if (!fresh) it->second.second = i + 1;
  }
  return spans;
}

std::vector<Attempt> split_attempts(const ResultColumns& columns, size_t begin, size_t end) {
  std::vector<Attempt> attempts;
  for (size_t i = begin; i < end; ++i) {
    if (attempts.empty() || attempts.back().number != columns.attempt[i]) {
      attempts.push_back({columns.attempt[i], i, i});
    }
    attempts.back().last = i;
  }
  return attempts;
}

void fill_curve(TrialData& trial, const ResultColumns& columns, size_t begin, size_t end, size_t budget,
                const std::set<int64_t>& keep) {
  std::vector<double> x, y;
  for (size_t i = begin; i < end; ++i) {
    x.push_back(static_cast<double>(columns.iteration[i]));
    y.push_back(columns.values[0][i]);
  }
  std::vector<size_t> picked = downsample(x, y, budget);
  for (size_t i = 0; i < x.size(); ++i) {
    if (keep.count(static_cast<int64_t>(x[i])) && std::isfinite(y[i])) picked.push_back(i);
  }
  std::sort(picked.begin(), picked.end());
  picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
  for (size_t i : picked) {
    trial.curve_x.push_back(static_cast<int64_t>(x[i]));
    trial.curve_y.push_back(y[i]);
  }
}

void summarize_values(TrialData& trial, const ResultColumns& columns, size_t begin, size_t end, bool minimize,
                      double origin) {
  for (size_t i = begin; i < end; ++i) {
    const double v = columns.values[0][i];
    trial.end = columns.time[i] - origin;
    if (!std::isfinite(v)) continue;
    trial.value = v;
    if (!std::isfinite(trial.best) || better(v, trial.best, minimize)) trial.best = v;
  }
}

// The last finite value of `key` among rows [begin, end), NaN without one.
double last_value(const ResultColumns& columns, const std::string& key, size_t begin, size_t end) {
  for (size_t i = end; i > begin; --i) {
    const double v = result_value(columns, key, i - 1);
    if (std::isfinite(v)) return v;
  }
  return NAN;
}

std::vector<std::string> sampled_params(const std::vector<TrialData>& trials) {
  std::map<std::string, std::set<std::string>> seen;
  for (const auto& t : trials) {
    for (const auto& [key, value] : t.params.items()) seen[key].insert(value.dump());
  }
  std::vector<std::string> names;
  for (const auto& [key, values] : seen) {
    if (values.size() > 1 || trials.size() == 1) names.push_back(key);
  }
  return names;
}

}  // namespace

const char* mark_name(MarkKind kind) {
  switch (kind) {
    case MarkKind::kStopped: return "stopped";
    case MarkKind::kPaused: return "paused";
    case MarkKind::kPromoted: return "promoted";
    case MarkKind::kExploited: return "exploited";
    case MarkKind::kRetried: return "retried";
    case MarkKind::kError: return "error";
  }
  return "";
}

double result_value(const ResultColumns& columns, const std::string& key, size_t row) {
  if (key == kIteration) return static_cast<double>(columns.iteration[row]);
  for (size_t k = 0; k < columns.keys.size(); ++k) {
    if (columns.keys[k] == key) return columns.values[k][row];
  }
  return NAN;
}

ExperimentData extract_experiment(Store& store, const ExperimentRecord& experiment, const ReportOptions& options,
                                  double now) {
  ExperimentData data;
  data.record = experiment;
  data.metric = options.metric.empty() ? experiment.metric : options.metric;
  data.mode = !options.mode.empty() ? options.mode : experiment.mode.empty() ? "min" : experiment.mode;
  const Json& spec = experiment.spec;
  const Json scheduler = json_field(spec, "scheduler", Json::object());
  data.scheduler = json_field(scheduler, "type", std::string("fifo"));
  data.search = json_field(json_field(spec, "search", Json::object()), "algorithm", std::string());
  data.running = experiment.status == "RUNNING";
  data.wall_s = std::max(0.0, (data.running ? now : experiment.updated_at) - experiment.created_at);
  if (spec.is_object() && spec.contains("resources")) {
    const Json& r = spec["resources"];
    data.slots_per_trial = std::max(1, json_field(r, "workers", 1) * json_field(r, "cpus_per_worker", 1));
  }
  data.rung_attribute = progress_attribute(data.scheduler, json_field(scheduler, "params", Json::object()));
  data.objectives = internal::experiment_objectives(experiment);

  std::vector<std::string> keys = {data.metric, kIterationTime};
  if (data.rung_attribute != kIteration) keys.push_back(data.rung_attribute);
  for (const auto& objective : data.objectives) {
    if (std::find(keys.begin(), keys.end(), objective.metric) == keys.end()) keys.push_back(objective.metric);
  }
  data.objective_values.resize(data.objectives.size());
  const ResultColumns columns = store.result_columns(experiment.id, keys);
  const std::vector<EventRecord> events = store.events(experiment.id);
  const std::vector<ExploitRecord> exploits = store.exploits(experiment.id);
  const std::vector<TrialRecord> records = store.trials(experiment.id);
  data.results = columns.size();

  Context ctx(columns, events, exploits);
  ctx.origin = experiment.created_at;
  ctx.now = now;
  ctx.early_stopping = data.scheduler != "fifo" && data.scheduler != "pbt" && data.scheduler != "pb2";
  for (const auto& r : records) ctx.max_iterations = std::max(ctx.max_iterations, r.last_iteration);

  const auto spans = rows_by_trial(columns);
  const bool minimize = data.mode != "max";
  const size_t budget = std::max<size_t>(8, options.max_curve_points / std::max<size_t>(1, records.size()));
  data.trials.reserve(records.size());  // `best` points into it
  const TrialData* best = nullptr;
  for (const TrialRecord& record : records) {
    TrialData trial;
    trial.index = record.trial_index;
    trial.row = record.id;
    trial.status = record.status;
    trial.attempts = record.attempts;
    trial.error = record.error;
    trial.params = flatten(record.config);
    trial.iterations = record.last_iteration;
    auto span = spans.find(record.id);
    const size_t begin = span == spans.end() ? 0 : span->second.first;
    const size_t end = span == spans.end() ? 0 : span->second.second;
    summarize_values(trial, columns, begin, end, minimize, experiment.created_at);
    for (size_t k = 0; k < data.objectives.size(); ++k) {
      data.objective_values[k].push_back(last_value(columns, data.objectives[k].metric, begin, end));
    }
    const std::vector<Attempt> attempts = split_attempts(columns, begin, end);
    const size_t first_mark = data.marks.size();
    mark_attempts(data, ctx, trial, attempts);
    std::set<int64_t> keep;
    for (size_t m = first_mark; m < data.marks.size(); ++m) keep.insert(data.marks[m].iteration);
    fill_curve(trial, columns, begin, end, budget, keep);
    data.curve_points += trial.curve_x.size();
    add_intervals(data, ctx, record, attempts);
    if (std::isfinite(trial.value) && (!best || better(trial.value, best->value, minimize))) best = &trial;
    data.trials.push_back(std::move(trial));
    if (best == &trial) best = &data.trials.back();
  }
  if (best) {
    data.best_trial = best->index;
    data.best_checkpoint = best_checkpoint(store, best->row, data.mode);
  }
  for (size_t i : internal::pareto_order(data.objectives, data.objective_values)) data.pareto_front.push_back(data.trials[i].index);
  data.params = sampled_params(data.trials);
  data.lanes = assign_lanes(data.intervals);
  // The driver records the sweep's capacity when it starts: utilisation is
  // then of what the sweep had, not only of its peak.
  int capacity = 0;
  for (const auto& e : events) {
    if (e.kind != "started" || !e.detail.is_object()) continue;
    const int slots = json_field(e.detail, "slots", 0), per_trial = std::max(1, json_field(e.detail, "trial_slots", 1));
    capacity = std::max(capacity, slots / per_trial);
  }
  data.utilisation = utilisation(data.intervals, std::max(data.lanes, capacity));
  for (const auto& i : data.intervals) {
    if (!i.host.empty() && std::find(data.hosts.begin(), data.hosts.end(), i.host) == data.hosts.end()) {
      data.hosts.push_back(i.host);
    }
  }
  analyse_schedule(data, columns, spans);
  add_exploits(data, exploits);
  data.importance = parameter_importance(data.params, data.trials);
  return data;
}

}  // namespace tune::report
