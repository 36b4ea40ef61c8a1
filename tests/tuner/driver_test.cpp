// The driver's decision paths, a step at a time, with a fake executor and a
// fake clock: pause and resume, exploit, retry after a failure, stop
// criteria, interrupt and resume, stale events, and determinism.
#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <filesystem>
#include <fstream>

#include "driver_test_util.h"
#include "tuner_test_util.h"
#include "schedulers/scheduler.h"
#include "storage/store.h"
#include "tuner/driver/checkpoints.h"
#include "tuner/driver/driver_impl.h"
#include "tuner/driver/prepare.h"

namespace tune {
namespace {

using internal::AttemptId;
using internal::Verdict;
using testing::FakeClock;
using testing::FakeExecutor;
using testing::Harness;
using testing::TempDir;

// Decisions from a script, per trial; resumes the first paused trial.
class ScriptedScheduler : public Scheduler {
 public:
  explicit ScriptedScheduler(std::map<int64_t, std::deque<TrialDecision>> script = {}) : script_(std::move(script)) {}
  TrialDecision on_result(int64_t trial, const Json&) override {
    auto& next = script_[trial];
    if (next.empty()) return TrialDecision::next();
    TrialDecision decision = next.front();
    next.pop_front();
    return decision;
  }
  std::optional<int64_t> choose_trial_to_run(const std::vector<int64_t>& paused) override {
    chosen_from.push_back(paused);
    return paused.front();
  }
  std::vector<std::vector<int64_t>> chosen_from;

 private:
  std::map<int64_t, std::deque<TrialDecision>> script_;
};

SweepSpec spec_of(int64_t samples) { return testing::one_parameter_spec("fake", samples, 1); }

// A final trial's config and last result are packed (the driver keeps every
// trial it has seen); unpacked they are what they were, value for value and
// as text (the ResultGrid and the progress table read them so).
TEST(DriverTrialState, APackedTrialUnpacksToTheSameConfigAndResult) {
  internal::TrialState trial;
  trial.config = {{"lr", 0.001},
                  {"model", {{"layers", 3}, {"act", "relu"}, {"dims", {64, 32}}, {"empty", Json::object()}}},
                  {"flag", true},
                  {"offset", -5},
                  {"seed", 18446744073709551615ull},
                  {"name", "caf\u00e9 \"quoted\""},
                  {"third", 1.0 / 3.0}};
  trial.last_result = {{"loss", 0.25}, {"training_iteration", 7}, {"time_total_s", 1.5e-7}, {"note", nullptr},
                       {"timestamp", 1.7e9 + 0.123456789}};
  const Json config = trial.config, result = trial.last_result;
  internal::pack(trial, "loss");
  EXPECT_TRUE(trial.config.is_null());
  EXPECT_EQ(trial.packed_metric, 0.25) << "what the progress table ranks it by";
  EXPECT_TRUE(trial.last_result.is_null());
  ASSERT_FALSE(trial.packed.empty());
  EXPECT_LT(trial.packed.size(), config.dump().size() + result.dump().size()) << "smaller than its text";
  internal::TrialRecordView view = internal::unpacked(trial);
  EXPECT_EQ(view.config, config);
  EXPECT_EQ(view.last_result, result);
  EXPECT_EQ(view.config.dump(), config.dump());
  EXPECT_EQ(view.last_result.dump(), result.dump());
  const auto packed = trial.packed;
  internal::pack(trial, "loss");  // packing twice changes nothing
  EXPECT_EQ(trial.packed, packed);
  internal::TrialState live;
  live.config = config;
  EXPECT_EQ(internal::unpacked(live).config, config) << "a trial not packed reads as it is";
}

// Past `unpacked_final_trials` final trials the driver holds the rest packed;
// what it hands over at the end (the ResultGrid's source) is still what the
// store says of every trial, packed or not, ended or failed.
TEST(DriverTrialState, TrialsPackedPastTheLimitAreHandedOverAsTheStoreHasThem) {
  SweepSpec spec = spec_of(5);
  spec.stop.training_iteration = 2;
  Harness h;
  h.unpacked_final_trials = 2;
  h.open(spec, 5, std::make_unique<ScriptedScheduler>());
  ASSERT_TRUE(h.step());
  for (int64_t t = 0; t < 5; ++t) h.fake->report({t, 1}, {{"loss", 1.0 / static_cast<double>(t + 1)}, {"tag", "t" + std::to_string(t)}});
  ASSERT_TRUE(h.step());
  for (int64_t t = 0; t < 4; ++t) h.fake->report({t, 1}, {{"loss", 0.5 / static_cast<double>(t + 1)}, {"tag", "u"}});
  h.fake->crash({4, 1}, "boom");
  h.step();
  for (int64_t t = 0; t < 4; ++t) h.fake->end({t, 1}, true);
  while (h.step()) {
  }
  EXPECT_EQ(h.driver->packed_trials(), 3u) << "5 final trials, 2 kept as they are";
  h.finish();
  const std::vector<internal::TrialOutcome> outcomes = h.driver->take_outcomes();
  ASSERT_EQ(outcomes.size(), 5u);
  for (const internal::TrialOutcome& o : outcomes) {
    const TrialRecord stored = h.trial(o.index);
    EXPECT_EQ(o.status, stored.status) << o.index;
    EXPECT_EQ(o.config, stored.config) << o.index;
    EXPECT_EQ(o.last_result, stored.last_result) << o.index;
    EXPECT_EQ(o.error, stored.error) << o.index;
  }
  EXPECT_EQ(outcomes[4].status, kError);
  EXPECT_EQ(outcomes[3].last_result.at("tag"), "u");
}

// The progress table ranks packed trials by the metric kept beside them and
// unpacks only the rows it lists: it reads the same as with nothing packed.
TEST(DriverTrialState, TheProgressTableIsTheSameWithTrialsPacked) {
  auto table = [](size_t unpacked) {
    SweepSpec spec = spec_of(25);
    spec.stop.training_iteration = 1;
    Harness h;
    h.verbose = true;
    h.unpacked_final_trials = unpacked;
    h.open(spec, 25, std::make_unique<ScriptedScheduler>());
    EXPECT_TRUE(h.step());
    for (int64_t t = 0; t < 25; ++t) h.fake->report({t, 1}, {{"loss", static_cast<double>((t * 7) % 25)}});
    h.step();
    for (int64_t t = 0; t < 25; ++t) h.fake->end({t, 1}, true);
    while (h.step()) {
    }
    EXPECT_EQ(h.driver->packed_trials(), unpacked == 0 ? 25u : 0u);
    ::testing::internal::CaptureStdout();
    h.finish();
    return ::testing::internal::GetCapturedStdout();
  };
  const std::string packed = table(0), unpacked = table(4096);
  EXPECT_EQ(packed, unpacked);
  EXPECT_NE(packed.find("25 TERMINATED"), std::string::npos) << packed;
  EXPECT_NE(packed.find("... 5 more trials"), std::string::npos) << packed;
  const size_t first_row = packed.find("trial_00000");  // loss 0: the best, listed first
  ASSERT_NE(first_row, std::string::npos) << packed;
  EXPECT_LT(first_row, packed.find("trial_00018")) << packed;  // loss 1 next
  EXPECT_EQ(packed.find("trial_00010 "), std::string::npos) << "loss 20: not among the 20 best\n" << packed;
}

// A burst of starts is spread over turns (DriverEnvironment::starts_per_turn):
// a turn starts at most that many, the answers of its results are sent in
// that turn, and the next turn starts more; every trial runs, in order.
TEST(DriverLaunch, ABurstOfStartsIsSpreadOverTurnsAndEveryTrialRuns) {
  SweepSpec spec = spec_of(10);
  spec.stop.training_iteration = 1;
  Harness h;
  h.starts_per_turn = 3;
  h.open(spec, 10, std::make_unique<ScriptedScheduler>());
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 3u) << "three a turn";
  h.fake->report({0, 1}, {{"loss", 0.5}});
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.fake->verdict({0, 1}), Verdict::kStop) << "answered in the turn, beside the starts";
  EXPECT_EQ(h.fake->started.size(), 6u);
  ASSERT_TRUE(h.step());
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 10u);
  for (int64_t t = 0; t < 10; ++t) EXPECT_EQ(h.fake->started[static_cast<size_t>(t)].attempt.trial, t);
  for (int64_t t = 1; t < 10; ++t) h.fake->report({t, 1}, {{"loss", 0.5}});
  for (int64_t t = 0; t < 10; ++t) h.fake->end({t, 1}, true);
  while (h.step()) {
  }
  h.finish();
  for (int64_t t = 0; t < 10; ++t) EXPECT_EQ(h.status(t), kTerminated) << t;
}

