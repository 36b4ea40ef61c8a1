#include "tuner/cli/queries.h"

#include <algorithm>
#include <ctime>
#include <map>

#include <fmt/format.h>

#include "search/search_space.h"
#include "storage/store.h"
#include "storage/analysis.h"
#include "base/error.h"
#include "base/json.h"
#include "tuner/query/experiment_access.h"
#include "base/names.h"
#include "tuner/query/pareto_front.h"
#include "tuner/driver/progress.h"
#include "tuner/spec/sweep_spec.h"
#include "tuner/exec/session_base.h"
#include "tuner/cli/trial_filter.h"

namespace tune::cli {
namespace {

using internal::format_value;
using internal::matches;
using internal::parse_filter;
using internal::render_table;

// Metrics the driver adds to every result; hidden from the trials table.
bool is_auto_metric(const std::string& key) {
  return key == "training_iteration" || key == "time_this_iter_s" || key == "timestamp";
}

std::unique_ptr<Store> open_store(const QueryOptions& options) { return internal::open_store(options.storage); }

ExperimentRecord find(Store& store, const QueryOptions& options) {
  return internal::find_experiment(store, options.storage, options.experiment);
}

std::string time_text(double seconds) {
  if (seconds <= 0) return "";
  std::time_t t = static_cast<std::time_t>(seconds);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buffer;
}

// One row of `tune trials`: named cells as JSON values.
Json trial_row(Store& store, const TrialRecord& trial, const std::string& mode) {
  Json row = {{"trial", trial_folder_name(trial.trial_index)}, {"status", trial.status}};
  const Json params = flatten(trial.config);  // named: items() must not outlive it
  for (const auto& [key, value] : params.items()) row[key] = value;
  row["iter"] = trial.last_iteration;
  if (trial.last_result.is_object()) {
    for (const auto& [key, value] : trial.last_result.items()) {
      if (!is_auto_metric(key) && !row.contains(key)) row[key] = value;
    }
  }
  row["error"] = trial.error.empty() ? Json(nullptr) : Json(trial.error);
  (void)store;
  (void)mode;
  return row;
}

}  // namespace

std::string csv_cell(const std::string& text) {
  auto control = [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\t' && c != '\n') || byte == 0x7f;
  };
  if (text.find_first_of(",\"\n") == std::string::npos && std::none_of(text.begin(), text.end(), control))
    return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') {
      quoted += "\"\"";
    } else if (control(c)) {
      quoted += one_line(std::string(1, c));  // \u0000, \r: no raw control byte in the file
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

int list_experiments(const QueryOptions& options, std::ostream& out) {
  auto store = open_store(options);
  Json list = Json::array();
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : store->experiments()) {
    auto trials = store->trials(e.id);
    std::map<std::string, int> counts;
    for (const auto& t : trials) counts[t.status]++;
    const auto objectives = internal::experiment_objectives(e);
    Json entry = {{"name", e.name}, {"status", e.status}, {"metric", e.metric}, {"mode", e.mode},
                  {"trials", trials.size()}, {"counts", counts}, {"created_at", e.created_at},
                  {"updated_at", e.updated_at}};
    if (!objectives.empty()) entry["objectives"] = objectives_to_json(objectives);
    list.push_back(std::move(entry));
    const std::string metric = !objectives.empty() ? internal::describe_objectives(objectives)
                               : e.metric.empty()  ? ""
                                                   : e.metric + " (" + e.mode + ")";
    rows.push_back({e.name, e.status, std::to_string(trials.size()), std::to_string(counts[kTerminated]),
                    std::to_string(counts[kError]), metric, time_text(e.created_at)});
  }
  if (options.format == "json") {
    out << list.dump(2) << "\n";
  } else if (options.format == "csv") {
    out << "name,status,trials,terminated,error,metric,created\n";
    for (const auto& r : rows) {
      for (size_t i = 0; i < r.size(); ++i) out << (i ? "," : "") << csv_cell(r[i]);
      out << "\n";
    }
  } else {
    out << render_table({"name", "status", "trials", "terminated", "error", "metric", "created"}, rows);
  }
  return 0;
}

namespace {

using TrialRows = std::vector<std::pair<TrialRecord, Json>>;

// PBT lineage: per trial row id, its exploits in order.
std::map<int64_t, Json> lineage_of(Store& store, int64_t experiment_id, const std::vector<TrialRecord>& trials) {
  std::map<int64_t, int64_t> index_of;
  for (const auto& t : trials) index_of[t.id] = t.trial_index;
  std::map<int64_t, Json> lineage;
  for (const auto& e : store.exploits(experiment_id)) {
    lineage[e.trial_id].push_back({{"donor", trial_folder_name(index_of[e.donor_trial_id])},
                                   {"iteration", e.iteration}, {"donor_iteration", e.donor_iteration},
                                   {"old_config", e.old_config}, {"new_config", e.new_config}});
  }
  return lineage;
}

// Where each attempt of each trial ran (trial_started events), per trial row
// id; empty when every attempt ran on the driver's machine.
std::map<int64_t, Json> placements_of(Store& store, int64_t experiment_id) {
  std::map<int64_t, Json> placements;
  bool remote = false;
  for (const auto& e : store.events(experiment_id)) {
    if (e.kind != "trial_started" || !e.trial_id || !e.detail.is_object()) continue;
    // Only what tune writes is taken: a hand-edited detail with hosts that
    // are not names (or an attempt that is not a number) shows as no host.
    Json hosts = Json::array();
    if (auto it = e.detail.find("hosts"); it != e.detail.end() && it->is_array())
      for (const auto& h : *it)
        if (h.is_string() && !h.get_ref<const std::string&>().empty()) hosts.push_back(h);
    remote = remote || !hosts.empty();
    const auto attempt = e.detail.find("attempt");
    placements[*e.trial_id].push_back(
        {{"attempt", attempt != e.detail.end() && attempt->is_number_integer() ? *attempt : Json(0)}, {"hosts", hosts}});
  }
  if (!remote) placements.clear();
  return placements;
}

void sort_rows(TrialRows& rows, const std::string& key, bool descending) {
  bool known = key == "trial";
  for (const auto& [trial, row] : rows) known = known || row.contains(key);
  if (!known && !rows.empty()) throw ConfigError("cannot sort by '" + key + "': no such column");
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    const Json& x = a.second.contains(key) ? a.second[key] : Json(nullptr);
    const Json& y = b.second.contains(key) ? b.second[key] : Json(nullptr);
    if (key == "trial") return descending ? a.first.trial_index > b.first.trial_index
                                          : a.first.trial_index < b.first.trial_index;
    if (x.is_null() != y.is_null()) return y.is_null();  // missing values last
    if (x.is_number() && y.is_number()) return descending ? x.get<double>() > y.get<double>() : x.get<double>() < y.get<double>();
    return descending ? format_value(x) > format_value(y) : format_value(x) < format_value(y);
  });
}

