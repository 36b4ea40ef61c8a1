#include "tuner/driver/prepare.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <random>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/names.h"
#include "storage/store.h"
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

std::string make_smoke(SweepSpec& spec) {
  std::ostringstream said;
  const int64_t grid = spec.param_space.grid_size();
  const int64_t samples = grid > 1 ? 1 : std::min(spec.num_samples, kSmokeSamples);
  said << "smoke run: num_samples " << spec.num_samples << " -> " << samples;
  if (grid > 1) said << " (each of the " << grid << " grid points once)";
  spec.num_samples = samples;
  if (static_cast<int64_t>(spec.points_to_evaluate.size()) > samples) {
    said << ", points_to_evaluate " << spec.points_to_evaluate.size() << " -> " << samples;
    spec.points_to_evaluate.resize(static_cast<size_t>(samples));
  }
  const int64_t iterations = std::min(spec.stop.training_iteration.value_or(kSmokeIterations), kSmokeIterations);
  said << ", stop.training_iteration " << (spec.stop.training_iteration ? std::to_string(*spec.stop.training_iteration) : "none")
       << " -> " << iterations;
  spec.stop.training_iteration = iterations;
  return said.str();
}

namespace {

std::string compact(const Json& value) { return value.is_object() && value.empty() ? "" : " " + value.dump(); }

std::string where_trials_run(const PreparedSweep& sweep) {
  const SweepSpec& spec = sweep.spec;
  const bool local = std::all_of(sweep.hosts.begin(), sweep.hosts.end(), [](const Host& h) { return h.local; });
  // ThreadExecutor::accepts' rule (tuner/exec/thread_executor.cpp), said in words.
  if (sweep.function || (local && sweep.trainable && sweep.trainable->info.in_process && spec.resources.workers == 1 &&
                         !spec.resources.use_mpi)) {
    return "threads of the driver (in-process)";
  }
  return "MPI worker groups of " + std::to_string(spec.resources.workers) + " rank" +
         (spec.resources.workers == 1 ? "" : "s") + " (mpirun)";
}

std::string describe_hosts(const PreparedSweep& sweep) {
  if (sweep.hosts.size() == 1 && sweep.hosts[0].local) {
    return std::to_string(sweep.slots) + " slots on this machine" +
           (sweep.hosts[0].gpus > 0 ? ", " + std::to_string(sweep.hosts[0].gpus) + " GPUs" : "");
  }
  std::string names;
  for (const Host& host : sweep.hosts) names += (names.empty() ? "" : ", ") + host.name + ":" + std::to_string(host.slots);
  return std::to_string(sweep.slots) + " slots on " + std::to_string(sweep.hosts.size()) + " hosts (" + names + ")";
}

std::string describe_stop(const StopCriteria& stop, const SweepSpec& spec) {
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  if (stop.training_iteration) add("after " + std::to_string(*stop.training_iteration) + " results");
  for (const auto& [key, threshold] : stop.metric_thresholds) {
    std::string mode;
    for (const Objective& o : spec.objectives) mode = o.metric == key ? o.mode : mode;
    if (key == spec.metric) mode = spec.mode;
    std::ostringstream text;
    text << key << (mode == "min" ? " <= " : " >= ") << threshold;
    add(text.str());
  }
  if (stop.time_budget_s) {
    std::ostringstream text;
    text << "the sweep after " << *stop.time_budget_s << " s";
    add(text.str());
  }
  if (const auto& p = stop.plateau) {
    std::ostringstream text;
    text << "a trial whose last " << p->num_results << " values of " << (p->metric.empty() ? spec.metric : p->metric)
         << " have a std < " << p->std << " (after " << p->grace_period << " values";
    if (p->metric_threshold) text << ", once " << ((p->mode.empty() ? spec.mode : p->mode) == "min" ? "<= " : ">= ")
                                  << *p->metric_threshold;
    text << ")";
    add(text.str());
  }
  if (const auto& p = stop.experiment_plateau) {
    std::ostringstream text;
    text << "the sweep when its best " << p->top << " values of " << (p->metric.empty() ? spec.metric : p->metric)
         << " have a std <= " << p->std << " for " << p->patience + 1 << " result" << (p->patience ? "s" : "")
         << " in a row";
    add(text.str());
  }
  return out.empty() ? "none (trials end when the trainable returns)" : out;
}

}  // namespace

