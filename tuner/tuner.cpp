#include "tuner/tuner.h"

#include <cstdlib>

#include "storage/analysis.h"
#include "storage/store.h"
#include "tuner/query/experiment_access.h"
#include "tuner/query/pareto_front.h"
#include "tuner/driver/driver.h"
#include "tuner/driver/prepare.h"
#include "base/error.h"
#include "tuner/exec/host_check.h"
#include "tuner/exec/worker.h"

namespace tune {

void init(int, char**) {
  if (internal::started_as_host_check()) internal::run_host_check();
  if (!internal::started_as_worker()) return;
  internal::select_rank_gpus();
  internal::run_worker();
}

ResultGrid::ResultGrid(std::string experiment, std::string metric, std::string mode, std::vector<Result> results,
                       std::string storage_path)
    : experiment_(std::move(experiment)),
      metric_(std::move(metric)),
      mode_(std::move(mode)),
      storage_path_(std::move(storage_path)),
      results_(std::move(results)) {}

int ResultGrid::num_errors() const {
  int n = 0;
  for (const auto& r : results_) n += r.status == kError;
  return n;
}

int ResultGrid::num_terminated() const {
  int n = 0;
  for (const auto& r : results_) n += r.status == kTerminated;
  return n;
}

namespace {

Result result_of(const TrialRecord& trial, Json metrics, std::string checkpoint) {
  Result result;
  result.trial_index = trial.trial_index;
  result.trial_name = trial_folder_name(trial.trial_index);
  result.status = trial.status;
  result.config = trial.config;
  result.metrics = std::move(metrics);
  result.checkpoint = std::move(checkpoint);
  result.error = trial.error;
  return result;
}

}  // namespace

Result ResultGrid::best(const std::string& metric, const std::string& mode, const std::string& scope) const {
  const std::string m = metric.empty() ? metric_ : metric;
  const std::string d = mode.empty() ? mode_ : mode;
  auto store = Store::open(storage_path_, /*read_only=*/true);
  const ExperimentRecord experiment = internal::find_experiment(*store, storage_path_, experiment_);
  if (metric.empty()) {
    const auto objectives = internal::experiment_objectives(experiment);
    if (!objectives.empty())
      throw Error("experiment '" + experiment_ + "' optimizes several metrics (" +
                  internal::describe_objectives(objectives) + "): name one, or use pareto_front()");
  }
  auto best = best_trial(*store, experiment, m, d, scope);
  if (!best) throw Error("no trial of '" + experiment_ + "' reported metric '" + m + "'");
  return result_of(best->trial, best->metrics, best->checkpoint_path);
}

std::vector<Result> ResultGrid::pareto_front(const std::string& scope) const {
  auto store = Store::open(storage_path_, /*read_only=*/true);
  const ExperimentRecord experiment = internal::find_experiment(*store, storage_path_, experiment_);
  const auto objectives = internal::experiment_objectives(experiment);
  if (objectives.empty())
    throw Error("experiment '" + experiment_ + "' optimizes one metric: use best(), not pareto_front()");
  std::vector<Result> front;
  for (auto& member : internal::pareto_trials(*store, experiment, objectives, scope))
    front.push_back(result_of(member.trial, std::move(member.metrics), std::move(member.checkpoint_path)));
  return front;
}

namespace {

// The grid of `trials` (as the store's rows say them), the best checkpoint of
// each read from the store.
ResultGrid result_grid(Store& store, const ExperimentRecord& experiment, const std::string& storage_path,
                       std::vector<internal::TrialOutcome> trials) {
  const std::string mode = experiment.mode.empty() ? "min" : experiment.mode;
  std::vector<Result> results;
  results.reserve(trials.size());
  const std::map<int64_t, std::string> checkpoints = best_checkpoints(store, experiment.id, mode);
  for (internal::TrialOutcome& trial : trials) {
    Result r;
    r.trial_index = trial.index;
    r.trial_name = trial_folder_name(trial.index);
    r.status = std::move(trial.status);
    r.config = std::move(trial.config);
    r.metrics = std::move(trial.last_result);
    if (auto it = checkpoints.find(trial.row); it != checkpoints.end()) r.checkpoint = it->second;
    r.error = std::move(trial.error);
    results.push_back(std::move(r));
  }
  return ResultGrid(experiment.name, experiment.metric, experiment.mode, std::move(results), storage_path);
}

ExperimentRecord find_or_throw(Store& store, const std::string& storage_path, const std::string& name) {
  auto experiment = store.find_experiment(name);
  if (!experiment) throw NotFoundError("no experiment named '" + name + "' in " + storage_path);
  return *experiment;
}

}  // namespace

ResultGrid load_results(const std::string& storage_path, const std::string& name) {
  auto store = Store::open(storage_path, /*read_only=*/true);
  const ExperimentRecord experiment = find_or_throw(*store, storage_path, name);
  std::vector<internal::TrialOutcome> trials;
  for (TrialRecord& trial : store->trials(experiment.id))
    trials.push_back({trial.trial_index, trial.id, std::move(trial.status), std::move(trial.config),
                      std::move(trial.last_result), std::move(trial.error)});
  return result_grid(*store, experiment, storage_path, std::move(trials));
}

Tuner::Tuner(TrainableFunction trainable, SweepSpec spec, RunConfig run)
    : trainable_(std::move(trainable)), spec_(std::move(spec)), run_(std::move(run)) {}

Tuner::Tuner(SweepSpec spec, RunConfig run) : spec_(std::move(spec)), run_(std::move(run)) {}

Tuner::~Tuner() = default;
Tuner::Tuner(Tuner&&) noexcept = default;
Tuner& Tuner::operator=(Tuner&&) noexcept = default;

ResultGrid Tuner::fit() {
  internal::PreparedSweep sweep =
      internal::prepare_sweep(spec_, run_, trainable_, std::move(scheduler_), /*source=*/nullptr, resume_);
  // The trials as the driver left them: the same as its store rows (a test
  // compares them with load_results()), without reading and parsing them back.
  internal::SweepOutcome outcome = internal::run_sweep(std::move(sweep), run_, resume_);
  auto store = Store::open(run_.storage_path, /*read_only=*/true);
  const ExperimentRecord experiment = find_or_throw(*store, run_.storage_path, outcome.name);
  return result_grid(*store, experiment, run_.storage_path, std::move(outcome.trials));
}

Tuner& Tuner::set_scheduler(std::unique_ptr<Scheduler> scheduler) {
  scheduler_ = std::move(scheduler);
  return *this;
}

Tuner Tuner::restore(const std::string& name, RunConfig run, TrainableFunction trainable) {
  if (!Store::exists(run.storage_path)) throw NotFoundError("no tune store at " + run.storage_path);
  auto store = Store::open(run.storage_path, /*read_only=*/true);
  auto experiment = store->find_experiment(name);
  if (!experiment) throw NotFoundError("no experiment named '" + name + "' in " + run.storage_path);
  Tuner tuner;
  tuner.spec_ = SweepSpec::from_json(experiment->spec);
  tuner.spec_.name = name;
  tuner.run_ = std::move(run);
  tuner.trainable_ = std::move(trainable);
  tuner.resume_ = true;
  return tuner;
}

}  // namespace tune