void print_trials_json(Store& store, const TrialRows& rows, const std::map<int64_t, Json>& lineage,
                       const std::map<int64_t, Json>& placements, const std::string& mode, std::ostream& out) {
  Json list = Json::array();
  for (const auto& [trial, row] : rows) {
    auto exploits = lineage.find(trial.id);
    auto placed = placements.find(trial.id);
    list.push_back({{"trial_index", trial.trial_index}, {"trial_name", trial_folder_name(trial.trial_index)},
                    {"status", trial.status}, {"config", trial.config}, {"iteration", trial.last_iteration},
                    {"attempts", trial.attempts}, {"last_result", trial.last_result},
                    {"error", trial.error.empty() ? Json(nullptr) : Json(trial.error)},
                    {"checkpoint", best_checkpoint(store, trial.id, mode)},
                    {"exploits", exploits == lineage.end() ? Json::array() : exploits->second},
                    {"placements", placed == placements.end() ? Json::array() : placed->second}});
  }
  out << list.dump(2) << "\n";
}

// Columns: trial and status first, the parameters, iter, the metrics, then
// the lineage and error last (the rows are JSON objects, which sort keys).
std::vector<std::string> table_columns(const TrialRows& rows, bool with_lineage) {
  if (rows.empty()) return {"trial", "status", "iter"};
  std::vector<std::string> ordered = {"trial", "status"};
  const Json params = flatten(rows.front().first.config);
  for (auto it = params.begin(); it != params.end(); ++it) ordered.push_back(it.key());
  ordered.push_back("iter");
  for (const auto& [trial, row] : rows) {
    for (auto it = row.begin(); it != row.end(); ++it) {
      const std::string& key = it.key();
      if (key != "error" && key != "exploited" && key != "hosts" && std::find(ordered.begin(), ordered.end(), key) == ordered.end())
        ordered.push_back(key);
    }
  }
  if (with_lineage) ordered.push_back("exploited");
  if (rows.front().second.contains("hosts")) ordered.push_back("hosts");
  ordered.push_back("error");
  return ordered;
}

