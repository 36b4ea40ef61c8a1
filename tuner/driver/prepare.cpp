#include "tuner/driver/prepare.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <random>
#include <thread>

#include "base/error.h"
#include "base/names.h"
#include "tuner/exec/command_trainable.h"
#include "tuner/spec/sweep_check.h"
#include "tuner/spec/sweep_reader.h"

namespace tune::internal {
namespace {

const RegisteredTrainable* resolve_trainable(const SweepSpec& spec, const TrainableFunction& function) {
  if (function) return nullptr;
  if (spec.trainable.empty()) throw ConfigError::at("trainable", "no trainable: set `trainable:` to a registered name");
  if (spec.trainable == "command") register_command_trainable();
  const RegisteredTrainable* found = find_trainable(spec.trainable);
  if (!found) {
    throw ConfigError::at("trainable", "unknown trainable '" + spec.trainable + "'" +
                                           did_you_mean_or_list(spec.trainable, trainable_names(), "registered"));
  }
  return found;
}

// What the trial needs of its surroundings: the trainable and the slots.
void check_environment(const PreparedSweep& sweep) {
  const SweepSpec& spec = sweep.spec;
  if (sweep.function && (spec.resources.workers > 1 || spec.resources.use_mpi)) {
    throw ConfigError::at("resources", "a C++ lambda trainable runs in-process; to run MPI groups, register it by name "
                                       "(tune::register_trainable), call tune::init() first in main, and set spec.trainable");
  }
  const bool has_setup = !spec.data.is_null() || !spec.preprocess.is_null();
  if (sweep.trainable && sweep.trainable->info.check_setup) {
    sweep.trainable->info.check_setup(spec.setup());
  } else if (has_setup) {
    throw ConfigError::at(spec.data.is_null() ? "preprocess" : "data",
                          "trainable '" + (sweep.trainable ? spec.trainable : std::string("(C++ function)")) +
                              "' takes no data: or preprocess: block");
  }
  const int64_t need = int64_t{spec.resources.workers} * spec.resources.cpus_per_worker;
  if (need > sweep.slots) {
    throw ConfigError::at("resources.workers", "a trial needs " + std::to_string(need) +
                                                   " slots (workers x cpus_per_worker) but only " +
                                                   std::to_string(sweep.slots) + " are available (raise --slots)");
  }
  int gpus = 0;
  for (const Host& host : sweep.hosts) gpus += host.gpus;
  const int64_t need_gpus = int64_t{spec.resources.workers} * spec.resources.gpus_per_worker;
  if (need_gpus > gpus) {
    throw ConfigError::at("resources.gpus_per_worker",
                          "a trial needs " + std::to_string(need_gpus) + " GPUs (workers x gpus_per_worker) but the hosts have " +
                              std::to_string(gpus) + " (hostfile gpus=N, or Slurm --gpus-per-node)");
  }
  const bool remote = std::any_of(sweep.hosts.begin(), sweep.hosts.end(), [](const Host& h) { return !h.local; });
  if (remote && sweep.function) {
    throw ConfigError::at("trainable", "a C++ lambda trainable runs in the driver's process and cannot use other "
                                       "hosts: register it by name to run it in worker groups");
  }
}

}  // namespace

std::vector<Host> sweep_hosts(const RunConfig& run) {
  if (!run.hostfile.empty()) return read_hostfile(run.hostfile);
  if (run.use_slurm_allocation) {
    if (auto hosts = slurm_hosts([](const char* name) { return std::getenv(name); })) return *hosts;
  }
  return {Host{"", available_slots(run), detect_local_gpus(), true}};
}

int available_slots(const RunConfig& run) {
  if (run.slots > 0) return run.slots;
  unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

void check_experiment_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 100 && std::isalnum(static_cast<unsigned char>(name[0]));
  for (char c : name) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  }
  if (!ok) {
    throw ConfigError::at("name", "invalid experiment name '" + name +
                                      "' (use letters, digits, '_', '-', '.', starting with a letter or digit)");
  }
}

PreparedSweep prepare_sweep(SweepSpec spec, const RunConfig& run, TrainableFunction function,
                            std::unique_ptr<Scheduler> custom, const SweepSource* source, bool resume) {
  try {
    if (custom) {
      spec.scheduler = {"custom", Json::object()};
    } else if (spec.scheduler.type == "custom") {
      throw ConfigError("experiment '" + spec.name + "' ran a custom C++ scheduler: pass it again (Tuner::set_scheduler)");
    }
    // A C++ spec may give only the objectives: metric/mode name the first.
    if (!spec.objectives.empty() && spec.metric.empty() && spec.mode.empty()) {
      spec.metric = spec.objectives[0].metric;
      spec.mode = spec.objectives[0].mode;
    }
    if (!resume && !spec.search.seed)
      spec.search.seed = std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
    if (!spec.name.empty()) check_experiment_name(spec.name);
    PreparedSweep sweep;
    sweep.function = std::move(function);
    sweep.trainable = resolve_trainable(spec, sweep.function);
    sweep.hosts = sweep_hosts(run);
    sweep.slots = 0;
    for (const Host& host : sweep.hosts) sweep.slots += host.slots;
    CheckedSweep checked = check_sweep(spec);
    sweep.searcher = std::move(checked.searcher);
    sweep.scheduler = custom ? std::move(custom) : std::move(checked.scheduler);
    sweep.spec = std::move(spec);
    check_environment(sweep);
    return sweep;
  } catch (const ConfigError& e) {
    if (source) throw source->locate(e);
    throw;
  }
}

}  // namespace tune::internal