TEST(DriverPause, FreesTheSlotAndTheResumedTrialContinuesFromItsCheckpoint) {
  Harness h;
  h.open(spec_of(2), /*slots=*/1, std::make_unique<ScriptedScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
                                      {0, {TrialDecision::pause()}}}));
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 1u);
  const std::string c0 = h.checkpoint("c0", "zero");
  h.clock.advance(2);
  h.fake->report({0, 1}, {{"loss", 0.5}}, c0);
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.fake->verdict({0, 1}), Verdict::kStop);
  EXPECT_EQ(h.status(0), kPaused);
  EXPECT_EQ(h.fake->started.size(), 1u) << "the pausing attempt still holds the only slot";
  auto results = h.driver->store().results(h.trial(0).id);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].metrics["time_this_iter_s"], 2.0);

  h.fake->end({0, 1}, /*stopped=*/true);
  ASSERT_TRUE(h.step());
  const FakeExecutor::Started* resumed = h.fake->latest(0);
  ASSERT_NE(resumed, nullptr);
  EXPECT_EQ(resumed->attempt.attempt, 2);
  EXPECT_EQ(resumed->trial.iteration, 1);
  ASSERT_TRUE(resumed->trial.checkpoint.has_value());
  EXPECT_EQ(resumed->trial.checkpoint->path, c0);
  EXPECT_EQ(h.status(0), kRunning);
  EXPECT_EQ(h.fake->started.size(), 2u) << "trial 1 waits: the scheduler resumed trial 0 first";

  h.clock.advance(3);
  h.fake->report({0, 2}, {{"loss", 0.4}});
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.fake->verdict({0, 2}), Verdict::kContinue);
  results = h.driver->store().results(h.trial(0).id);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].iteration, 2) << "the iteration count goes on";
  EXPECT_EQ(results[1].metrics["time_total_s"], 5.0) << "paused time is not run time";
}

TEST(DriverExploit, RestartsTheTrialFromACopyOfTheDonorsCheckpointWithTheNewConfig) {
  Harness h;
  h.open(spec_of(2), /*slots=*/2, std::make_unique<ScriptedScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
                                      {1, {TrialDecision::exploit(0, {{"x", 0.25}})}}}));
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 2u);
  const Json own = h.trial(1).config;
  h.fake->report({0, 1}, {{"loss", 0.1}}, h.checkpoint("c0", "donor"));
  h.fake->report({1, 1}, {{"loss", 0.9}}, h.checkpoint("c1", "mine"));
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.fake->verdict({0, 1}), Verdict::kContinue);
  EXPECT_EQ(h.fake->verdict({1, 1}), Verdict::kStop);
  EXPECT_EQ(h.status(1), kPending);
  // The copy is made off the loop; the exploit is recorded once it is whole.
  EXPECT_TRUE(h.driver->store().exploits(h.driver->experiment_id()).empty());
  EXPECT_EQ(h.trial(1).config, own) << "its own config until then";
  ASSERT_TRUE(h.step_until([&] { return !h.driver->store().exploits(h.driver->experiment_id()).empty(); }));
  EXPECT_EQ(h.trial(1).config, (Json{{"x", 0.25}}));
  auto exploits = h.driver->store().exploits(h.driver->experiment_id());
  ASSERT_EQ(exploits.size(), 1u);
  EXPECT_EQ(exploits[0].donor_trial_id, h.trial(0).id);
  EXPECT_EQ(exploits[0].iteration, 1);
  EXPECT_EQ(exploits[0].donor_iteration, 1);
  std::ifstream copy(exploits[0].checkpoint_path + "/state");
  std::string content;
  copy >> content;
  EXPECT_EQ(content, "donor");

  h.fake->end({1, 1}, true);
  ASSERT_TRUE(h.step());
  const FakeExecutor::Started* restarted = h.fake->latest(1);
  EXPECT_EQ(restarted->attempt.attempt, 2);
  EXPECT_EQ(restarted->trial.config, (Json{{"x", 0.25}}));
  ASSERT_TRUE(restarted->trial.checkpoint.has_value());
  EXPECT_EQ(restarted->trial.checkpoint->path, exploits[0].checkpoint_path);
}

