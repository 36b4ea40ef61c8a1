// Fixtures the tuner tests share: a quiet run into a temporary store and a
// one-parameter sweep on the loss metric.
#pragma once

#include <string>

#include <gtest/gtest.h>

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

// A trainable with two objectives: loss = (x - 0.3)^2 + y (min), accuracy =
// 1 - (x - 0.7)^2 - y / 2 (max); x trades one for the other, so the Pareto
// front has several trials.
inline void two_objectives(Session& session) {
  const double x = session.config()["x"], y = session.config()["y"];
  session.report({{"loss", (x - 0.3) * (x - 0.3) + y}, {"accuracy", 1 - (x - 0.7) * (x - 0.7) - y / 2}});
}

inline Json json_of(const std::string& text) { return Json::parse(text); }

// Tuner::fit() builds its grid from the driver's memory, not from the store:
// it must say what load_results() reads back, field by field.
inline void expect_grid_is_the_stores(const ResultGrid& fitted, const std::string& storage) {
  const ResultGrid stored = load_results(storage, fitted.experiment_name());
  ASSERT_EQ(fitted.size(), stored.size());
  for (size_t i = 0; i < fitted.size(); ++i) {
    const Result &a = fitted.results()[i], &b = stored.results()[i];
    EXPECT_EQ(a.trial_index, b.trial_index);
    EXPECT_EQ(a.trial_name, b.trial_name);
    EXPECT_EQ(a.status, b.status) << a.trial_name;
    EXPECT_EQ(a.config, b.config) << a.trial_name;
    EXPECT_EQ(a.metrics, b.metrics) << a.trial_name;
    EXPECT_EQ(a.checkpoint, b.checkpoint) << a.trial_name;
    EXPECT_EQ(a.error, b.error) << a.trial_name;
  }
}

}  // namespace tune::testing
