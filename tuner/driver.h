// Internal: the sweep driver. One event loop owns the searcher, scheduler,
// executors and store; it never blocks on one trial. See ARCHITECTURE.md.
#pragma once

#include <atomic>

#include "schedulers/scheduler.h"
#include "tuner/preflight.h"
#include "tuner/tuner.h"

namespace tune::internal {

// Set by the CLI's SIGINT/SIGTERM handler: the driver stops launching, stops
// running trials at their next report, marks the experiment INTERRUPTED.
extern std::atomic<int> g_interrupt_requests;

// Runs (or, with resume, continues) an experiment; returns the experiment name.
// `scheduler`, when given, replaces spec.scheduler (recorded as type "custom").
std::string run_experiment(SweepSpec spec, const RunConfig& run, TrainableFunction function,
                           bool resume, std::unique_ptr<Scheduler> scheduler = nullptr);

}  // namespace tune::internal
