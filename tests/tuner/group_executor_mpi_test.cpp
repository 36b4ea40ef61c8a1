// MPI worker groups for real (mpirun, the tune binary as worker): results
// and verdicts cross the socket, a group is reused for the next trial of the
// same size, a cancelled or killed group fails only its attempt.
#include "tuner/exec/group_executor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>

#include "test_util.h"

namespace tune::internal {
namespace {

using testing::TempDir;

TrialStart synthetic(int64_t index, const std::string& dir, int iterations, double sleep_s = 0) {
  TrialStart trial;
  trial.experiment = "e";
  trial.trainable = "synthetic";
  trial.trial_index = index;
  trial.trial_dir = dir;
  trial.config = {{"x", 0.5}, {"iterations", iterations}, {"sleep_s", sleep_s}};
  return trial;
}

Placement ranks(int n) {
  Placement placement;
  placement.hosts.push_back({"", n});
  placement.slots = n;
  return placement;
}

// Events until one of `kind` for `attempt` (answering results kContinue);
// bounded at 60 s.
std::vector<TrialEvent> until(EventSink& sink, GroupExecutor& executor, TrialEvent::Kind kind) {
  std::vector<TrialEvent> seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    executor.poll();
    for (auto& e : sink.take(std::chrono::milliseconds(20))) {
      if (e.kind == TrialEvent::Kind::kResult) e.reply(Verdict::kContinue);
      const bool last = e.kind == kind;
      seen.push_back(std::move(e));
      if (last) return seen;
    }
  }
  return seen;
}

class GroupExecutorTest : public ::testing::Test {
 protected:
  GroupExecutorOptions options() {
    GroupExecutorOptions o;
    o.executable = TUNE_BINARY;
    o.log_dir = dir_.path();
    return o;
  }
  TempDir dir_;
  EventSink sink_;
};

TEST_F(GroupExecutorTest, RunsTrialsInATwoRankGroupAndReusesIt) {
  GroupExecutor executor(sink_, options());
  executor.start({0, 1}, synthetic(0, dir_.path(), 3), ranks(2));
  auto events = until(sink_, executor, TrialEvent::Kind::kEnded);
  ASSERT_EQ(events.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(events[i].kind, TrialEvent::Kind::kResult);
    EXPECT_EQ(events[i].attempt, (AttemptId{0, 1}));
    EXPECT_TRUE(events[i].metrics.contains("loss"));
  }
  EXPECT_FALSE(events[3].stopped);
  executor.start({1, 1}, synthetic(1, dir_.path(), 1), ranks(2));
  events = until(sink_, executor, TrialEvent::Kind::kEnded);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].attempt, (AttemptId{1, 1}));
  EXPECT_EQ(executor.launched_groups(), 1) << "the idle group ran the second trial";
  executor.shutdown();
}

TEST_F(GroupExecutorTest, AStopVerdictEndsTheTrialAndTheGroupStaysUsable) {
  GroupExecutor executor(sink_, options());
  executor.start({0, 1}, synthetic(0, dir_.path(), 100), ranks(1));
  std::vector<TrialEvent> events;
  for (int i = 0; i < 3000 && events.empty(); ++i) {
    for (auto& e : sink_.take(std::chrono::milliseconds(20))) events.push_back(std::move(e));
  }
  ASSERT_FALSE(events.empty());
  events[0].reply(Verdict::kStop);
  events = until(sink_, executor, TrialEvent::Kind::kEnded);
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.back().stopped);
  EXPECT_EQ(executor.live_groups(), 1);
  executor.shutdown();
}

TEST_F(GroupExecutorTest, ACancelledAttemptFailsAsLostAndOthersGoOn) {
  GroupExecutor executor(sink_, options());
  executor.start({0, 1}, synthetic(0, dir_.path(), 1000, 0.05), ranks(1));
  executor.start({1, 1}, synthetic(1, dir_.path(), 2), ranks(1));
  bool first_result = false, other_ended = false;
  for (int i = 0; i < 3000 && !first_result; ++i) {
    for (auto& e : sink_.take(std::chrono::milliseconds(20))) {
      if (e.kind == TrialEvent::Kind::kResult) e.reply(Verdict::kContinue);
      first_result = first_result || e.attempt.trial == 0;
      other_ended = other_ended || (e.kind == TrialEvent::Kind::kEnded && e.attempt.trial == 1);
    }
  }
  ASSERT_TRUE(first_result);
  executor.cancel({0, 1}, "hung");
  bool lost = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((!lost || !other_ended) && std::chrono::steady_clock::now() < deadline) {
    executor.poll();
    for (auto& e : sink_.take(std::chrono::milliseconds(20))) {
      if (e.kind == TrialEvent::Kind::kResult) e.reply(Verdict::kContinue);
      if (e.kind == TrialEvent::Kind::kFailed && e.attempt.trial == 0) {
        lost = e.lost;
        EXPECT_NE(e.message.find("worker group exited"), std::string::npos) << e.message;
      }
      other_ended = other_ended || (e.kind == TrialEvent::Kind::kEnded && e.attempt.trial == 1);
    }
  }
  EXPECT_TRUE(lost);
  EXPECT_TRUE(other_ended);
  EXPECT_EQ(executor.live(), 0);
  executor.shutdown();
}

TEST_F(GroupExecutorTest, AGroupThatCannotStartFailsItsAttempt) {
  GroupExecutorOptions o = options();
  o.executable = "/nonexistent/worker";
  GroupExecutor executor(sink_, o);
  executor.start({0, 1}, synthetic(0, dir_.path(), 1), ranks(1));
  auto events = until(sink_, executor, TrialEvent::Kind::kFailed);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, TrialEvent::Kind::kFailed);
  EXPECT_TRUE(events.back().lost);
  executor.shutdown();
}

}  // namespace
}  // namespace tune::internal
