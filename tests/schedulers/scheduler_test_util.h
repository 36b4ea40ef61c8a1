// What the scheduler tests share: a PBT scheduler on training_iteration and
// the one-line error make_scheduler gives for bad options.
#pragma once

#include <memory>
#include <string>

#include "base/error.h"
#include "schedulers/scheduler.h"

namespace tune::testing {

// PBT on training_iteration with one mutable key x in [0, 1], the bottom and
// top half as quantiles, minimising loss.
inline std::unique_ptr<Scheduler> iteration_pbt(int interval) {
  return make_scheduler("pbt",
                        {{"time_attr", "training_iteration"}, {"perturbation_interval", interval}, {"quantile_fraction", 0.5},
                         {"hyperparam_mutations", {{"x", {{"uniform", {0, 1}}}}}}},
                        "loss", "min");
}

// what() of the ConfigError make_scheduler(type, params, "loss", "min")
// throws, or "no error".
inline std::string scheduler_error(const std::string& type, const Json& params) {
  try {
    make_scheduler(type, params, "loss", "min");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace tune::testing
