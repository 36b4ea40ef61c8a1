// Scheduler options refused with one-line errors, and median stopping's rule.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "scheduler_test_util.h"
#include "schedulers/scheduler.h"

namespace tune {
namespace {

TEST(SchedulerOptions, HyperBandMedianAndUnknownTypesAreOneLineErrors) {
  const auto error = testing::scheduler_error;
  EXPECT_EQ(error("hyperband", {{"reduction_factor", 1}}), "scheduler hyperband: reduction_factor must be a number > 1, got 1");
  EXPECT_EQ(error("hyperband", {{"max_t", "lots"}}), "scheduler hyperband: max_t must be a positive number, got 'lots'");
  EXPECT_EQ(error("median_stopping", {{"hard_stop", false}}),
            "scheduler median_stopping: hard_stop must be true (pausing instead of stopping is not supported: a paused "
            "trial would only be judged again), got false");
  EXPECT_EQ(error("median_stopping", {{"min_samples_required", 0}}),
            "scheduler median_stopping: min_samples_required must be an integer >= 1, got 0");
  EXPECT_EQ(error("hyperbnd", Json::object()),
            "unknown scheduler 'hyperbnd' (did you mean 'hyperband'?); expected one of fifo, asha, hyperband, "
            "median_stopping, pbt, pb2");
  EXPECT_EQ(error("asha", Json::array()), "scheduler asha: options must be a mapping, got []");
}

TEST(MedianStopping, StopsTrialsWorseThanTheMedianOfRunningMeans) {
  auto s = make_scheduler("median_stopping",
                          {{"time_attr", "training_iteration"}, {"grace_period", 2}, {"min_samples_required", 2}},
                          "loss", "min");
  auto r = [](double t, double loss) { return Json{{"training_iteration", t}, {"loss", loss}}; };
  for (int t = 1; t <= 3; ++t) {
    EXPECT_EQ(s->on_result(0, r(t, 1.0 / t)).action, TrialAction::kContinue);  // 1, .5, .33
    EXPECT_EQ(s->on_result(1, r(t, 2.0 / t)).action, TrialAction::kContinue);  // 2, 1, .67 (only 1 other)
  }
  // Trial 2 at t = 1: before grace. At t = 2 its best (0.9) vs the median of
  // running means up to 2: trial 0: 0.75, trial 1: 1.5 -> median 1.125: continue.
  EXPECT_EQ(s->on_result(2, r(1, 0.95)).action, TrialAction::kContinue);
  EXPECT_EQ(s->on_result(2, r(2, 0.9)).action, TrialAction::kContinue);
  // Trial 3 with best 1.2 at t = 2: worse than 1.125 -> stop.
  EXPECT_EQ(s->on_result(3, r(1, 1.3)).action, TrialAction::kContinue);
  EXPECT_EQ(s->on_result(3, r(2, 1.2)).action, TrialAction::kStop);
}

}  // namespace
}  // namespace tune
