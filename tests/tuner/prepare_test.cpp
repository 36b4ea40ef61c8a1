// prepare_sweep: the one check before a sweep runs, for what a sweep file
// cannot know (the trainable, the slots) and what it can.
#include "tuner/driver/prepare.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "tuner/spec/sweep_reader.h"

namespace tune::internal {
namespace {

RunConfig slots(int n) {
  RunConfig run;
  run.slots = n;
  return run;
}

// The error prepare_sweep gives for a sweep file, located.
std::string error_of(const std::string& yaml, int n_slots = 2) {
  register_builtin_trainables();
  try {
    LoadedSweep loaded = read_sweep(yaml, "sweep.yaml");
    prepare_sweep(loaded.spec, slots(n_slots), {}, nullptr, loaded.source.get(), false);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Prepare, NamesTheKeyOfEveryEnvironmentError) {
  EXPECT_EQ(error_of("trainable: branni\nparam_space: {x0: 1}\n"),
            "sweep.yaml:1: unknown trainable 'branni' (did you mean 'branin'?)");
  EXPECT_EQ(error_of("trainable: branin\nresources: {workers: 4}\nparam_space: {}\n"),
            "sweep.yaml:2: a trial needs 4 slots (workers x cpus_per_worker) but only 2 are available (raise --slots)");
  EXPECT_EQ(error_of("trainable: branin\nparam_space: {}\ndata: {path: a.csv}\n"),
            "sweep.yaml:3: trainable 'branin' takes no data: or preprocess: block");
  EXPECT_EQ(error_of("name: ../escape\ntrainable: branin\nparam_space: {}\n"),
            "sweep.yaml:1: invalid experiment name '../escape' (use letters, digits, '_', '-', '.', starting with a "
            "letter or digit)");
  EXPECT_EQ(error_of("trainable: branin\nmetric: loss\nmode: min\nscheduler: {type: asha, max_t: -1}\nparam_space: {}\n"),
            "sweep.yaml:4: scheduler: scheduler asha: max_t must be a positive number, got -1");
}

TEST(Prepare, BuildsTheSearcherAndSchedulerOnceAndFixesTheSeed) {
  register_builtin_trainables();
  SweepSpec spec;
  spec.trainable = "branin";
  spec.metric = "loss";
  spec.mode = "min";
  spec.param_space.add("x0", uniform(-5, 10));
  PreparedSweep sweep = prepare_sweep(spec, slots(2), {}, nullptr, nullptr, /*resume=*/false);
  ASSERT_TRUE(sweep.searcher);
  ASSERT_TRUE(sweep.scheduler);
  EXPECT_TRUE(sweep.spec.search.seed.has_value()) << "a new experiment records its seed";
  EXPECT_EQ(sweep.trainable->name, "branin");
  EXPECT_EQ(sweep.slots, 2);
  PreparedSweep resumed = prepare_sweep(spec, slots(2), {}, nullptr, nullptr, /*resume=*/true);
  EXPECT_FALSE(resumed.spec.search.seed.has_value()) << "resume keeps what the store has";
}

TEST(Prepare, ACustomSchedulerMustBePassedAgainOnResume) {
  SweepSpec spec;
  spec.name = "mine";
  spec.scheduler.type = "custom";
  spec.param_space.add("x", uniform(0, 1));
  try {
    prepare_sweep(spec, slots(1), [](Session&) {}, nullptr, nullptr, true);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "experiment 'mine' ran a custom C++ scheduler: pass it again (Tuner::set_scheduler)");
  }
}

}  // namespace
}  // namespace tune::internal