std::string describe_plan(const PreparedSweep& sweep, const RunConfig& run) {
  const SweepSpec& spec = sweep.spec;
  if (!spec.name.empty() && Store::exists(run.storage_path) &&
      Store::open(run.storage_path, /*read_only=*/true)->find_experiment(spec.name)) {
    throw ConfigError("experiment '" + spec.name + "' already exists in " + run.storage_path +
                      " (continue it with `tune resume " + spec.name + "` or pick another --name)");
  }
  std::ostringstream out;
  auto line = [&out](const char* what, const std::string& text) {
    out << "  " << what << std::string(13 - std::string(what).size(), ' ') << text << "\n";
  };
  line("experiment", (spec.name.empty() ? "(named <trainable>-<time> when it starts)" : spec.name) + " in " +
                         run.storage_path + (Store::exists(run.storage_path) ? "" : " (a new store)"));
  std::string trainable = spec.trainable;
  if (spec.command.is_object()) trainable = "command " + spec.command.value("argv", Json::array()).dump();
  if (sweep.trainable && !sweep.trainable->info.description.empty() && !spec.command.is_object())
    trainable += ": " + sweep.trainable->info.description;
  line("trainable", trainable);
  if (!spec.data.is_null()) line("data", spec.data.dump());
  if (!spec.preprocess.is_null()) line("preprocess", spec.preprocess.dump());
  const int64_t total = sweep.searcher ? sweep.searcher->total() : -1;
  std::string trials = total < 0 ? "unbounded (until a stop criterion ends the sweep)" : std::to_string(total);
  trials += " (num_samples " + std::to_string(spec.num_samples);
  if (spec.param_space.grid_size() > 1) trials += " x " + std::to_string(spec.param_space.grid_size()) + " grid points";
  if (!spec.points_to_evaluate.empty())
    trials += ", " + std::to_string(spec.points_to_evaluate.size()) + " points_to_evaluate first";
  trials += ")";
  if (spec.max_concurrent_trials > 0) trials += ", at most " + std::to_string(spec.max_concurrent_trials) + " at a time";
  line("trials", trials);
  line("search", spec.search.algorithm + compact(spec.search.params) +
                     (spec.search.seed ? ", seed " + std::to_string(*spec.search.seed)
                                       : ", a random seed (drawn when it runs, recorded in the store)"));
  line("scheduler", spec.scheduler.type + compact(spec.scheduler.params));
  if (spec.objectives.size() > 1) {
    std::string objectives;
    for (const Objective& o : spec.objectives) objectives += (objectives.empty() ? "" : ", ") + o.metric + " (" + o.mode + ")";
    line("metrics", objectives);
  } else {
    line("metric", spec.metric.empty() ? "none" : spec.metric + " (" + spec.mode + ")");
  }
  const Resources& r = spec.resources;
  line("resources", std::to_string(r.workers) + " worker(s) x " + std::to_string(r.cpus_per_worker) + " cpu(s)" +
                        (r.gpus_per_worker > 0 ? " x " + std::to_string(r.gpus_per_worker) + " GPU(s)" : "") +
                        " a trial, on " + where_trials_run(sweep) + "; " + describe_hosts(sweep));
  line("stop", describe_stop(spec.stop, spec));
  const CheckpointOptions& c = spec.checkpoint;
  line("checkpoints", c.num_to_keep == 0 ? "keep all"
                                         : "keep the best " + std::to_string(c.num_to_keep) + " by " +
                                               (c.score_attribute.empty() ? spec.metric : c.score_attribute) +
                                               " and the latest");
  line("failures", "retry " + (spec.failure.max_failures < 0 ? std::string("without limit")
                                                             : std::to_string(spec.failure.max_failures) + " time(s)"));
  for (const Parameter& p : spec.param_space.parameters()) line("parameter", p.path + " " + p.domain.to_json().dump());
  for (const auto& [path, value] : spec.param_space.constants()) line("constant", path + " = " + value.dump());
  return out.str();
}

}  // namespace tune::internal
