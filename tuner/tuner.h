// tune: hyperparameter tuning for C++ programs, the embedding API.
//
//   #include "tuner/tuner.h"
//
//   int main(int argc, char** argv) {
//     tune::init(argc, argv);  // first: turns this process into a worker when the driver re-runs it
//     tune::SweepSpec spec;
//     spec.metric = "loss";
//     spec.mode = "min";
//     spec.num_samples = 20;
//     spec.param_space.add("x", tune::uniform(-5, 5)).add("lr", tune::loguniform(1e-4, 1e-1));
//     tune::Tuner tuner([](tune::Session& session) {
//       double x = session.config()["x"];
//       for (int i = 1; i <= 5; ++i) session.report({{"loss", x * x / i}});
//     }, spec);
//     tune::ResultGrid results = tuner.fit();
//     std::cout << results.best().config.dump() << "\n";
//   }
//
// Every result, trial state and checkpoint lands in the store under
// RunConfig::storage_path (SQLite, docs/SCHEMA.md); `tune trials NAME` and
// `tune best NAME` query it like any CLI sweep.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "schedulers/scheduler.h"
#include "search/search_space.h"
#include "storage/store.h"
#include "trainer/session.h"
#include "tuner/spec/run_config.h"
#include "tuner/spec/sweep_spec.h"

namespace tune {

// Call at the top of main() in programs whose trials run as MPI worker groups
// (resources.workers > 1 or use_mpi): when the driver re-executes the program
// as a worker, this runs the worker loop and never returns. Register named
// trainables before calling it. A no-op otherwise.
void init(int argc, char** argv);

// One trial's outcome.
struct Result {
  int64_t trial_index = 0;
  std::string trial_name;
  std::string status;     // TERMINATED | ERROR | ...
  Json config;
  Json metrics;           // the selected result (last by default); null if none
  std::string checkpoint; // best checkpoint directory, "" if none
  std::string error;      // last error message, "" if none
};

class ResultGrid {
 public:
  ResultGrid(std::string experiment, std::string metric, std::string mode,
             std::vector<Result> results, std::string storage_path);

  const std::string& experiment_name() const { return experiment_; }
  const std::vector<Result>& results() const { return results_; }
  size_t size() const { return results_.size(); }
  int num_errors() const;
  int num_terminated() const;

  // The best trial by `metric`/`mode` (default: the experiment's) over
  // `scope` (see storage/analysis.h). Throws tune::Error if no trial has the
  // metric, or, without a metric, if the experiment has several (use
  // pareto_front()).
  Result best(const std::string& metric = "", const std::string& mode = "",
              const std::string& scope = "last") const;

  // A multi-objective experiment (SweepSpec::objectives): the trials no other
  // trial dominates, each objective taken over `scope`, ordered by the first
  // objective, best first (Optuna's study.best_trials). Result::metrics is
  // the trial's last result. Throws tune::Error for an experiment with one metric.
  std::vector<Result> pareto_front(const std::string& scope = "last") const;

 private:
  std::string experiment_, metric_, mode_, storage_path_;
  std::vector<Result> results_;
};

class Tuner {
 public:
  // Runs `trainable` in-process (threads). spec.trainable may stay empty.
  Tuner(TrainableFunction trainable, SweepSpec spec, RunConfig run = {});
  // Runs the registered trainable spec.trainable (in-process or MPI groups).
  explicit Tuner(SweepSpec spec, RunConfig run = {});
  ~Tuner();
  Tuner(Tuner&&) noexcept;
  Tuner& operator=(Tuner&&) noexcept;

  // Runs the sweep to the end (or time budget / SIGINT) and returns every
  // trial's result. Throws ConfigError before touching the store if the spec
  // is invalid, tune::Error if the experiment name already exists.
  ResultGrid fit();

  // Continues the experiment `name` from the store: finished trials are kept,
  // unfinished ones restart from their last checkpoint, the searcher goes on
  // where it stopped. `trainable` is needed when the sweep ran a C++ lambda.
  static Tuner restore(const std::string& name, RunConfig run = {},
                       TrainableFunction trainable = {});

  // Uses `scheduler` (your own Scheduler subclass, schedulers/scheduler.h)
  // instead of spec.scheduler; the store records its type as "custom", so
  // restoring such an experiment needs the scheduler passed again.
  Tuner& set_scheduler(std::unique_ptr<Scheduler> scheduler);

 private:
  Tuner() = default;
  TrainableFunction trainable_;
  SweepSpec spec_;
  RunConfig run_;
  bool resume_ = false;
  std::unique_ptr<Scheduler> scheduler_;
};

// Reads an experiment's results from a store (what fit() returns).
ResultGrid load_results(const std::string& storage_path, const std::string& experiment);

}  // namespace tune
