// Internal: the sweep driver. One event loop owns the searcher, scheduler,
// executors and store; it never blocks on one trial. See ARCHITECTURE.md.
#pragma once

#include <atomic>

#include "schedulers/scheduler.h"
#include "tuner/tuner.h"

namespace tune::internal {

// Set by the CLI's SIGINT/SIGTERM handler: the driver stops launching, stops
// running trials at their next report, marks the experiment INTERRUPTED.
extern std::atomic<int> g_interrupt_requests;

// Checks the spec and everything the sweep needs (trainable, slots) without
// touching the disk. Throws ConfigError.
void preflight(const SweepSpec& spec, const RunConfig& run, const TrainableFunction& function,
               bool custom_scheduler = false);

// Runs (or, with resume, continues) an experiment; returns the experiment name.
// `scheduler`, when given, replaces spec.scheduler (recorded as type "custom").
std::string run_experiment(SweepSpec spec, const RunConfig& run, TrainableFunction function,
                           bool resume, std::unique_ptr<Scheduler> scheduler = nullptr);

// "[A-Za-z0-9][A-Za-z0-9_.-]*", at most 100 characters: names become folder names.
void check_experiment_name(const std::string& name);

}  // namespace tune::internal