// A copy a test holds until it lets it go (a model's weights being copied).
class HeldCopy {
 public:
  void operator()(const std::string& source, const std::filesystem::path& target) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      began_ += 1;
      changed_.notify_all();
      changed_.wait(lock, [this] { return released_; });
    }
    internal::copy_checkpoint(source, target);
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  // Released when a test leaves early too (a failed assertion): the driver's
  // end waits for the copy under way.
  struct Guard {
    std::shared_ptr<HeldCopy> held;
    ~Guard() { held->release(); }
  };
  bool began() {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [this] { return began_ > 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int began_ = 0;
  bool released_ = false;
};

// An exploit's copy is made off the loop: while it is being made, the other
// trials' results are stored and answered, and the exploited trial waits
// (PENDING, its slot free) without ending the sweep; once it is made, the
// exploit is recorded and the trial starts from the copy.
TEST(DriverExploit, TheCopyIsMadeOffTheLoopAndTheTrialStartsOnceItIsWhole) {
  auto held = std::make_shared<HeldCopy>();
  Harness h;
  HeldCopy::Guard release_at_exit{held};
  h.copy_checkpoint = [held](const std::string& source, const std::filesystem::path& target) { (*held)(source, target); };
  h.open(spec_of(2), /*slots=*/2, std::make_unique<ScriptedScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
                                      {1, {TrialDecision::exploit(0, {{"x", 0.25}})}}}));
  ASSERT_TRUE(h.step());
  h.fake->report({0, 1}, {{"loss", 0.1}}, h.checkpoint("c0", "donor"));
  h.fake->report({1, 1}, {{"loss", 0.9}}, h.checkpoint("c1", "mine"));
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->verdict({1, 1}), Verdict::kStop);
  ASSERT_TRUE(held->began());
  h.fake->end({1, 1}, true);
  for (int i = 2; i <= 4; ++i) {
    h.clock.advance(1);
    h.fake->report({0, 1}, {{"loss", 0.1}});
    ASSERT_TRUE(h.step()) << "a copy being made is not the end of the sweep";
    const AttemptId donor{0, 1};
    EXPECT_EQ(h.fake->verdicts[donor].size(), static_cast<size_t>(i)) << "the donor's results are answered meanwhile";
  }
  EXPECT_EQ(h.driver->store().results(h.trial(0).id).size(), 4u);
  EXPECT_EQ(h.status(1), kPending);
  EXPECT_EQ(h.fake->started.size(), 2u) << "the exploited trial waits for its copy";
  EXPECT_TRUE(h.driver->store().exploits(h.driver->experiment_id()).empty());
  h.fake->end({0, 1}, true);  // only the copy is left
  ASSERT_TRUE(h.step());

  held->release();
  ASSERT_TRUE(h.step_until([&] { return h.fake->started.size() == 3; }));
  const FakeExecutor::Started* restarted = h.fake->latest(1);
  EXPECT_EQ(restarted->attempt.attempt, 2);
  EXPECT_EQ(restarted->trial.config, (Json{{"x", 0.25}}));
  auto exploits = h.driver->store().exploits(h.driver->experiment_id());
  ASSERT_EQ(exploits.size(), 1u);
  ASSERT_TRUE(restarted->trial.checkpoint.has_value());
  EXPECT_EQ(restarted->trial.checkpoint->path, exploits[0].checkpoint_path);
  std::ifstream copy(exploits[0].checkpoint_path + "/state");
  std::string content;
  copy >> content;
  EXPECT_EQ(content, "donor");
}

// A donor's checkpoint pruned (checkpoint.num_to_keep) while an exploit
// copies it stays on disk until the copy is made, then goes.
TEST(DriverExploit, ADonorCheckpointPrunedDuringItsCopyIsRemovedAfterTheCopy) {
  auto held = std::make_shared<HeldCopy>();
  SweepSpec spec = spec_of(2);
  spec.checkpoint.num_to_keep = 1;
  Harness h;
  HeldCopy::Guard release_at_exit{held};
  h.copy_checkpoint = [held](const std::string& source, const std::filesystem::path& target) { (*held)(source, target); };
  h.open(spec, /*slots=*/2, std::make_unique<ScriptedScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
                                 {1, {TrialDecision::exploit(0, {{"x", 0.25}})}}}));
  ASSERT_TRUE(h.step());
  const std::string first = h.checkpoint("c0", "donor");
  h.fake->report({0, 1}, {{"loss", 0.1}}, first);
  h.fake->report({1, 1}, {{"loss", 0.9}}, h.checkpoint("c1", "mine"));
  ASSERT_TRUE(h.step());
  ASSERT_TRUE(held->began());
  const std::string second = h.checkpoint("c0b", "donor-later");
  h.fake->report({0, 1}, {{"loss", 0.05}}, second);  // prunes `first`
  ASSERT_TRUE(h.step());
  auto donor = h.driver->store().checkpoints(h.trial(0).id);  // the live ones
  ASSERT_EQ(donor.size(), 1u) << "pruned in the store";
  EXPECT_EQ(donor[0].path, second);
  EXPECT_TRUE(std::filesystem::exists(first + "/state")) << "but kept on disk while it is copied";

  held->release();
  ASSERT_TRUE(h.step_until([&] { return !h.driver->store().exploits(h.driver->experiment_id()).empty(); }));
  const std::string copy = h.driver->store().exploits(h.driver->experiment_id())[0].checkpoint_path;
  std::string content;
  std::ifstream(copy + "/state") >> content;
  EXPECT_EQ(content, "donor") << "the copy is of the checkpoint the exploit chose";
  EXPECT_FALSE(std::filesystem::exists(first)) << "removed once copied";
  EXPECT_TRUE(std::filesystem::exists(second + "/state"));
}

// A trial whose exploit's copy is still being made can be a donor itself
// (the scheduler already ranks it with its donor's score): an exploit of it
// copies the checkpoint its own copy is of, at that iteration.
TEST(DriverExploit, AnExploitOfATrialWhoseCopyIsUnderWayCopiesWhatThatCopyIsOf) {
  auto held = std::make_shared<HeldCopy>();
  Harness h;
  HeldCopy::Guard release_at_exit{held};
  h.copy_checkpoint = [held](const std::string& source, const std::filesystem::path& target) { (*held)(source, target); };
  h.open(spec_of(3), /*slots=*/3, std::make_unique<ScriptedScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
                                      {1, {TrialDecision::exploit(0, {{"x", 0.25}})}},
                                      {2, {TrialDecision::next(), TrialDecision::exploit(1, {{"x", 0.5}})}}}));
  ASSERT_TRUE(h.step());
  h.fake->report({0, 1}, {{"loss", 0.1}}, h.checkpoint("c0", "from-0"));
  h.fake->report({1, 1}, {{"loss", 0.9}}, h.checkpoint("c1", "from-1"));
  h.fake->report({2, 1}, {{"loss", 0.9}}, h.checkpoint("c2", "from-2"));
  ASSERT_TRUE(h.step());  // 1 exploits 0: its copy is held
  ASSERT_TRUE(held->began());
  h.fake->report({2, 1}, {{"loss", 0.9}});
  ASSERT_TRUE(h.step());  // 2 exploits 1
  EXPECT_EQ(h.fake->verdict({2, 1}), Verdict::kStop);
  held->release();
  ASSERT_TRUE(h.step_until([&] { return h.driver->store().exploits(h.driver->experiment_id()).size() == 2; }));
  auto exploits = h.driver->store().exploits(h.driver->experiment_id());
  EXPECT_EQ(exploits[1].trial_id, h.trial(2).id);
  EXPECT_EQ(exploits[1].donor_trial_id, h.trial(1).id);
  EXPECT_EQ(exploits[1].donor_iteration, 1);
  EXPECT_LE(exploits[0].time, exploits[1].time);
  std::string content;
  std::ifstream(exploits[1].checkpoint_path + "/state") >> content;
  EXPECT_EQ(content, "from-0") << "trial 1's checkpoint is trial 0's once its exploit is decided";
}

// A copy that fails for want of space is not the trial's fault: the turn
// that takes it throws DiskFullError (Driver::run stops the sweep cleanly
// and records it), and nothing of the exploit is recorded.
TEST(DriverExploit, ACopyThatFindsTheDiskFullStopsTheSweepNotTheTrial) {
  Harness h;
  h.copy_checkpoint = [](const std::string&, const std::filesystem::path&) { throw DiskFullError("no space left"); };
  h.open(spec_of(2), /*slots=*/2, std::make_unique<ScriptedScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
                                      {1, {TrialDecision::exploit(0, {{"x", 0.25}})}}}));
  ASSERT_TRUE(h.step());
  const Json own = h.trial(1).config;
  h.fake->report({0, 1}, {{"loss", 0.1}}, h.checkpoint("c0", "donor"));
  h.fake->report({1, 1}, {{"loss", 0.9}}, h.checkpoint("c1", "mine"));
  ASSERT_TRUE(h.step());
  EXPECT_THROW(h.step_until([] { return false; }), DiskFullError);
  EXPECT_TRUE(h.driver->store().exploits(h.driver->experiment_id()).empty());
  EXPECT_EQ(h.trial(1).config, own);
  EXPECT_EQ(h.trial(1).error, "") << "not counted against the trial";
}

