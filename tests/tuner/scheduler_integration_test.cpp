// The driver acting on scheduler decisions (pause, resume, exploit), with
// scripted schedulers handed to the Tuner.
#include <gtest/gtest.h>

#include <fstream>
#include <iomanip>
#include <mutex>
#include <set>
#include <vector>

#include "schedulers/scheduler.h"
#include "tuner_test_util.h"
#include "base/error.h"
#include "tuner/tuner.h"

namespace tune {
namespace {

using testing::TempDir;

using testing::quiet_run;

SweepSpec spec_of(const std::string& name, int samples) { return testing::one_parameter_spec(name, samples, 1); }

// Checkpoints every iteration; its state is the sum of the x values it trained with.
void counting_trainable(Session& s) {
  double state = 0;
  if (s.checkpoint()) std::ifstream(s.checkpoint()->path + "/state") >> state;
  const int64_t iterations = s.config().value("iterations", 6);
  for (int64_t i = s.iteration() + 1; i <= iterations; ++i) {
    state += s.config()["x"].get<double>();
    std::string dir = s.make_checkpoint_dir();
    std::ofstream(dir + "/state") << std::setprecision(17) << state;
    s.report({{"loss", 1.0 / i}, {"state", state}}, dir);
  }
}

// Pauses each trial once at iteration 2; resumes paused trials oldest first,
// but only once every trial has reached its pause (so new trials go first).
class PauseOnce : public Scheduler {
 public:
  explicit PauseOnce(int trials) : trials_(trials) {}
  TrialDecision on_result(int64_t trial, const Json& result) override {
    if (result["training_iteration"] == 2 && paused_once_.insert(trial).second) return TrialDecision::pause();
    return TrialDecision::next();
  }
  std::optional<int64_t> choose_trial_to_run(const std::vector<int64_t>& paused) override {
    if (static_cast<int>(paused_once_.size()) < trials_) return std::nullopt;
    return paused.front();
  }
  std::set<int64_t> paused_once_;
  int trials_;
};

TEST(SchedulerIntegration, PausedTrialsResumeFromTheirCheckpointWithContinuousIterations) {
  TempDir dir;
  Tuner tuner(counting_trainable, spec_of("pause", 3), quiet_run(dir, 1));
  tuner.set_scheduler(std::make_unique<PauseOnce>(3));
  ResultGrid results = tuner.fit();
  ASSERT_EQ(results.num_terminated(), 3);

  auto store = Store::open(dir.path(), true);
  auto experiment = store->find_experiment("pause");
  std::vector<std::pair<int64_t, int64_t>> order;  // (trial, iteration) as committed
  for (const auto& trial : store->trials(experiment->id)) {
    auto rows = store->results(trial.id);
    ASSERT_EQ(rows.size(), 6u);
    for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].iteration, static_cast<int64_t>(i + 1));
    EXPECT_EQ(trial.attempts, 2);
    const double x = trial.config["x"];
    EXPECT_DOUBLE_EQ(trial.last_result["state"].get<double>(), 6 * x);  // restored, not restarted
    for (const auto& r : rows) order.emplace_back(r.id, trial.trial_index);
  }
  // One slot: every trial reached its pause before any resumed.
  std::sort(order.begin(), order.end());
  std::vector<int64_t> sequence;
  for (const auto& [id, trial] : order) sequence.push_back(trial);
  EXPECT_EQ(sequence, (std::vector<int64_t>{0, 0, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}));
}

// Trial 1 copies trial 0 at its iteration `at` with x = 10; trial 0 may be
// stopped early at `donor_stop` (a donor behind the recipient).
class ExploitOnce : public Scheduler {
 public:
  ExploitOnce(int64_t at, int64_t donor_stop) : at_(at), donor_stop_(donor_stop) {}
  TrialDecision on_result(int64_t trial, const Json& result) override {
    if (trial == 0 && result["training_iteration"] == donor_stop_) return TrialDecision::stop();
    if (trial == 1 && result["training_iteration"] == at_ && !done_) {
      done_ = true;
      return TrialDecision::exploit(0, {{"x", 10.0}, {"iterations", 10}});
    }
    return TrialDecision::next();
  }

 private:
  int64_t at_, donor_stop_;
  bool done_ = false;
};

SweepSpec ten_iterations(const std::string& name) {
  SweepSpec spec = spec_of(name, 2);
  spec.param_space.constant("iterations", 10);
  return spec;
}