void print_trials_table(const TrialRows& rows, bool with_lineage, bool csv, std::ostream& out) {
  const std::vector<std::string> columns = table_columns(rows, with_lineage);
  std::vector<std::vector<std::string>> table;
  for (const auto& [trial, row] : rows) {
    std::vector<std::string> cells;
    for (const auto& key : columns) cells.push_back(row.contains(key) ? format_value(row[key]) : "");
    table.push_back(std::move(cells));
  }
  if (!csv) {
    out << render_table(columns, table);
    return;
  }
  for (size_t i = 0; i < columns.size(); ++i) out << (i ? "," : "") << csv_cell(columns[i]);
  out << "\n";
  for (const auto& cells : table) {
    for (size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << csv_cell(cells[i]);
    out << "\n";
  }
}

}  // namespace

int list_trials(const QueryOptions& options, std::ostream& out) {
  auto store = open_store(options);
  ExperimentRecord experiment = find(*store, options);
  const std::string mode = experiment.mode.empty() ? "min" : experiment.mode;
  std::vector<internal::TrialFilter> filters;
  for (const auto& f : options.filters) filters.push_back(parse_filter(f));

  auto all_trials = store->trials(experiment.id);
  const std::map<int64_t, Json> lineage = lineage_of(*store, experiment.id, all_trials);
  const std::map<int64_t, Json> placements = placements_of(*store, experiment.id);
  TrialRows rows;
  for (auto& trial : all_trials) {
    Json row = trial_row(*store, trial, mode);
    if (!placements.empty()) {
      // The latest attempt's hosts ("a+b" for a group on two hosts).
      auto it = placements.find(trial.id);
      std::vector<std::string> hosts;
      if (it != placements.end())
        for (const auto& h : it->second.back()["hosts"]) hosts.push_back(h.get<std::string>());
      row["hosts"] = join_names(hosts, "+");
    }
    if (auto it = lineage.find(trial.id); it != lineage.end()) {
      std::string text;
      for (const auto& e : it->second)
        text += (text.empty() ? "" : " ") + e["donor"].get<std::string>() + "@" + std::to_string(e["iteration"].get<int64_t>());
      row["exploited"] = text;
    }
    bool keep = true;
    for (const auto& f : filters) keep = keep && matches(row.contains(f.key) ? row[f.key] : Json(nullptr), f);
    if (keep) rows.emplace_back(std::move(trial), std::move(row));
  }
  if (!options.sort.empty()) sort_rows(rows, options.sort, options.descending);
  if (options.limit > 0 && rows.size() > static_cast<size_t>(options.limit)) rows.resize(options.limit);
  if (options.format == "json") {
    print_trials_json(*store, rows, lineage, placements, mode, out);
  } else {
    print_trials_table(rows, !lineage.empty(), options.format == "csv", out);
  }
  return 0;
}

namespace {

// `tune best` of a multi-objective experiment without --metric: its Pareto
// front (Optuna's best_trials), a row per trial.
int show_pareto_front(Store& store, const ExperimentRecord& experiment, const std::vector<Objective>& objectives,
                      const QueryOptions& options, std::ostream& out) {
  const auto front = internal::pareto_trials(store, experiment, objectives, options.scope);
  if (front.empty())
    throw NotFoundError("no trial of '" + experiment.name + "' has reported all of " +
                        internal::describe_objectives(objectives) + " yet");
  if (options.format == "json") {
    Json members = Json::array();
    for (const auto& m : front) {
      Json values = Json::object();
      for (size_t i = 0; i < objectives.size(); ++i) values[objectives[i].metric] = m.values[i];
      members.push_back({{"trial_index", m.trial.trial_index}, {"trial_name", trial_folder_name(m.trial.trial_index)},
                         {"status", m.trial.status}, {"values", values}, {"config", m.trial.config},
                         {"metrics", m.metrics},
                         {"checkpoint", m.checkpoint_path.empty() ? Json(nullptr) : Json(m.checkpoint_path)}});
    }
    out << Json{{"experiment", experiment.name}, {"objectives", objectives_to_json(objectives)},
                {"scope", options.scope}, {"pareto_front", members}}
               .dump(2)
        << "\n";
    return 0;
  }
  out << fmt::format("Pareto front of {}: {} trials no other trial beats on {} (scope {})\n", experiment.name, front.size(),
                     internal::describe_objectives(objectives), options.scope);
  std::vector<std::string> header = {"trial", "status"};
  for (const auto& o : objectives) header.push_back(o.metric);
  header.push_back("config");
  std::vector<std::vector<std::string>> rows;
  for (const auto& m : front) {
    std::vector<std::string> row = {trial_folder_name(m.trial.trial_index), m.trial.status};
    for (double v : m.values) row.push_back(format_value(v));
    row.push_back(m.trial.config.dump());
    rows.push_back(std::move(row));
  }
  out << render_table(header, rows);
  return 0;
}

}  // namespace