// A copy that fails fails the exploiting trial (retried from its own
// checkpoint with its own config), not the sweep; with no retries left it
// ends in ERROR.
TEST(DriverExploit, ACopyThatFailsFailsTheTrialWhichRetriesFromItsOwnCheckpoint) {
  for (int max_failures : {1, 0}) {
    SCOPED_TRACE(max_failures);
    SweepSpec spec = spec_of(2);
    spec.failure.max_failures = max_failures;
    Harness h;
    h.copy_checkpoint = [](const std::string&, const std::filesystem::path&) { throw Error("disk on fire"); };
    h.open(spec, /*slots=*/2, std::make_unique<ScriptedScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
                                   {1, {TrialDecision::exploit(0, {{"x", 0.25}})}}}));
    ASSERT_TRUE(h.step());
    const Json own = h.trial(1).config;
    const std::string mine = h.checkpoint("c1", "mine");
    h.fake->report({0, 1}, {{"loss", 0.1}}, h.checkpoint("c0", "donor"));
    h.fake->report({1, 1}, {{"loss", 0.9}}, mine);
    ASSERT_TRUE(h.step());
    h.fake->end({1, 1}, true);
    ASSERT_TRUE(h.step_until([&] { return h.trial(1).error.find("disk on fire") != std::string::npos; }));
    EXPECT_EQ(h.trial(1).error, "exploit of trial_00000: disk on fire");
    EXPECT_TRUE(h.driver->store().exploits(h.driver->experiment_id()).empty());
    EXPECT_EQ(h.trial(1).config, own);
    if (max_failures == 0) {
      EXPECT_EQ(h.status(1), kError);
      continue;
    }
    ASSERT_TRUE(h.step_until([&] { return h.fake->started.size() == 3; }));
    const FakeExecutor::Started* restarted = h.fake->latest(1);
    EXPECT_EQ(restarted->trial.config, own);
    ASSERT_TRUE(restarted->trial.checkpoint.has_value());
    EXPECT_EQ(restarted->trial.checkpoint->path, mine);
  }
}

// The lifecycle's exploit rule, in the driver: an exploit from a trial with
// no checkpoint, from the trial itself or from a trial that does not exist
// is not carried out; the trial goes on with its own config and state.
TEST(DriverExploit, OnlyFromAnotherTrialWithACheckpointElseTheTrialGoesOn) {
  Harness h;
  h.open(spec_of(3), /*slots=*/3, std::make_unique<ScriptedScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
                                      {1, {TrialDecision::exploit(0, {{"x", 0.25}}),    // 0 has no checkpoint
                                           TrialDecision::exploit(1, {{"x", 0.5}}),     // itself
                                           TrialDecision::exploit(9, {{"x", 0.75}})}}}));  // unknown
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 3u);
  const Json config = h.trial(1).config;
  for (int i = 1; i <= 3; ++i) {
    SCOPED_TRACE(i);
    h.fake->report({0, 1}, {{"loss", 0.1}});  // never a checkpoint
    h.fake->report({1, 1}, {{"loss", 0.9}}, h.checkpoint("c1_" + std::to_string(i), "mine"));
    ASSERT_TRUE(h.step());
    ASSERT_TRUE(h.fake->verdict({1, 1}).has_value());
    EXPECT_NE(*h.fake->verdict({1, 1}), Verdict::kStop) << "the trial goes on";
    EXPECT_EQ(h.status(1), kRunning);
    EXPECT_EQ(h.trial(1).config, config);
  }
  EXPECT_TRUE(h.driver->store().exploits(h.driver->experiment_id()).empty());
  EXPECT_EQ(h.fake->started.size(), 3u) << "nothing restarted";
}

TEST(DriverFailure, RetriesFromTheLastCheckpointThenMarksTheTrialError) {
  SweepSpec spec = spec_of(1);
  spec.failure.max_failures = 1;
  Harness h;
  h.open(spec, 1, std::make_unique<ScriptedScheduler>());
  ASSERT_TRUE(h.step());
  const std::string c0 = h.checkpoint("c0", "zero");
  h.fake->report({0, 1}, {{"loss", 0.5}}, c0);
  ASSERT_TRUE(h.step());
  h.fake->crash({0, 1}, "boom");
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.trial(0).error, "boom");
  const FakeExecutor::Started* retry = h.fake->latest(0);
  EXPECT_EQ(retry->attempt.attempt, 2);
  EXPECT_EQ(retry->trial.iteration, 1);
  EXPECT_EQ(retry->trial.checkpoint->path, c0);
  EXPECT_EQ(h.status(0), kRunning);

  h.fake->crash({0, 2}, "boom again");
  EXPECT_TRUE(h.step());
  EXPECT_EQ(h.status(0), kError);
  EXPECT_EQ(h.trial(0).error, "boom again");
  EXPECT_FALSE(h.step()) << "nothing left to run";
}

TEST(DriverStopCriteria, EndTheTrialAtTheIterationOrTheThreshold) {
  SweepSpec spec = spec_of(2);
  spec.stop.training_iteration = 2;
  spec.stop.metric_thresholds["loss"] = 0.2;
  Harness h;
  h.open(spec, 2, std::make_unique<ScriptedScheduler>());
  ASSERT_TRUE(h.step());
  h.fake->report({0, 1}, {{"loss", 0.5}});
  h.fake->report({1, 1}, {{"loss", 0.1}});  // below the threshold (mode min)
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.fake->verdict({0, 1}), Verdict::kContinue);
  EXPECT_EQ(h.fake->verdict({1, 1}), Verdict::kStop);
  EXPECT_EQ(h.status(1), kTerminated);
  h.fake->report({0, 1}, {{"loss", 0.4}});
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.fake->verdict({0, 1}), Verdict::kStop);
  EXPECT_EQ(h.status(0), kTerminated);
  EXPECT_EQ(h.trial(0).last_iteration, 2);
  h.fake->end({0, 1}, true);
  h.fake->end({1, 1}, true);
  ASSERT_TRUE(h.step());
  EXPECT_FALSE(h.step());
}

// A batch job's end (its time limit, scancel, a requeue) signals every
// process of the job at once: a trial's group can die of it before the
// driver's own look at its interrupt flag in that turn. That death is the
// stop's, not the trial's: PENDING, no failure spent (max_failures 0 here).
TEST(DriverInterrupt, AGroupThatDiesOfTheSameStopIsRequeuedNotFailed) {
  TempDir store;
  Harness h(store.path());
  SweepSpec spec = spec_of(2);
  spec.failure.max_failures = 0;
  h.open(spec, 2, std::make_unique<ScriptedScheduler>());
  ASSERT_TRUE(h.step());
  h.fake->report({0, 1}, {{"loss", 0.5}});
  ASSERT_TRUE(h.step());
  h.interrupt = 1;
  h.fake->crash({0, 1}, "the group ended with signal 15 (SIGTERM)");
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.fake->started.size(), 2u) << "nothing starts once the stop is asked for";
  EXPECT_EQ(h.status(0), kPending);
  EXPECT_EQ(h.status(1), kPending);
  h.fake->crash({1, 1}, "killed", true);
  EXPECT_TRUE(h.step());
  EXPECT_FALSE(h.step());
  h.finish();
  EXPECT_EQ(h.driver->store().find_experiment("fake")->status, "INTERRUPTED");
  EXPECT_EQ(h.status(0), kPending);
  for (const auto& event : h.driver->store().events(h.driver->experiment_id()))
    EXPECT_TRUE(event.kind != "trial_error" && event.kind != "trial_retry") << event.kind << " " << event.detail.dump();
}

