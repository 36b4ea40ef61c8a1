// Fixtures the tuner tests share: a quiet run into a temporary store and a
// one-parameter sweep on the loss metric.
#pragma once

#include <string>

#include "test_util.h"
#include "tuner/tuner.h"

namespace tune::testing {

inline RunConfig quiet_run(const TempDir& dir, int slots = 2) {
  RunConfig run;
  run.storage_path = dir.path();
  run.verbose = false;
  run.slots = slots;
  return run;
}

// name, num_samples, seed; x ~ uniform(low, high); minimise loss.
inline SweepSpec one_parameter_spec(const std::string& name, int64_t samples, uint64_t seed, double low = 0,
                                    double high = 1) {
  SweepSpec spec;
  spec.name = name;
  spec.metric = "loss";
  spec.mode = "min";
  spec.num_samples = samples;
  spec.search.seed = seed;
  spec.param_space.add("x", uniform(low, high));
  return spec;
}

}  // namespace tune::testing
