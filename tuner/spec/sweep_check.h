// Internal: the one check of a sweep's rules. Reading a sweep file checks
// its structure and types; this checks what holds between the parts (metric
// and mode, the search algorithm's and the scheduler's options against the
// space) and builds the searcher and scheduler it validated, so the driver
// uses those instead of checking again.
#pragma once

#include <memory>

#include "schedulers/scheduler.h"
#include "search/searcher.h"
#include "tuner/spec/sweep_spec.h"

namespace tune::internal {

struct CheckedSweep {
  std::unique_ptr<Searcher> searcher;    // seeded with spec.search.seed (random when unset)
  std::unique_ptr<Scheduler> scheduler;  // null for scheduler type "custom"
};

// Throws ConfigError carrying the key path of the offending key
// (SweepSource::locate turns it into file:line). Errors of the search and
// scheduler components without a path of their own get "search" /
// "scheduler".
CheckedSweep check_sweep(const SweepSpec& spec);

}  // namespace tune::internal
