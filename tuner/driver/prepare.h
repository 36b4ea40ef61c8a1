// Internal: a sweep made ready to run, checked once. Every entry point (the
// CLI's run and resume, Tuner::fit, Tuner::restore) prepares the sweep, then
// hands it to the driver, which checks nothing again.
//
//   PreparedSweep sweep = prepare_sweep(spec, run, {}, nullptr, source.get(), /*resume=*/false);
//   run_experiment(std::move(sweep), run, /*resume=*/false);
#pragma once

#include <memory>
#include <string>

#include "schedulers/scheduler.h"
#include "search/searcher.h"
#include "trainer/session.h"
#include "tuner/exec/hosts.h"
#include "tuner/spec/sweep_spec.h"
#include "tuner/spec/run_config.h"

namespace tune::internal {

class SweepSource;

struct PreparedSweep {
  SweepSpec spec;                        // with its seed fixed
  std::unique_ptr<Searcher> searcher;    // built from spec, not yet asked
  std::unique_ptr<Scheduler> scheduler;  // the spec's, or the custom one
  const RegisteredTrainable* trainable = nullptr;  // nullptr when `function` runs
  TrainableFunction function;
  std::vector<Host> hosts;  // where trials may run (this machine alone by default)
  int slots = 1;            // over every host
};

// Checks the spec (SweepSpec::validate's rules, once), the trainable (known,
// its setup), the experiment name and the slots, and builds the searcher and
// scheduler. A new experiment without a seed gets a random one here.
// `custom` replaces spec.scheduler (recorded as type "custom"). Throws
// ConfigError; with `source` (a sweep file), located at file:line.
PreparedSweep prepare_sweep(SweepSpec spec, const RunConfig& run, TrainableFunction function,
                            std::unique_ptr<Scheduler> custom, const SweepSource* source, bool resume);

// Slots the sweep may use on this machine: run.slots, or the number of cores.
int available_slots(const RunConfig& run);
// The hosts of a sweep: run.hostfile's, else the Slurm allocation's (when
// run.use_slurm_allocation), else this machine with available_slots(run).
std::vector<Host> sweep_hosts(const RunConfig& run);

// "[A-Za-z0-9][A-Za-z0-9_.-]*", at most 100 characters: names become folder names.
void check_experiment_name(const std::string& name);

// `tune run FILE --smoke` (Ray examples' --smoke-test): the sweep cut down to
// run end to end in seconds, as it is otherwise (trainable, data, search and
// scheduler kept): at most kSmokeSamples samples (one of each grid point),
// points_to_evaluate cut to as many, and every trial stopped after at most
// kSmokeIterations results. Call before prepare_sweep. Returns one line that
// says what changed, for the user.
constexpr int64_t kSmokeSamples = 2;
constexpr int64_t kSmokeIterations = 2;
std::string make_smoke(SweepSpec& spec);

// `tune run FILE --dry-run`: what running `sweep` would do, a line each
// (experiment and storage, trainable and where trials run, trials, search,
// scheduler, metric, resources, stop criteria, checkpoints, failures, the
// parameters). Throws ConfigError when the run would be refused because
// the experiment exists in run.storage_path. Reads the store if there is
// one (read-only); creates nothing.
std::string describe_plan(const PreparedSweep& sweep, const RunConfig& run);

}  // namespace tune::internal