// failure.result_timeout_s counts a trial's silence while the driver runs:
// a turn that comes long after the one before (the driver stood still: a
// stopped process, a frozen VM) starts it over for every trial, and a trial
// that stays silent after it still fails.
TEST(DriverHungTrials, TheDriversOwnStallIsNotTheTrialsSilence) {
  Harness h;
  SweepSpec spec = spec_of(1);
  spec.failure.result_timeout_s = 5;
  spec.failure.max_failures = 0;
  h.open(spec, 1, std::make_unique<ScriptedScheduler>());
  ASSERT_TRUE(h.step());
  h.fake->report({0, 1}, {{"loss", 0.5}});
  ASSERT_TRUE(h.step());
  h.clock.advance(60);  // nothing ran for a minute, this driver included
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.status(0), kRunning) << "failed for the driver's own stall";
  for (int i = 0; i < 9; ++i) {  // 4.5 s more of silence while the driver runs
    h.clock.advance(0.5);
    ASSERT_TRUE(h.step());
  }
  EXPECT_EQ(h.status(0), kRunning);
  for (int i = 0; i < 2; ++i) {  // past 5 s
    h.clock.advance(0.5);
    h.step();
  }
  EXPECT_EQ(h.status(0), kError) << "a trial silent for the timeout while the driver ran fails";
}

// A start that found no descriptor left (the driver's hard RLIMIT_NOFILE)
// is not the trial's failure while others run: the trial waits first in
// line, no failure spent (max_failures 0), and no more trials run at once
// than were running then; as one ends, the waiting one starts. With none
// running it is a failure like any other.
TEST(DriverDescriptors, AStartOutOfDescriptorsWaitsForARunningTrialNotAFailure) {
  Harness h;
  SweepSpec spec = spec_of(4);
  spec.failure.max_failures = 0;
  h.open(spec, 3, std::make_unique<ScriptedScheduler>());
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 3u);
  h.fake->out_of_descriptors({2, 1});
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.status(2), kPending);
  EXPECT_EQ(h.fake->started.size(), 3u) << "two run: no third start until one ends";
  h.fake->end({0, 1}, false);
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 4u);
  EXPECT_EQ(h.fake->started.back().attempt.trial, 2) << "the one that waited, first in line";
  EXPECT_EQ(h.fake->started.back().attempt.attempt, 2);
  h.fake->end({1, 1}, false);
  h.fake->end({2, 2}, false);
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 5u);
  h.fake->out_of_descriptors({3, 1});  // alone: not even one can start
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.status(3), kError);
  for (int64_t index : {0, 1, 2}) EXPECT_EQ(h.status(index), kTerminated) << index;
}

// The lease's heartbeat is renewed every 2 s of the steady clock: a wall clock set back an hour does not stop it (which would let
// another driver take a live experiment over a minute later).
TEST(DriverLease, AWallClockSetBackDoesNotStopTheHeartbeats) {
  Harness h;
  h.open(spec_of(1), 1, std::make_unique<ScriptedScheduler>());
  ASSERT_TRUE(h.step());
  auto heartbeat = [&] {
    double seen = 0;
    auto holder = h.driver->store().take_lease(h.driver->experiment_id(), LeaseRecord{"probe", 1, 0, 0},
                                               [&](const LeaseRecord& held) {
                                                 seen = held.heartbeat_at;
                                                 return false;
                                               });
    EXPECT_TRUE(holder.has_value());
    return seen;
  };
  const double first = heartbeat();
  h.clock.set_wall_back(3600);
  h.clock.advance(2.5);  // past the driver's 2 s
  ASSERT_TRUE(h.step());
  EXPECT_DOUBLE_EQ(heartbeat(), first + 2.5 - 3600) << "renewed, with the wall time";
}

TEST(DriverInterrupt, RequeuesRunningTrialsAndResumeRestartsThemFromTheirCheckpoints) {
  TempDir store;
  const std::string c0 = store.file("c0");
  std::filesystem::create_directories(c0);
  {
    Harness h(store.path());
    h.open(spec_of(3), 2, std::make_unique<ScriptedScheduler>());
    ASSERT_TRUE(h.step());
    h.fake->report({0, 1}, {{"loss", 0.5}}, c0);
    ASSERT_TRUE(h.step());
    h.interrupt = 1;
    ASSERT_TRUE(h.step());
    EXPECT_EQ(h.status(0), kPending);
    EXPECT_EQ(h.status(1), kPending);
    EXPECT_EQ(h.fake->cancelled.size(), 2u);
    h.fake->crash({0, 1}, "killed", true);
    h.fake->crash({1, 1}, "killed", true);
    EXPECT_TRUE(h.step());
    EXPECT_FALSE(h.step());
    h.finish();
    EXPECT_EQ(h.driver->store().find_experiment("fake")->status, "INTERRUPTED");
    EXPECT_EQ(h.status(0), kPending) << "a failure after the interrupt is not the trial's";
    EXPECT_FALSE(h.driver->store().trial(h.driver->experiment_id(), 2).has_value());
  }
  Harness resumed(store.path());
  auto stored = Store::open(store.path())->find_experiment("fake");
  SweepSpec spec = SweepSpec::from_json(stored->spec);
  resumed.open(spec, 2, std::make_unique<ScriptedScheduler>(), /*resume=*/true);
  ASSERT_TRUE(resumed.step());
  ASSERT_EQ(resumed.fake->started.size(), 2u);
  EXPECT_EQ(resumed.fake->latest(0)->attempt.attempt, 2);
  EXPECT_EQ(resumed.fake->latest(0)->trial.iteration, 1);
  EXPECT_EQ(resumed.fake->latest(0)->trial.checkpoint->path, c0);
  EXPECT_FALSE(resumed.fake->latest(1)->trial.checkpoint.has_value());
  resumed.fake->end({0, 2}, false);
  resumed.fake->end({1, 2}, false);
  ASSERT_TRUE(resumed.step());
  EXPECT_EQ(resumed.fake->latest(2)->attempt.attempt, 1) << "the searcher goes on with trial 2";
}