int show_best(const QueryOptions& options, std::ostream& out) {
  auto store = open_store(options);
  ExperimentRecord experiment = find(*store, options);
  if (options.metric.empty()) {
    const auto objectives = internal::experiment_objectives(experiment);
    if (!objectives.empty()) return show_pareto_front(*store, experiment, objectives, options, out);
  }
  const std::string metric = options.metric.empty() ? experiment.metric : options.metric;
  const std::string mode = options.mode.empty() ? (experiment.mode.empty() ? "min" : experiment.mode) : options.mode;
  auto best = best_trial(*store, experiment, metric, mode, options.scope);
  if (!best) throw NotFoundError("no trial of '" + experiment.name + "' has reported '" + metric + "' yet");
  if (options.format == "json") {
    out << Json{{"experiment", experiment.name}, {"trial_index", best->trial.trial_index},
                {"trial_name", trial_folder_name(best->trial.trial_index)}, {"status", best->trial.status},
                {"metric", metric}, {"mode", mode}, {"scope", options.scope}, {"score", best->score},
                {"config", best->trial.config}, {"metrics", best->metrics},
                {"checkpoint", best->checkpoint_path.empty() ? Json(nullptr) : Json(best->checkpoint_path)}}
               .dump(2)
        << "\n";
    return 0;
  }
  out << fmt::format("best trial: {} ({}), {} {} = {} ({} of {})\n", trial_folder_name(best->trial.trial_index),
                     best->trial.status, options.scope, metric, format_value(best->score), mode, experiment.name);
  out << "config: " << best->trial.config.dump() << "\n";
  out << "metrics: " << best->metrics.dump() << "\n";
  if (!best->checkpoint_path.empty()) out << "checkpoint: " << best->checkpoint_path << "\n";
  return 0;
}

int show_status(const QueryOptions& options, std::ostream& out) {
  auto store = open_store(options);
  ExperimentRecord experiment = find(*store, options);
  auto trials = store->trials(experiment.id);
  std::map<std::string, int> counts;
  for (const auto& t : trials) counts[t.status]++;
  Json best = nullptr;
  const auto objectives = internal::experiment_objectives(experiment);
  Json front = nullptr;
  if (!objectives.empty()) {
    front = Json::array();
    for (const auto& m : internal::pareto_trials(*store, experiment, objectives, "last"))
      front.push_back(trial_folder_name(m.trial.trial_index));
  } else if (!experiment.metric.empty()) {
    if (auto b = best_trial(*store, experiment, experiment.metric, experiment.mode, "last")) {
      best = {{"trial_name", trial_folder_name(b->trial.trial_index)}, {"score", b->score}, {"config", b->trial.config}};
    }
  }
  if (options.format == "json") {
    Json status = {{"experiment", experiment.name}, {"status", experiment.status}, {"trials", trials.size()},
                {"counts", counts}, {"metric", experiment.metric}, {"mode", experiment.mode}, {"best", best},
                {"created_at", experiment.created_at}, {"updated_at", experiment.updated_at}};
    if (!objectives.empty()) {
      status["objectives"] = objectives_to_json(objectives);
      status["pareto_front"] = front;
    }
    out << status.dump(2) << "\n";
    return 0;
  }
  out << fmt::format("experiment: {}\nstatus: {}\ncreated: {}\nupdated: {}\ntrials: {}", experiment.name,
                     experiment.status, time_text(experiment.created_at), time_text(experiment.updated_at),
                     trials.size());
  for (const auto& [status, count] : counts) out << fmt::format(", {} {}", count, status);
  out << "\n";
  if (!front.is_null()) {
    std::vector<std::string> names;
    for (const auto& name : front) names.push_back(name.get<std::string>());
    out << fmt::format("pareto front ({}): {} trials{}{}\n", internal::describe_objectives(objectives), names.size(),
                       names.empty() ? "" : ": ", join_names(names, ", "));
  }
  if (!best.is_null()) {
    out << fmt::format("best: {} {} = {} config {}\n", best["trial_name"].get<std::string>(), experiment.metric,
                       format_value(best["score"]), best["config"].dump());
  }
  return 0;
}

}  // namespace tune::cli
