#include "storage/analysis.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "base/error.h"

namespace tune {

void check_scope(const std::string& scope) {
  if (scope != "last" && scope != "all" && scope != "avg" && scope != "last-5-avg" && scope != "last-10-avg") {
    throw ConfigError("unknown scope '" + scope + "' (expected last, all, avg, last-5-avg or last-10-avg)");
  }
}

static void check_mode(const std::string& mode) {
  if (mode != "min" && mode != "max") throw ConfigError("mode must be min or max, got '" + mode + "'");
}

std::optional<double> trial_score(const std::vector<ResultRecord>& results, const std::string& metric,
                                  const std::string& mode, const std::string& scope) {
  check_scope(scope);
  check_mode(mode);
  std::vector<double> values;
  for (const auto& r : results) {
    auto it = r.metrics.find(metric);
    if (it == r.metrics.end() || !it->is_number()) continue;
    double v = it->get<double>();
    if (std::isfinite(v)) values.push_back(v);
  }
  if (values.empty()) return std::nullopt;
  if (scope == "last") return values.back();
  if (scope == "all") {
    double best = values.front();
    for (double v : values) best = mode == "max" ? std::max(best, v) : std::min(best, v);
    return best;
  }
  size_t count = values.size();
  if (scope == "last-5-avg") count = std::min<size_t>(5, count);
  if (scope == "last-10-avg") count = std::min<size_t>(10, count);
  double sum = 0;
  for (size_t i = values.size() - count; i < values.size(); ++i) sum += values[i];
  return sum / static_cast<double>(count);
}

namespace {
// The best of one trial's checkpoints [first, last), in id order.
std::string best_of(const CheckpointRecord* first, const CheckpointRecord* last, const std::string& mode) {
  if (first == last) return "";
  const CheckpointRecord* best = nullptr;
  for (const CheckpointRecord* c = first; c != last; ++c) {
    if (!c->score) continue;
    if (!best || (mode == "max" ? *c->score > *best->score : *c->score < *best->score)) best = c;
  }
  return best ? best->path : (last - 1)->path;
}
}  // namespace

std::string best_checkpoint(Store& store, int64_t trial_id, const std::string& mode) {
  const auto checkpoints = store.checkpoints(trial_id);
  return best_of(checkpoints.data(), checkpoints.data() + checkpoints.size(), mode);
}

std::map<int64_t, std::string> best_checkpoints(Store& store, int64_t experiment_id, const std::string& mode) {
  const auto checkpoints = store.experiment_checkpoints(experiment_id);
  std::map<int64_t, std::string> out;
  const CheckpointRecord* end = checkpoints.data() + checkpoints.size();
  for (const CheckpointRecord* first = checkpoints.data(); first != end;) {
    const CheckpointRecord* last = first;
    while (last != end && last->trial_id == first->trial_id) ++last;
    out[first->trial_id] = best_of(first, last, mode);
    first = last;
  }
  return out;
}

std::optional<BestTrial> best_trial(Store& store, const ExperimentRecord& experiment, const std::string& metric,
                                    const std::string& mode, const std::string& scope) {
  check_scope(scope);
  check_mode(mode);
  if (metric.empty()) throw ConfigError("no metric given and the experiment has none (use --metric)");
  std::optional<BestTrial> best;
  for (TrialRecord& trial : store.trials(experiment.id)) {
    auto results = store.results(trial.id);
    auto score = trial_score(results, metric, mode, scope);
    if (!score) continue;
    if (best && !(mode == "max" ? *score > best->score : *score < best->score)) continue;
    BestTrial candidate;
    candidate.score = *score;
    candidate.metrics = results.back().metrics;
    if (scope == "all") {
      for (const auto& r : results) {
        auto it = r.metrics.find(metric);
        if (it != r.metrics.end() && it->is_number() && it->get<double>() == *score) {
          candidate.metrics = r.metrics;
          break;
        }
      }
    }
    candidate.checkpoint_path = best_checkpoint(store, trial.id, mode);
    candidate.trial = std::move(trial);
    best = std::move(candidate);
  }
  return best;
}

namespace {

std::string moved_checkpoint(const std::string& recorded, const std::string& storage, const std::string& experiment) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (recorded.empty() || fs::exists(recorded, ec)) return recorded;
  const std::string marker = "/" + experiment + "/";
  const auto at = recorded.rfind(marker);
  if (at == std::string::npos) return recorded;
  const fs::path candidate = fs::path(storage) / experiment / recorded.substr(at + marker.size());
  return fs::exists(candidate, ec) ? candidate.string() : recorded;
}

}  // namespace

BestCheckpoint find_best_checkpoint(const std::string& storage, const std::string& experiment,
                                    const std::string& metric, const std::string& mode) {
  if (!Store::exists(storage)) throw NotFoundError("no tune store at " + storage);
  auto store = Store::open(storage, /*read_only=*/true);
  auto record = store->find_experiment(experiment);
  if (!record) throw NotFoundError("no experiment named '" + experiment + "' in " + storage);
  // A multi-objective experiment has no one best trial: picking its first
  // metric unasked would be a silent default (the spec's `objectives`, docs/SCHEMA.md).
  const auto objectives = record->spec.is_object() ? record->spec.find("objectives") : record->spec.end();
  if (metric.empty() && objectives != record->spec.end() && objectives->is_array() && objectives->size() >= 2) {
    throw ConfigError("experiment '" + experiment + "' optimizes several metrics: choose the trial with --metric "
                      "and --mode (or --checkpoint; `tune best " + experiment + "` lists the Pareto front)");
  }
  BestCheckpoint chosen;
  chosen.metric = metric.empty() ? record->metric : metric;
  const std::string m = mode.empty() ? record->mode : mode;
  if (chosen.metric.empty() || m.empty()) {
    throw ConfigError("experiment '" + experiment + "' has no metric/mode: pass --metric and --mode");
  }
  auto best = best_trial(*store, *record, chosen.metric, m);
  if (!best) throw NotFoundError("no trial of '" + experiment + "' reported " + chosen.metric);
  chosen.trial_name = trial_folder_name(best->trial.trial_index);
  chosen.score = best->score;
  chosen.path = moved_checkpoint(best->checkpoint_path, storage, experiment);
  std::error_code ec;
  if (chosen.path.empty() || !std::filesystem::is_directory(chosen.path, ec)) {
    throw NotFoundError("the best trial of '" + experiment + "' (" + chosen.trial_name + ") has no checkpoint" +
                        (chosen.path.empty() ? "" : " at " + chosen.path));
  }
  return chosen;
}

}  // namespace tune
