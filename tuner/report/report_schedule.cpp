// What the report shows of a scheduler's work: successive-halving rungs, the
// median-stopping cut-off, the PBT lineage.
#include <cmath>
#include <set>

#include "search/search_space.h"
#include "tuner/report/report_data.h"

namespace tune::report {
namespace {

// ASHA saves its rungs (milestones and recorded scores) in its state.
std::set<double> asha_milestones(const Json& state) {
  std::set<double> milestones;
  if (!state.is_object() || !state.contains("brackets") || !state["brackets"].is_array()) return milestones;
  for (const Json& bracket : state["brackets"]) {
    if (!bracket.is_array()) continue;
    for (const Json& rung : bracket) {
      if (rung.is_object() && rung.contains("milestone") && rung["milestone"].is_number()) {
        milestones.insert(rung["milestone"].get<double>());
      }
    }
  }
  return milestones;
}

}  // namespace

void analyse_schedule(ExperimentData& data, const ResultColumns& columns,
                      const std::map<int64_t, std::pair<size_t, size_t>>& spans) {
  const bool halving = data.scheduler == "asha" || data.scheduler == "async_hyperband" || data.scheduler == "hyperband";
  const bool median = data.scheduler.rfind("median_stopping", 0) == 0;
  if (!halving && !median) return;
  std::vector<TrialProgress> trials;
  for (const auto& t : data.trials) {
    auto span = spans.find(t.row);
    if (span == spans.end()) continue;
    TrialProgress progress;
    progress.trial = t.index;
    for (size_t i = span->second.first; i < span->second.second; ++i) {
      progress.progress.push_back(result_value(columns, data.rung_attribute, i));
      progress.values.push_back(columns.values[0][i]);
    }
    trials.push_back(std::move(progress));
  }
  if (median) {
    data.median = median_curve(trials, 200);
    data.median.attribute = data.rung_attribute;
    return;
  }
  // Rungs: ASHA's own, and wherever trials were paused or stopped (HyperBand
  // keeps no milestones in its state).
  std::set<double> milestones = asha_milestones(data.record.scheduler_state);
  if (data.rung_attribute == "training_iteration") {
    for (const Mark& m : data.marks) {
      if (m.kind == MarkKind::kPaused || m.kind == MarkKind::kStopped) milestones.insert(static_cast<double>(m.iteration));
    }
  }
  data.rungs = rung_data(trials, std::vector<double>(milestones.begin(), milestones.end()), data.mode != "max");
}

void add_exploits(ExperimentData& data, const std::vector<ExploitRecord>& exploits) {
  std::map<int64_t, int64_t> index_of;
  for (const auto& t : data.trials) index_of[t.row] = t.index;
  for (const auto& e : exploits) {
    ExploitData x;
    x.trial = index_of.count(e.trial_id) ? index_of[e.trial_id] : -1;
    x.donor = index_of.count(e.donor_trial_id) ? index_of[e.donor_trial_id] : -1;
    if (x.trial < 0 || x.donor < 0) continue;  // a trial added after this snapshot
    x.iteration = e.iteration;
    x.donor_iteration = e.donor_iteration;
    x.time = e.time - data.record.created_at;
    const Json before = flatten(e.old_config), after = flatten(e.new_config);
    x.changes = Json::object();
    for (const auto& [key, value] : after.items()) {
      if (!before.contains(key) || before[key] != value) x.changes[key] = {before.contains(key) ? before[key] : Json(), value};
    }
    data.exploits.push_back(std::move(x));
  }
}

}  // namespace tune::report
