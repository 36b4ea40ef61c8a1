// A fake-clock cluster for schedulers: W workers run trials whose every step
// is computed by a function (a synthetic learning curve, the PBT toy), with
// the driver's contract (schedulers/scheduler.h) and its trial lifecycle
// (schedulers/trial_state_machine.h): pause frees the worker and
// a resumed trial continues from where it paused (its checkpoint), exploit
// copies the donor's state and takes the new config, every step checkpoints.
// Used by the scheduler tests and `bench/run schedulers`; handy to try a
// custom Scheduler without training anything.
//
//   tune::SimulationOptions o;
//   o.workers = 4; o.num_trials = 100; o.max_iterations = 81; o.metric = "loss";
//   o.config_of = [](int64_t i) { return tune::Json{{"x", i}}; };
//   o.step = [](const tune::Json& c, std::vector<double>& state, int64_t it) { return 1.0 / it; };
//   tune::SimulationResult r = tune::simulate(*scheduler, o);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "schedulers/scheduler.h"

namespace tune {

struct SimulationOptions {
  int workers = 1;
  int64_t num_trials = 1;
  // A trial stops after this many steps (the sweep's stop criterion). 0 = none.
  int64_t max_iterations = 0;
  std::string metric = "loss";
  std::function<Json(int64_t trial)> config_of;
  // Initial model state of a new trial (default: empty).
  std::function<std::vector<double>(const Json& config)> init;
  // One training step: updates `state`, returns the metric after iteration `iteration` (1-based).
  std::function<double(const Json& config, std::vector<double>& state, int64_t iteration)> step;
  // Fake seconds a step of `trial` takes (default 1). Results carry time_total_s.
  std::function<double(int64_t trial, const Json& config, int64_t iteration)> step_time;
};

struct SimulatedTrial {
  Json config;                  // final config
  int64_t iterations = 0;       // steps reported
  std::vector<double> metrics;  // metric at each iteration
  std::vector<double> times;    // fake time each of those results came
  std::string status;           // at the end: TERMINATED (paused ones never resumed too) or ERROR
  int pauses = 0, exploits = 0;
  std::vector<double> state;
};

struct SimulationResult {
  std::vector<SimulatedTrial> trials;
  int64_t decisions = 0;           // on_result + choose_trial_to_run + on_trial_resume calls
  double decision_seconds = 0;     // wall time spent in those calls
  double makespan = 0;             // fake seconds until the last worker is idle
  double busy = 0;                 // fake worker-seconds spent training
  double utilization() const;      // busy / (workers * makespan)
  // Fake worker-seconds idle while the searcher still had trials to start:
  // 0 for a scheduler that never holds a worker back.
  double idle_with_trials_left = 0;
  double time_with_trials_left = 0;  // fake time until the last trial started
  struct Exploit { int64_t trial, donor, iteration; Json old_config, new_config; };
  std::vector<Exploit> exploits;
  int workers_ = 1;
};

// Runs the whole sweep. Deterministic for deterministic options and scheduler.
// Trials move through the driver's own lifecycle (schedulers/trial_state_machine.h),
// so an exploit is vetted as the driver vets it (another trial, with a checkpoint).
SimulationResult simulate(Scheduler& scheduler, const SimulationOptions& options);

}  // namespace tune
