// What the PBT tests share: a PBT scheduler on training_iteration.
#pragma once

#include <memory>

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

}  // namespace tune::testing
