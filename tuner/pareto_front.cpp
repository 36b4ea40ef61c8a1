#include "tuner/pareto_front.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"
#include "search/pareto.h"
#include "storage/analysis.h"
#include "tuner/sweep_spec.h"

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

std::vector<ParetoTrial> pareto_trials(Store& store, const ExperimentRecord& experiment,
                                       const std::vector<Objective>& objectives, const std::string& scope) {
  check_scope(scope);
  if (objectives.size() < 2) throw ConfigError("a Pareto front needs two or more objectives");
  std::vector<ParetoTrial> candidates;
  std::vector<std::vector<double>> oriented;  // minimization: "max" objectives negated
  for (TrialRecord& trial : store.trials(experiment.id)) {
    const auto results = store.results(trial.id);
    ParetoTrial candidate;
    std::vector<double> point;
    for (const auto& objective : objectives) {
      const auto value = trial_score(results, objective.metric, objective.mode, scope);
      if (!value) break;
      candidate.values.push_back(*value);
      point.push_back(objective.mode == "max" ? -*value : *value);
    }
    if (candidate.values.size() != objectives.size()) continue;
    candidate.metrics = results.back().metrics;
    candidate.trial = std::move(trial);
    candidates.push_back(std::move(candidate));
    oriented.push_back(std::move(point));
  }
  std::vector<ParetoTrial> front;
  if (candidates.empty()) return front;
  const auto fronts = non_dominated_fronts(oriented);  // named: a range over .front() of a temporary dangles
  for (size_t i : fronts.front()) front.push_back(std::move(candidates[i]));
  std::stable_sort(front.begin(), front.end(), [&](const ParetoTrial& a, const ParetoTrial& b) {
    return objectives[0].mode == "max" ? a.values[0] > b.values[0] : a.values[0] < b.values[0];
  });
  for (auto& member : front) member.checkpoint_path = best_checkpoint(store, member.trial.id, objectives[0].mode);
  return front;
}

std::string describe_objectives(const std::vector<Objective>& objectives) {
  std::string text;
  for (const auto& objective : objectives)
    text += (text.empty() ? "" : ", ") + objective.metric + " (" + objective.mode + ")";
  return text;
}

}  // namespace tune::internal