// A result appends a results row only; the trial's row (last_iteration,
// last_result_json) follows at most TrialState::kRowRefreshS later while the
// trial runs (counted from its start), in the same write as every status
// change, and a resume after a driver that died between two refreshes brings
// it up to the results.
TEST(DriverTrialRow, LagsItsResultsByAtMostTheRefreshAndIsExactAtEveryStatusChange) {
  TempDir store;
  const double refresh = internal::TrialState::kRowRefreshS;
  auto results_of = [&](Harness& h, int64_t index) { return h.driver->store().results(h.trial(index).id); };
  {
    Harness h(store.path());
    h.open(spec_of(2), 2, std::make_unique<ScriptedScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
                              {1, {TrialDecision::next(), TrialDecision::next(), TrialDecision::pause()}}}));
    ASSERT_TRUE(h.step());
    h.fake->report({0, 1}, {{"loss", 0.9}});
    h.fake->report({1, 1}, {{"loss", 0.8}});
    ASSERT_TRUE(h.step());
    EXPECT_EQ(h.trial(0).last_iteration, 0) << "within the refresh: the results table only";
    EXPECT_TRUE(h.trial(0).last_result.is_null());
    ASSERT_EQ(results_of(h, 0).size(), 1u);
    h.clock.advance(refresh / 2);
    h.fake->report({0, 1}, {{"loss", 0.7}});
    h.fake->report({1, 1}, {{"loss", 0.6}});
    ASSERT_TRUE(h.step());
    EXPECT_EQ(h.trial(0).last_iteration, 0);
    ASSERT_EQ(results_of(h, 0).size(), 2u);
    EXPECT_EQ(results_of(h, 0).back().metrics.at("loss"), 0.7);
    h.fake->report({1, 1}, {{"loss", 0.5}});  // trial 1's third result: the scheduler pauses it
    ASSERT_TRUE(h.step());
    EXPECT_EQ(h.status(1), kPaused);
    EXPECT_EQ(h.trial(1).last_iteration, 3) << "a status change writes the last result with it";
    EXPECT_EQ(h.trial(1).last_result.at("loss"), 0.5);
    h.clock.advance(refresh / 2 + 0.01);
    h.fake->report({0, 1}, {{"loss", 0.4}});
    ASSERT_TRUE(h.step());
    EXPECT_EQ(h.trial(0).last_iteration, 3) << "the refresh is due";
    EXPECT_EQ(h.trial(0).last_result.at("loss"), 0.4);
    EXPECT_EQ(h.trial(0).last_result.at("training_iteration"), 3);
    h.fake->report({0, 1}, {{"loss", 0.3}});
    ASSERT_TRUE(h.step());
    EXPECT_EQ(h.trial(0).last_iteration, 3);
    EXPECT_EQ(results_of(h, 0).size(), 4u);
  // The driver stops here without finishing (an exception left its loop):
    // trial 0's row is a result behind.
  }
  {
    auto before = Store::open(store.path());
    const auto trial0 = before->trial(before->find_experiment("fake")->id, 0);
    EXPECT_EQ(trial0->status, kRunning);
    EXPECT_EQ(trial0->last_iteration, 3);
  }
  Harness resumed(store.path());
  auto stored = Store::open(store.path())->find_experiment("fake");
  resumed.open(SweepSpec::from_json(stored->spec), 2, std::make_unique<ScriptedScheduler>(), /*resume=*/true);
  EXPECT_EQ(resumed.trial(0).last_iteration, 4) << "the resume brings the row up to the results";
  EXPECT_EQ(resumed.trial(0).last_result.at("loss"), 0.3);
  EXPECT_EQ(resumed.trial(1).last_iteration, 3);
  ASSERT_TRUE(resumed.step());
  const auto* restarted = resumed.fake->latest(0);
  ASSERT_NE(restarted, nullptr);
  resumed.fake->report(restarted->attempt, {{"loss", 0.2}});  // no checkpoint: iteration 1 again
  ASSERT_TRUE(resumed.step());
  resumed.fake->end(restarted->attempt, false);
  ASSERT_TRUE(resumed.step());
  EXPECT_EQ(resumed.status(0), kTerminated);
  EXPECT_EQ(resumed.trial(0).last_iteration, 1) << "the row holds the latest result, not the highest iteration";
  EXPECT_EQ(resumed.trial(0).last_result.at("loss"), 0.2);
}

TEST(DriverEvents, StaleResultsGetStopAndRecordNothing) {
  Harness h;
  h.open(spec_of(1), 1, std::make_unique<ScriptedScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
                            {0, {TrialDecision::stop()}}}));
  ASSERT_TRUE(h.step());
  h.fake->report({0, 1}, {{"loss", 0.5}});
  h.fake->report({0, 1}, {{"loss", 0.4}});  // after the stop verdict: stale
  ASSERT_TRUE(h.step());
  const std::vector<Verdict> both_stopped = {Verdict::kStop, Verdict::kStop};
  EXPECT_EQ((h.fake->verdicts[AttemptId{0, 1}]), both_stopped);
  EXPECT_EQ(h.driver->store().results(h.trial(0).id).size(), 1u);
  EXPECT_EQ(h.status(0), kTerminated);
}

// Run-ahead answers (RunConfig::run_ahead): only where nothing can be decided
// on the trial's next result, and only while iterations are short.
TEST(DriverRunAhead, AnswersRunAheadOnlyWhereTheNextResultCannotBeDecidedOn) {
  SweepSpec spec = spec_of(2);
  spec.stop.training_iteration = 3;
  Harness h;
  h.open(spec, 1, make_scheduler("fifo", Json::object(), "loss", "min"));
  ASSERT_TRUE(h.step());
  EXPECT_FALSE(h.fake->started.at(0).trial.run_ahead) << "no iteration time known yet";
  for (int i = 1; i <= 3; ++i) {
    h.clock.advance(0.1);
    h.fake->report({0, 1}, {{"loss", 1.0 / i}});
    ASSERT_TRUE(h.step());
  }
  const std::vector<Verdict> expected = {Verdict::kRunAhead, Verdict::kContinue, Verdict::kStop};
  EXPECT_EQ((h.fake->verdicts[AttemptId{0, 1}]), expected) << "iteration 3 meets the stop criterion: 2 waits for it";
  EXPECT_EQ(h.driver->store().results(h.trial(0).id).size(), 3u);
  h.fake->end({0, 1}, true);
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 2u);
  EXPECT_TRUE(h.fake->started.at(1).trial.run_ahead) << "iterations of 0.1 s: the next trial's first result runs ahead";
  h.clock.advance(1.5);
  h.fake->report({1, 1}, {{"loss", 0.3}});
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.fake->verdict({1, 1}), Verdict::kContinue) << "an iteration of 1.5 s: the round trip is not worth it";
}

TEST(DriverRunAhead, NeverWithAMetricThresholdACautiousSchedulerOrTheOptionOff) {
  struct Case {
    const char* name;
    bool threshold, fifo, option;
  };
  for (const Case& c : {Case{"threshold", true, true, true}, Case{"scheduler", false, false, true},
                        Case{"option off", false, true, false}}) {
    SCOPED_TRACE(c.name);
    SweepSpec spec = spec_of(1);
    if (c.threshold) spec.stop.metric_thresholds["loss"] = 0.01;
    Harness h;
    h.open(spec, 1,
           c.fifo ? make_scheduler("fifo", Json::object(), "loss", "min")
                  : std::unique_ptr<Scheduler>(std::make_unique<ScriptedScheduler>()),
           false, c.option);
    ASSERT_TRUE(h.step());
    for (int i = 1; i <= 3; ++i) {
      h.clock.advance(0.1);
      h.fake->report({0, 1}, {{"loss", 1.0 / i}});
      ASSERT_TRUE(h.step());
    }
    const std::vector<Verdict> expected(3, Verdict::kContinue);
    EXPECT_EQ((h.fake->verdicts[AttemptId{0, 1}]), expected);
  }
}

