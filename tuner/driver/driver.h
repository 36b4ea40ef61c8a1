// Internal: the sweep driver. One event loop owns the searcher, scheduler,
// executor and store; it never blocks on one trial. docs/ARCHITECTURE.md
// walks through one trial's life.
//
//   PreparedSweep sweep = prepare_sweep(spec, run, {}, nullptr, nullptr, false);
//   std::string name = run_experiment(std::move(sweep), run, /*resume=*/false);
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/json.h"
#include "tuner/exec/clock.h"
#include "tuner/exec/executor.h"
#include "tuner/driver/prepare.h"

namespace tune::internal {

// Set by the CLI's SIGINT/SIGTERM handler: the driver stops launching, ends
// running trials, marks the experiment INTERRUPTED.
extern std::atomic<int> g_interrupt_requests;

// What tests replace: the clock, the interrupt flag, the executor.
struct DriverEnvironment {
  const Clock* clock = nullptr;                       // default: the system clock
  const std::atomic<int>* interrupt = &g_interrupt_requests;
  // Default: make_executor (the registered kinds).
  std::function<std::unique_ptr<TrialExecutor>(const ExecutorContext&)> make_executor;
  // Final trials whose config and last result stay unpacked; past these the
  // driver packs them (~1.4 KB a trial down to a few hundred bytes, for ~35k
  // instructions a trial to pack and unpack): a sweep of a few thousand
  // trials pays nothing, one of millions does not hold them all as JSON.
  size_t unpacked_final_trials = 4096;
  // Trials started in one turn of the loop at most: a burst (a cluster's
  // slots freed at once, a time-shared population resumed) is spread over
  // turns, so the answers of a turn's results wait for ~64 starts (a few
  // ms), not for thousands.
  int starts_per_turn = 64;
  // How a PBT exploit copies the donor's checkpoint, on the copier's thread
  // (default: copy_checkpoint; tests hold it to watch the loop meanwhile).
  std::function<void(const std::string& source, const std::filesystem::path& target)> copy_checkpoint;
};

// Thrown by run_experiment after it recorded the experiment INTERRUPTED
// because no host could run its remaining trials (every host taken out and
// none healthy again when checked). The CLI exits with kExitNoHosts.
struct NoHostsLeft : Error {
  using Error::Error;
};
inline constexpr int kExitNoHosts = 75;  // EX_TEMPFAIL: `tune resume` once hosts are back

// Runs (or, with resume, continues) an experiment; returns its name.
std::string run_experiment(PreparedSweep sweep, const RunConfig& run, bool resume, DriverEnvironment env = {});

// A trial as the driver left it at the end of a sweep: what its rows in the
// store say (status, config, last result, error), taken from the driver's
// memory instead of read back and parsed again (Tuner::fit()).
struct TrialOutcome {
  int64_t index = 0;
  int64_t row = 0;  // trials.id
  std::string status;
  Json config, last_result;
  std::string error;
};
struct SweepOutcome {
  std::string name;
  std::vector<TrialOutcome> trials;  // by trial index, as Store::trials()
};
// run_experiment, also handing over the trials.
SweepOutcome run_sweep(PreparedSweep sweep, const RunConfig& run, bool resume, DriverEnvironment env = {});

}  // namespace tune::internal
