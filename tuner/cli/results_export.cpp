// Results export. CSV needs every metric key for its header before the first
// row, so it reads the results twice (in one read transaction); JSON streams.
#include "tuner/cli/results_export.h"

#include <algorithm>
#include <map>
#include <set>

#include "search/search_space.h"
#include "base/error.h"
#include "tuner/query/experiment_access.h"

namespace tune::cli {
namespace {

const std::vector<std::string> kFixed = {"trial_index", "attempt", "iteration", "time"};

// A trial's flattened config over time: from each time on, until the next.
struct ConfigHistory {
  int64_t trial_index = 0;
  std::vector<std::pair<double, Json>> changes;  // (time, flat config), ascending

  const Json& at(double time) const {
    const Json* current = &changes.front().second;
    for (const auto& [from, config] : changes) {
      if (from <= time) current = &config;
    }
    return *current;
  }
};

std::map<int64_t, ConfigHistory> config_histories(Store& store, int64_t experiment_id) {
  std::map<int64_t, ConfigHistory> histories;
  for (const auto& t : store.trials(experiment_id)) histories[t.id] = {t.trial_index, {{0.0, flatten(t.config)}}};
  for (const auto& e : store.exploits(experiment_id)) {
    auto it = histories.find(e.trial_id);
    if (it == histories.end()) continue;
    auto& changes = it->second.changes;
    if (changes.size() == 1) changes.front().second = flatten(e.old_config);  // the config it started with
    changes.emplace_back(e.time, flatten(e.new_config));
  }
  return histories;
}

// A metric keeps its name unless that could be read as another column: one
// of the four fixed ones, or one starting "config/" or "metrics/". Those are
// written "metrics/NAME", so no two keys ever share a column.
std::string metric_column(const std::string& key) {
  const bool taken = std::find(kFixed.begin(), kFixed.end(), key) != kFixed.end() || key.rfind("config/", 0) == 0 ||
                     key.rfind("metrics/", 0) == 0;
  return taken ? "metrics/" + key : key;
}

std::string cell(const Json& value) {
  if (value.is_null()) return "";
  return csv_cell(value.is_string() ? value.get<std::string>() : value.dump());
}

}  // namespace

int export_results(const QueryOptions& options, std::ostream& out) {
  if (options.format != "csv" && options.format != "json") {
    throw ConfigError("tune results: choose --csv or --json");
  }
  auto store = internal::open_store(options.storage);
  Transaction snapshot(*store);
  const ExperimentRecord experiment = internal::find_experiment(*store, options.storage, options.experiment);
  const auto histories = config_histories(*store, experiment.id);
  std::set<std::string> params;
  for (const auto& [row, history] : histories) {
    for (const auto& change : history.changes) {
      for (const auto& item : change.second.items()) params.insert(item.key());
    }
  }
  std::vector<std::string> metrics;  // CSV: every key, the experiment's metric first
  if (options.format == "csv") {
    std::set<std::string> keys;
    store->for_each_result(experiment.id, [&](const ResultRecord& r) {
      for (const auto& item : r.metrics.items()) keys.insert(item.key());
    });
    if (keys.erase(experiment.metric)) metrics.push_back(experiment.metric);
    metrics.insert(metrics.end(), keys.begin(), keys.end());
    std::string header = "trial_index,attempt,iteration,time";
    for (const auto& m : metrics) header += "," + csv_cell(metric_column(m));
    for (const auto& p : params) header += "," + csv_cell("config/" + p);
    out << header << "\n";
  }
  bool first = true;
  if (options.format == "json") out << "[";
  store->for_each_result(experiment.id, [&](const ResultRecord& r) {
    auto history = histories.find(r.trial_id);
    if (history == histories.end()) return;
    const Json& config = history->second.at(r.time);
    if (options.format == "json") {
      Json row = {{"trial_index", history->second.trial_index}, {"attempt", r.attempt},
                  {"iteration", r.iteration}, {"time", r.time}};
      for (const auto& [key, value] : r.metrics.items()) row[metric_column(key)] = value;
      for (const auto& [key, value] : config.items()) row["config/" + key] = value;
      out << (first ? "\n" : ",\n") << row.dump(-1, ' ', false, Json::error_handler_t::replace);
    } else {
      out << history->second.trial_index << ',' << r.attempt << ',' << r.iteration << ',' << Json(r.time).dump();
      for (const auto& m : metrics) out << ',' << (r.metrics.contains(m) ? cell(r.metrics[m]) : "");
      for (const auto& p : params) out << ',' << (config.contains(p) ? cell(config[p]) : "");
      out << '\n';
    }
    first = false;
  });
  if (options.format == "json") out << (first ? "]\n" : "\n]\n");
  snapshot.commit();
  return 0;
}

}  // namespace tune::cli