// PBT's exploit, as in Ray: the recipient restores the donor's checkpoint
// and its iteration, so iteration count and restored state agree, whether
// the donor is ahead of the recipient or behind it.
void check_exploit(const std::string& name, int64_t at, int64_t donor_stop) {
  TempDir dir;
  Tuner tuner(counting_trainable, ten_iterations(name), quiet_run(dir, 1));
  tuner.set_scheduler(std::make_unique<ExploitOnce>(at, donor_stop));
  ResultGrid results = tuner.fit();
  ASSERT_EQ(results.num_terminated(), 2);

  auto store = Store::open(dir.path(), true);
  auto experiment = store->find_experiment(name);
  auto trials = store->trials(experiment->id);
  const double x0 = trials[0].config["x"];
  auto lineage = store->exploits(experiment->id);
  ASSERT_EQ(lineage.size(), 1u);
  const double x1 = lineage[0].old_config["x"];  // trial 1's own x before the exploit
  EXPECT_EQ(lineage[0].trial_id, trials[1].id);
  EXPECT_EQ(lineage[0].donor_trial_id, trials[0].id);
  EXPECT_EQ(lineage[0].iteration, at);
  EXPECT_EQ(lineage[0].donor_iteration, donor_stop);  // one slot: trial 0 had ended
  EXPECT_EQ(trials[1].config, (Json{{"x", 10.0}, {"iterations", 10}}));
  // Trial 1 went on from trial 0's state at its iteration, to iteration 10.
  EXPECT_DOUBLE_EQ(trials[1].last_result["state"].get<double>(), donor_stop * x0 + (10 - donor_stop) * 10.0);
  EXPECT_EQ(trials[1].last_result["training_iteration"], 10);
  auto rows = store->results(trials[1].id);
  ASSERT_EQ(rows.size(), static_cast<size_t>(at + 10 - donor_stop));
  for (int64_t i = 0; i < at; ++i) {
    EXPECT_EQ(rows[i].iteration, i + 1);
    EXPECT_DOUBLE_EQ(rows[i].metrics["state"].get<double>(), (i + 1) * x1);
  }
  EXPECT_EQ(rows[at].iteration, donor_stop + 1) << "the first result after the exploit continues the donor's count";
  EXPECT_DOUBLE_EQ(rows[at].metrics["state"].get<double>(), donor_stop * x0 + 10.0);

  // `tune trials` shows the lineage.
  auto listed = testing::run_tune("trials " + name + " --storage " + dir.path() + " --json");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  Json json = Json::parse(listed.out);
  ASSERT_EQ(json[1]["exploits"].size(), 1u);
  EXPECT_EQ(json[1]["exploits"][0]["donor"], "trial_00000");
  EXPECT_EQ(json[1]["exploits"][0]["iteration"], at);
  EXPECT_EQ(json[1]["exploits"][0]["donor_iteration"], donor_stop);
  auto table = testing::run_tune("trials " + name + " --storage " + dir.path());
  EXPECT_NE(table.out.find("trial_00000@" + std::to_string(at)), std::string::npos) << table.out;
}

TEST(SchedulerIntegration, AnExploitFromADonorAheadRestoresItsStateAndIteration) {
  check_exploit("ahead", /*at=*/3, /*donor_stop=*/8);
}

TEST(SchedulerIntegration, AnExploitFromADonorBehindRestoresItsStateAndIteration) {
  check_exploit("behind", /*at=*/6, /*donor_stop=*/2);
}

// Pauses everything at iteration 1 and never resumes.
class PauseForever : public Scheduler {
 public:
  TrialDecision on_result(int64_t, const Json&) override { return TrialDecision::pause(); }
};

TEST(SchedulerIntegration, TrialsStillPausedWhenTheSweepEndsAreTerminated) {
  TempDir dir;
  Tuner tuner(counting_trainable, spec_of("forever", 3), quiet_run(dir, 2));
  tuner.set_scheduler(std::make_unique<PauseForever>());
  ResultGrid results = tuner.fit();
  EXPECT_EQ(results.num_terminated(), 3);
  for (const auto& r : results.results()) EXPECT_EQ(r.metrics["training_iteration"], 1);
}

TEST(SchedulerIntegration, ACustomSchedulerIsRecordedAndNeededAgainToResume) {
  TempDir dir;
  Tuner tuner(counting_trainable, spec_of("custom", 1), quiet_run(dir, 1));
  tuner.set_scheduler(std::make_unique<PauseForever>());
  tuner.fit();
  auto store = Store::open(dir.path(), true);
  EXPECT_EQ(store->find_experiment("custom")->spec["scheduler"]["type"], "custom");
  EXPECT_THROW(Tuner::restore("custom", quiet_run(dir, 1), counting_trainable).fit(), ConfigError);
}

}  // namespace
}  // namespace tune
