#include "tuner/query/pareto_front.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "search/pareto.h"
#include "storage/analysis.h"
#include "tuner/spec/sweep_spec.h"

namespace tune::internal {

std::vector<Objective> experiment_objectives(const ExperimentRecord& experiment) {
  if (!experiment.spec.is_object()) return {};
  auto it = experiment.spec.find("objectives");
  if (it == experiment.spec.end() || !it->is_array()) return {};
  try {
    return objectives_from_json(*it);
  } catch (const Json::exception& e) {
    throw Error("experiment '" + experiment.name + "' has malformed objectives in its stored spec: " + e.what());
  }
}

std::vector<size_t> pareto_order(const std::vector<Objective>& objectives,
                                 const std::vector<std::vector<double>>& values) {
  std::vector<size_t> candidates;
  std::vector<std::vector<double>> oriented;  // minimization: "max" objectives negated
  const size_t n = values.empty() ? 0 : values.front().size();
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> point;
    for (size_t k = 0; k < objectives.size() && std::isfinite(values[k][i]); ++k)
      point.push_back(objectives[k].mode == "max" ? -values[k][i] : values[k][i]);
    if (point.size() != objectives.size()) continue;
    candidates.push_back(i);
    oriented.push_back(std::move(point));
  }
  if (candidates.empty()) return {};
  // Only the first front is wanted: first_fronts stops there (a full sort is
  // quadratic in the trials even when most are dominated at once).
  std::vector<size_t> front = first_fronts(oriented, 1).front();
  // Indices ascend in a front: a stable sort leaves ties by position.
  std::stable_sort(front.begin(), front.end(), [&](size_t a, size_t b) { return oriented[a][0] < oriented[b][0]; });
  for (size_t& c : front) c = candidates[c];
  return front;
}

std::vector<ParetoTrial> pareto_trials(Store& store, const ExperimentRecord& experiment,
                                       const std::vector<Objective>& objectives, const std::string& scope) {
  check_scope(scope);
  if (objectives.size() < 2) throw ConfigError("a Pareto front needs two or more objectives");
  std::vector<TrialRecord> trials = store.trials(experiment.id);
  std::vector<Json> last_results(trials.size());
  std::vector<std::vector<double>> values(objectives.size(), std::vector<double>(trials.size(), NAN));
  for (size_t i = 0; i < trials.size(); ++i) {
    const auto results = store.results(trials[i].id);
    if (results.empty()) continue;
    last_results[i] = results.back().metrics;
    for (size_t k = 0; k < objectives.size(); ++k)
      if (auto value = trial_score(results, objectives[k].metric, objectives[k].mode, scope)) values[k][i] = *value;
  }
  std::vector<ParetoTrial> front;
  for (size_t i : pareto_order(objectives, values)) {
    ParetoTrial member;
    for (size_t k = 0; k < objectives.size(); ++k) member.values.push_back(values[k][i]);
    member.metrics = std::move(last_results[i]);
    member.checkpoint_path = best_checkpoint(store, trials[i].id, objectives[0].mode);
    member.trial = std::move(trials[i]);
    front.push_back(std::move(member));
  }
  return front;
}

std::string describe_objectives(const std::vector<Objective>& objectives) {
  std::string text;
  for (const auto& objective : objectives)
    text += (text.empty() ? "" : ", ") + objective.metric + " (" + objective.mode + ")";
  return text;
}

}  // namespace tune::internal