// A scheduler whose state takes `cost` seconds (of the fake clock) to save.
class CostlyStateScheduler : public ScriptedScheduler {
 public:
  CostlyStateScheduler(FakeClock& clock, double cost, std::map<int64_t, std::deque<TrialDecision>> script)
      : ScriptedScheduler(std::move(script)), clock_(clock), cost_(cost) {}
  Json save_state() const override {
    saves += 1;
    clock_.advance(cost_);
    return Json::object();
  }
  void on_trial_restored(int64_t trial, const Json& config) override { restored[trial] = config; }
  mutable int saves = 0;
  std::map<int64_t, Json> restored;

 private:
  FakeClock& clock_;
  double cost_;
};

// The scheduler's state is saved at most once a second, and no more often
// than keeps its saves under ~5 % of the time (a state that grows with the
// trials seen must not take over the loop); a pause is saved with its batch.
TEST(DriverState, SavesTheSchedulersStateLessOftenWhenItIsCostlyButAPauseAtOnce) {
  Harness h;
  auto scheduler = std::make_unique<CostlyStateScheduler>(
      h.clock, 0.5, std::map<int64_t, std::deque<TrialDecision>>{{0, {}}, {1, {TrialDecision::pause()}}});
  CostlyStateScheduler* costly = scheduler.get();
  h.open(spec_of(2), 2, std::move(scheduler));
  ASSERT_TRUE(h.step());
  const int at_open = costly->saves;
  // Results every 0.1 s for 9 s: after the first save (0.5 s), the next is due 19 x 0.5 = 9.5 s later.
  int64_t iteration = 0;
  h.clock.advance(1.0);
  h.fake->report({0, 1}, {{"loss", 1.0}});
  ASSERT_TRUE(h.step());
  EXPECT_EQ(costly->saves, at_open + 1) << "a second has passed";
  for (iteration = 0; iteration < 85; ++iteration) {
    h.clock.advance(0.1);
    h.fake->report({0, 1}, {{"loss", 1.0}});
    ASSERT_TRUE(h.step());
  }
  EXPECT_EQ(costly->saves, at_open + 1) << "9 s after a save that took 0.5 s";
  h.clock.advance(0.5);
  h.fake->report({0, 1}, {{"loss", 1.0}});
  ASSERT_TRUE(h.step());
  EXPECT_EQ(costly->saves, at_open + 2) << "9.5 s after it";
  h.fake->report({1, 1}, {{"loss", 1.0}});  // trial 1 pauses: saved with its batch
  ASSERT_TRUE(h.step());
  EXPECT_EQ(costly->saves, at_open + 3);
  EXPECT_EQ(h.status(1), kPaused);
}

// A periodic save of a scheduler whose changes can be split (PBT) takes at
// most Driver::kStatePartEntries of them; the rest follow in the next turns,
// not a second later; a pause's save takes everything at once.
class SplitStateScheduler : public ScriptedScheduler {
 public:
  using ScriptedScheduler::ScriptedScheduler;
  std::optional<Json> save_state_part() override {
    whole_parts += 1;
    left = 0;
    return Json{{"part", true}};
  }
  std::optional<Json> save_state_part_up_to(size_t max_entries) override {
    limits.push_back(max_entries);
    left = left > 0 ? left - 1 : 2;  // each periodic save: three parts
    return Json{{"part", true}};
  }
  bool state_part_pending() const override { return left > 0; }
  std::vector<size_t> limits;
  int whole_parts = 0, left = 0;
};

TEST(DriverState, APeriodicSaveOfAStateThatSplitsIsSpreadOverTheNextTurns) {
  Harness h;
  auto scheduler = std::make_unique<SplitStateScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
      {1, {TrialDecision::next(), TrialDecision::next(), TrialDecision::next(), TrialDecision::next(),
           TrialDecision::next(), TrialDecision::pause()}}});
  SplitStateScheduler* split = scheduler.get();
  h.open(spec_of(2), 2, std::move(scheduler));
  ASSERT_TRUE(h.step());
  const size_t at_open = split->limits.size();
  const int whole_at_open = split->whole_parts;
  std::vector<size_t> per_turn;
  for (int turn = 0; turn < 5; ++turn) {  // 0.1 s apart: one periodic save, its three parts in three turns
    h.clock.advance(turn == 0 ? 1.5 : 0.1);
    h.fake->report({0, 1}, {{"loss", 0.5}});
    ASSERT_TRUE(h.step());
    per_turn.push_back(split->limits.size() - at_open);
  }
  EXPECT_EQ(per_turn, (std::vector<size_t>{1, 2, 3, 3, 3}));
  for (size_t i = at_open; i < split->limits.size(); ++i) EXPECT_EQ(split->limits[i], internal::Driver::kStatePartEntries);
  EXPECT_EQ(split->whole_parts, whole_at_open);
  // The first part is experiments.scheduler_state; the two after it are rows of their own.
  EXPECT_EQ(h.driver->store().scheduler_state_parts(h.driver->experiment_id()).size(), 2u);
  for (int i = 0; i < 6; ++i) {
    h.clock.advance(0.01);
    h.fake->report({1, 1}, {{"loss", 0.5}});
    ASSERT_TRUE(h.step());
  }
  EXPECT_EQ(h.status(1), kPaused);
  EXPECT_EQ(split->whole_parts, whole_at_open + 1) << "the pause's batch saved everything at once";
}

// A scheduler's run of parts that holds everything the parts before it held
// ("base" ... "rebased", Scheduler::save_state_part): once its last part is
// stored, the driver drops the parts before the run; the first part stays.
class RebasingScheduler : public ScriptedScheduler {
 public:
  using ScriptedScheduler::ScriptedScheduler;
  std::optional<Json> save_state_part() override { return next(); }
  std::optional<Json> save_state_part_up_to(size_t) override { return next(); }
  std::optional<Json> next() {
    if (parts.empty()) return Json();
    Json part = parts.front();
    parts.pop_front();
    return part;
  }
  std::deque<Json> parts = {{{"n", 1}},
                            {{"n", 2}},
                            {{"n", 3}},
                            {{"n", 4}, {"base", true}},
                            {{"n", 5}},
                            {{"n", 6}, {"rebased", true}},
                            {{"n", 7}},
                            {{"n", 8}, {"base", true}, {"rebased", true}}};
};

// The "n" of each stored part, in order.
std::vector<int> stored_part_numbers(Harness& h) {
  std::vector<int> n;
  for (const Json& part : h.driver->store().scheduler_state_parts(h.driver->experiment_id()))
    n.push_back(part.at("n").get<int>());
  return n;
}

