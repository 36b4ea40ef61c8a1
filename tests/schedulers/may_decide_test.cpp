// Scheduler::may_decide: where a scheduler says it cannot act on a trial's
// next result, the driver lets that result run ahead of its answer
// (RunConfig::run_ahead). The oracle is the scheduler itself: a wrapper asks
// may_decide() before every on_result() of whole simulated sweeps (random
// curves and step times, pauses, promotions, backfill, exploits) and checks
// that every result it called free was answered kContinue.
#include <gtest/gtest.h>

#include <random>

#include "schedulers/scheduler.h"
#include "schedulers/simulator.h"

namespace tune {
namespace {

class Checked : public Scheduler {
 public:
  explicit Checked(std::unique_ptr<Scheduler> inner) : inner_(std::move(inner)) {}

  void on_trial_add(int64_t trial, const Json& config) override { inner_->on_trial_add(trial, config); }
  TrialDecision on_result(int64_t trial, const Json& result) override {
    const int64_t iteration = result.at("training_iteration").get<int64_t>();
    const bool may = inner_->may_decide(trial, iteration);
    TrialDecision decision = inner_->on_result(trial, result);
    ++results;
    if (!may) {
      ++free;
      if (decision.action != TrialAction::kContinue) {
        ++broken;
        ADD_FAILURE() << "trial " << trial << " at iteration " << iteration << ": may_decide said no, on_result said "
                      << static_cast<int>(decision.action);
      }
    }
    return decision;
  }
  void on_checkpoint(int64_t trial, int64_t iteration) override { inner_->on_checkpoint(trial, iteration); }
  void on_trial_complete(int64_t trial, const Json& last) override { inner_->on_trial_complete(trial, last); }
  void on_trial_error(int64_t trial) override { inner_->on_trial_error(trial); }
  std::optional<int64_t> choose_trial_to_run(const std::vector<int64_t>& paused) override {
    return inner_->choose_trial_to_run(paused);
  }
  TrialDecision on_trial_resume(int64_t trial) override { return inner_->on_trial_resume(trial); }
  void on_no_more_trials() override { inner_->on_no_more_trials(); }
  bool can_start_new_trial() const override { return inner_->can_start_new_trial(); }

  int64_t results = 0, free = 0, broken = 0;

 private:
  std::unique_ptr<Scheduler> inner_;
};

// A sweep of `trials` noisy curves loss = a + b / t on `workers`, steps of
// different lengths; the same seed gives the same sweep.
SimulationOptions sweep(uint64_t seed, int workers, int64_t trials, int64_t max_iterations) {
  SimulationOptions o;
  o.workers = workers;
  o.num_trials = trials;
  o.max_iterations = max_iterations;
  o.config_of = [seed](int64_t i) {
    std::mt19937_64 rng(seed * 7919 + static_cast<uint64_t>(i));
    std::uniform_real_distribution<double> u(0, 1);
    return Json{{"a", u(rng)}, {"b", 2 * u(rng)}, {"h0", u(rng)}, {"h1", u(rng)}, {"pace", 0.5 + u(rng)}};
  };
  o.step = [seed](const Json& c, std::vector<double>&, int64_t t) {
    std::mt19937_64 rng(seed + static_cast<uint64_t>(t) * 31 + static_cast<uint64_t>(c["a"].get<double>() * 1e6));
    std::normal_distribution<double> noise(0, 0.02);
    return c["a"].get<double>() + c["b"].get<double>() / static_cast<double>(t) + noise(rng);
  };
  o.step_time = [](int64_t, const Json& c, int64_t) { return c["pace"].get<double>(); };
  return o;
}

struct Case {
  std::string type;
  Json params;
};

std::vector<Case> cases() {
  const Json mutations = {{"h0", {{"uniform", {0.0, 1.0}}}}, {"h1", {{"uniform", {0.0, 1.0}}}}};
  return {
      {"fifo", Json::object()},
      {"asha", {{"reduction_factor", 3}, {"max_t", 27}}},
      {"asha", {{"reduction_factor", 2}, {"max_t", 32}, {"grace_period", 2}, {"brackets", 3}}},
      {"asha", {{"promotion", true}, {"reduction_factor", 3}, {"max_t", 27}}},
      {"asha", {{"promotion", true}, {"reduction_factor", 3}, {"max_t", 27}, {"backfill", false}}},
      {"asha", {{"reduction_factor", 3}, {"max_t", 27}, {"stop_last_trials", false}}},
      {"pbt", {{"time_attr", "training_iteration"}, {"perturbation_interval", 4}, {"hyperparam_mutations", mutations}}},
      {"pbt",
       {{"time_attr", "training_iteration"}, {"perturbation_interval", 3}, {"burn_in_period", 5}, {"synch", true},
        {"hyperparam_mutations", mutations}}},
      {"median_stopping", {{"time_attr", "training_iteration"}, {"grace_period", 4}, {"min_samples_required", 2}}},
      {"median_stopping",
       {{"time_attr", "training_iteration"}, {"grace_period", 2}, {"min_time_slice", 3}, {"min_samples_required", 2}}},
      {"hyperband", {{"max_t", 27}, {"reduction_factor", 3}}},
  };
}

TEST(MayDecide, EveryResultASchedulerCalledFreeIsAnsweredContinue) {
  for (const Case& c : cases()) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      SCOPED_TRACE(c.type + " " + c.params.dump() + " seed " + std::to_string(seed));
      Checked checked(make_scheduler(c.type, c.params, "loss", "min"));
      simulate(checked, sweep(seed, 4, 40, 30));
      ASSERT_EQ(checked.broken, 0);
      ASSERT_GT(checked.results, 100);
      if (c.type == "fifo") EXPECT_EQ(checked.free, checked.results);
    }
  }
}

// The saving is real where it should be: most results of rung-based and
// interval-based schedulers are free; a time attribute other than iterations
// makes none free (the iteration says nothing about it).
TEST(MayDecide, MostResultsAreFreeBetweenRungsAndNoneWithATimeInSeconds) {
  auto share = [](const std::string& type, const Json& params) {
    Checked checked(make_scheduler(type, params, "loss", "min"));
    simulate(checked, sweep(9, 4, 40, 30));
    return static_cast<double>(checked.free) / static_cast<double>(checked.results);
  };
  EXPECT_GT(share("asha", {{"reduction_factor", 3}, {"max_t", 27}}), 0.5);
  EXPECT_GT(share("pbt", {{"time_attr", "training_iteration"}, {"perturbation_interval", 4},
                          {"hyperparam_mutations", {{"h0", {{"uniform", {0.0, 1.0}}}}}}}),
            0.6);
  EXPECT_EQ(share("asha", {{"time_attr", "time_total_s"}, {"reduction_factor", 3}, {"max_t", 27}}), 0.0);
  EXPECT_EQ(share("median_stopping", {{"grace_period", 4}}), 0.0);  // time_total_s by default
}

}  // namespace
}  // namespace tune
