#include "tuner/preflight.h"

#include <cctype>
#include <thread>

#include "schedulers/scheduler.h"
#include "search/searcher.h"
#include "tuner/error.h"

namespace tune::internal {

int available_slots(const RunConfig& run) {
  if (run.slots > 0) return run.slots;
  unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

const RegisteredTrainable* resolve_trainable(const SweepSpec& spec, const TrainableFunction& function) {
  if (function) return nullptr;
  if (spec.trainable.empty()) throw ConfigError("no trainable: set `trainable:` to a registered name");
  const RegisteredTrainable* found = find_trainable(spec.trainable);
  if (!found) {
    std::string hint = closest_match(spec.trainable, trainable_names());
    std::string known;
    for (const auto& name : trainable_names()) known += (known.empty() ? "" : ", ") + name;
    throw ConfigError("unknown trainable '" + spec.trainable + "'" +
                      (hint.empty() ? " (registered: " + known + ")" : " (did you mean '" + hint + "'?)"));
  }
  return found;
}

void check_experiment_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 100 && std::isalnum(static_cast<unsigned char>(name[0]));
  for (char c : name) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  }
  if (!ok) {
    throw ConfigError("invalid experiment name '" + name +
                      "' (use letters, digits, '_', '-', '.', starting with a letter or digit)");
  }
}

void preflight(const SweepSpec& spec, const RunConfig& run, const TrainableFunction& function,
               bool custom_scheduler) {
  if (spec.scheduler.type == "custom" && !custom_scheduler) {
    throw ConfigError("experiment '" + spec.name + "' ran a custom C++ scheduler: pass it again (Tuner::set_scheduler)");
  }
  spec.validate();
  if (!spec.name.empty()) check_experiment_name(spec.name);
  const RegisteredTrainable* registered = resolve_trainable(spec, function);
  if (function && (spec.resources.workers > 1 || spec.resources.use_mpi)) {
    throw ConfigError("a C++ lambda trainable runs in-process; to run MPI groups, register it by name "
                      "(tune::register_trainable), call tune::init() first in main, and set spec.trainable");
  }
  const bool has_setup = !spec.data.is_null() || !spec.preprocess.is_null();
  if (registered && registered->info.check_setup) {
    registered->info.check_setup(spec.setup());
  } else if (has_setup) {
    throw ConfigError("trainable '" + (registered ? spec.trainable : std::string("(C++ function)")) +
                      "' takes no data: or preprocess: block");
  }
  const int slots = available_slots(run);
  const int need = spec.resources.workers * spec.resources.cpus_per_worker;
  if (need > slots) {
    throw ConfigError("a trial needs " + std::to_string(need) + " slots (workers x cpus_per_worker) but only " +
                      std::to_string(slots) + " are available (raise --slots)");
  }
  // Sampling once catches spaces that parse but cannot resolve.
  auto probe = make_searcher(spec.search_options(), spec.param_space, spec.num_samples, spec.points_to_evaluate);
  (void)probe->suggest(0);
  if (!custom_scheduler) (void)make_scheduler(spec.scheduler.type, spec.scheduler.params, spec.metric, spec.mode);
}

}  // namespace tune::internal