TEST(DriverState, ARunOfPartsThatHoldsEverythingDropsThePartsBeforeIt) {
  Harness h;
  auto scheduler = std::make_unique<RebasingScheduler>(std::map<int64_t, std::deque<TrialDecision>>{});
  RebasingScheduler* rebasing = scheduler.get();
  h.open(spec_of(1), 1, std::move(scheduler));
  ASSERT_TRUE(h.step());
  auto stored = [&] { return stored_part_numbers(h); };
  std::vector<std::vector<int>> after;
  for (int turn = 0; turn < 12 && !rebasing->parts.empty(); ++turn) {
    h.clock.advance(1.5);  // a periodic save each turn
    h.fake->report({0, 1}, {{"loss", 0.5}});
    ASSERT_TRUE(h.step());
    after.push_back(stored());
  }
  ASSERT_TRUE(rebasing->parts.empty());
  EXPECT_EQ(h.driver->store().find_experiment("fake")->scheduler_state.at("n"), 1)
      << "the first part stays";
  const std::vector<std::vector<int>> expected = {{},     {2},     {2, 3},     {2, 3, 4}, {2, 3, 4, 5},
                                                  {4, 5, 6}, {4, 5, 6, 7}, {8}};
  EXPECT_EQ(std::vector<std::vector<int>>(after.end() - 8, after.end()), expected);
}

// Many parts before a run: a few go each turn, the oldest first, until none is left.
TEST(DriverState, ThePartsBeforeARunGoAFewATurnOldestFirst) {
  Harness h;
  auto scheduler = std::make_unique<RebasingScheduler>(std::map<int64_t, std::deque<TrialDecision>>{});
  RebasingScheduler* rebasing = scheduler.get();
  rebasing->parts.clear();
  for (int n = 1; n <= 12; ++n) rebasing->parts.push_back({{"n", n}});
  rebasing->parts.push_back({{"n", 13}, {"base", true}, {"rebased", true}});
  h.open(spec_of(1), 1, std::move(scheduler));
  ASSERT_TRUE(h.step());
  auto stored = [&] { return stored_part_numbers(h); };
  for (int turn = 0; turn < 20 && !rebasing->parts.empty(); ++turn) {
    h.clock.advance(1.5);
    h.fake->report({0, 1}, {{"loss", 0.5}});
    ASSERT_TRUE(h.step());
  }
  ASSERT_TRUE(rebasing->parts.empty());
  EXPECT_EQ(stored(), (std::vector<int>{10, 11, 12, 13})) << "parts 2-9 in the run's own turn";
  h.clock.advance(0.01);  // not a save's turn: the rest go all the same
  h.fake->report({0, 1}, {{"loss", 0.5}});
  ASSERT_TRUE(h.step());
  EXPECT_EQ(stored(), (std::vector<int>{13}));
}

// An exploit does not save the scheduler's state with its batch (PBT exploits
// in most batches of a large population); a resume hands the restored
// scheduler each trial's stored config, the exploited one included.
TEST(DriverState, AnExploitIsNotASaveAndAResumeHandsTheStoredConfigsToTheScheduler) {
  TempDir store;
  {
    Harness h(store.path());
    auto scheduler = std::make_unique<CostlyStateScheduler>(
        h.clock, 0.5, std::map<int64_t, std::deque<TrialDecision>>{{1, {TrialDecision::next(), TrialDecision::exploit(0, {{"x", 0.25}})}}});
    CostlyStateScheduler* costly = scheduler.get();
    h.open(spec_of(2), 2, std::move(scheduler));
    ASSERT_TRUE(h.step());
    h.clock.advance(1.0);
    h.fake->report({0, 1}, {{"loss", 0.1}}, h.checkpoint("c0", "donor"));
    h.fake->report({1, 1}, {{"loss", 0.9}});
    ASSERT_TRUE(h.step());
    const int saves = costly->saves;
    h.clock.advance(0.1);
    h.fake->report({1, 1}, {{"loss", 0.9}});  // exploits trial 0
    ASSERT_TRUE(h.step());
    ASSERT_TRUE(h.step_until([&] { return h.driver->store().exploits(h.driver->experiment_id()).size() == 1; }));
    EXPECT_EQ(costly->saves, saves) << "the exploit's batch saved the state";
    h.interrupt = 1;
    ASSERT_TRUE(h.step());
    h.fake->end_all();
    while (h.step()) {
    }
    h.finish();
  }
  Harness resumed(store.path());
  auto stored = Store::open(store.path())->find_experiment("fake");
  auto scheduler = std::make_unique<CostlyStateScheduler>(resumed.clock, 0, std::map<int64_t, std::deque<TrialDecision>>{});
  CostlyStateScheduler* restored = scheduler.get();
  resumed.open(SweepSpec::from_json(stored->spec), 2, std::move(scheduler), /*resume=*/true);
  ASSERT_EQ(restored->restored.count(1), 1u);
  EXPECT_EQ(restored->restored[1], (Json{{"x", 0.25}}));
  EXPECT_EQ(restored->restored.count(0), 1u);
}

// The driver makes no trial folder: the executor makes it where the trial
// runs (a mkdir was the largest part of a start on the driver's loop).
TEST(DriverStart, LeavesTheTrialsFolderToItsExecutor) {
  TempDir storage;
  const std::string experiment = storage.path() + "/fake";
  Harness h(storage.path());
  h.open(spec_of(1), 1, make_scheduler("fifo", Json::object(), "loss", "min"));
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 1u);
  EXPECT_EQ(h.fake->started[0].trial.trial_dir, experiment + "/trial_00000");
  EXPECT_FALSE(std::filesystem::exists(experiment + "/trial_00000")) << "the fake executor makes none";
  h.fake->report({0, 1}, {{"loss", 0.5}});
  ASSERT_TRUE(h.step());
  h.fake->end({0, 1}, false);
  ASSERT_TRUE(h.step());
  EXPECT_FALSE(h.step()) << "one sample: the sweep is over";
  h.finish();
  EXPECT_FALSE(std::filesystem::exists(experiment + "/trial_00001")) << "no folder made ahead";
}

// The same events on the same clock give the same store, byte for byte.
std::string run_scripted_sweep() {
  Harness h;
  h.open(spec_of(4), 2, std::make_unique<ScriptedScheduler>(std::map<int64_t, std::deque<TrialDecision>>{
                            {0, {TrialDecision::next(), TrialDecision::pause()}}, {1, {TrialDecision::stop()}}}));
  for (int round = 0; round < 40 && h.step(); ++round) {
    for (const AttemptId& attempt : std::set<AttemptId>(h.fake->live_attempts())) {
      if (h.fake->verdict(attempt) == Verdict::kStop) {
        h.fake->end(attempt, true);
      } else {
        h.clock.advance(0.5);
        h.fake->report(attempt, {{"loss", 1.0 / (round + 1 + attempt.trial)}});
        if (round % 3 == 2) h.fake->end(attempt, false);  // the trainable returns
      }
    }
  }
  std::string dump;
  for (const auto& record : h.driver->store().trials(h.driver->experiment_id())) {
    dump += record.status + " attempts " + std::to_string(record.attempts) + " " + record.config.dump() + "\n";
    for (const auto& result : h.driver->store().results(record.id)) dump += result.metrics.dump() + "\n";
  }
  return dump;
}

TEST(DriverDeterminism, TheSameEventsGiveTheSameStore) {
  const std::string first = run_scripted_sweep();
  EXPECT_NE(first.find("attempts 2"), std::string::npos) << "trial 0 paused and resumed:\n" << first;
  EXPECT_EQ(std::count(first.begin(), first.end(), '\n'), 4 + 10) << first;
  EXPECT_EQ(first, run_scripted_sweep());
}

}  // namespace
}  // namespace tune
