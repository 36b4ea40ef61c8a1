// The in-process executor: threads made per running attempt (not per slot)
// and reused; results block on the driver's verdict; cancelling a queued
// attempt ends it at once; a trial stuck after its cancel is abandoned after
// the grace period and the executor still shuts down.
#include "tuner/exec/thread_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "driver_test_util.h"
#include "test_util.h"

namespace tune::internal {
namespace {

using testing::FakeClock;

TrialStart trial_of(int64_t index) {
  TrialStart trial;
  trial.trial_index = index;
  trial.config = Json::object();
  return trial;
}

// Takes events until `count` have arrived (bounded: 10 s).
std::vector<TrialEvent> take(EventSink& sink, size_t count) {
  std::vector<TrialEvent> events;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (events.size() < count && std::chrono::steady_clock::now() < deadline) {
    for (auto& e : sink.take(std::chrono::milliseconds(20))) events.push_back(std::move(e));
  }
  return events;
}

TEST(ThreadExecutor, MakesAThreadPerRunningAttemptAndReusesIt) {
  EventSink sink;
  FakeClock clock;
  ThreadExecutor executor(sink, clock, [](Session& s) { s.report({{"loss", 1.0}}); });
  for (int64_t i = 0; i < 3; ++i) executor.start({i, 1}, trial_of(i), Placement{});
  auto results = take(sink, 3);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(executor.threads(), 3);
  for (auto& r : results) {
    ASSERT_EQ(r.kind, TrialEvent::Kind::kResult);
    r.reply(Verdict::kContinue);  // the trainable then returns
  }
  auto ended = take(sink, 3);
  for (const auto& e : ended) {
    EXPECT_EQ(e.kind, TrialEvent::Kind::kEnded);
    EXPECT_FALSE(e.stopped);
  }
  for (int64_t i = 3; i < 6; ++i) executor.start({i, 1}, trial_of(i), Placement{});
  for (auto& r : take(sink, 3)) r.reply(Verdict::kStop);
  for (const auto& e : take(sink, 3)) EXPECT_TRUE(e.stopped) << "kStop ends the trial with TrialStopped";
  EXPECT_EQ(executor.threads(), 3) << "idle threads are reused";
  EXPECT_EQ(executor.live(), 0);
  executor.shutdown();
}

// The trial's folder is made on the trial's thread when its function first
// asks for it (trial_dir() or a checkpoint's folder), so a trial that keeps
// no files makes none; one that cannot be made fails the trial that asked,
// with a line that names it, and not a trial that never asks.
TEST(ThreadExecutor, MakesTheTrialsFolderWhenTheTrialFirstAsksForIt) {
  tune::testing::TempDir dir;
  EventSink sink;
  FakeClock clock;
  ThreadExecutor executor(sink, clock, [](Session& s) {
    const std::string asks = s.config().value("asks", "");
    if (asks == "folder") {
      s.report({{"had_folder", std::filesystem::is_directory(s.trial_dir())}});
    } else if (asks == "checkpoint") {
      const std::string checkpoint = s.make_checkpoint_dir();
      s.report({{"had_folder", std::filesystem::is_directory(checkpoint)}}, checkpoint);
    } else {
      s.report({{"had_folder", false}});
    }
  });
  auto run = [&](int64_t index, const std::string& asks, const std::string& folder) {
    TrialStart trial = trial_of(index);
    trial.config = {{"asks", asks}};
    trial.trial_dir = folder;
    executor.start({index, 1}, trial, Placement{});
    auto events = take(sink, 1);
    EXPECT_EQ(events.size(), 1u);
    if (events.empty() || events[0].kind != TrialEvent::Kind::kResult) return events;
    events[0].reply(Verdict::kStop);
    auto ended = take(sink, 1);
    events.insert(events.end(), ended.begin(), ended.end());
    return events;
  };
  const std::string exp = dir.path() + "/exp";
  auto nothing = run(0, "nothing", exp + "/trial_00000");
  ASSERT_EQ(nothing.size(), 2u);
  EXPECT_EQ(nothing[1].kind, TrialEvent::Kind::kEnded);
  EXPECT_FALSE(std::filesystem::exists(exp + "/trial_00000")) << "a trial that keeps no files makes no folder";
  auto folder = run(1, "folder", exp + "/trial_00001");
  ASSERT_EQ(folder.size(), 2u);
  EXPECT_EQ(folder[0].metrics.at("had_folder"), true) << "trial_dir() exists once it returns";
  auto checkpoint = run(2, "checkpoint", exp + "/trial_00002");
  ASSERT_EQ(checkpoint.size(), 2u);
  EXPECT_EQ(checkpoint[0].metrics.at("had_folder"), true);
  EXPECT_TRUE(std::filesystem::is_directory(exp + "/trial_00002"));

  dir.write("file", "not a folder");
  const std::string blocked = dir.path() + "/file/trial_00003";
  auto failed = run(3, "folder", blocked);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].kind, TrialEvent::Kind::kFailed);
  EXPECT_NE(failed[0].message.find("cannot make the trial's folder " + blocked), std::string::npos)
      << failed[0].message;
  auto untouched = run(4, "nothing", dir.path() + "/file/trial_00004");
  ASSERT_EQ(untouched.size(), 2u);
  EXPECT_EQ(untouched[1].kind, TrialEvent::Kind::kEnded) << "a trial that never asks does not fail for it";
  executor.shutdown();
}

TEST(ThreadExecutor, ACancelledTrialStopsAtItsNextReport) {
  EventSink sink;
  FakeClock clock;
  ThreadExecutor executor(sink, clock, [](Session& s) {
    for (;;) s.report({{"loss", 1.0}});
  });
  executor.start({0, 1}, trial_of(0), Placement{});
  auto first = take(sink, 1);
  ASSERT_EQ(first.size(), 1u);
  executor.cancel({0, 1}, "test");
  first[0].reply(Verdict::kContinue);  // the trial goes on... into a cancelled report
  auto rest = take(sink, 1);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].kind, TrialEvent::Kind::kEnded);
  EXPECT_TRUE(rest[0].stopped);
  EXPECT_EQ(executor.live(), 0);
  executor.shutdown();
}

// A driver that stops with a result it took but never answered (it lost its
// lease, the disk filled) drops the event: the trial stops at once, without
// waiting out the grace to be abandoned, and is not acknowledged.
TEST(ThreadExecutor, AResultDroppedUnansweredStopsTheTrialAtOnce) {
  EventSink sink;
  FakeClock clock;
  auto reports = std::make_shared<std::atomic<int>>(0);
  ThreadExecutor executor(sink, clock, [reports](Session& s) {
    for (;;) {
      s.report({{"loss", 1.0}});
      *reports += 1;
    }
  });
  executor.start({0, 1}, trial_of(0), Placement{});
  {
    auto first = take(sink, 1);
    ASSERT_EQ(first.size(), 1u);
    ASSERT_EQ(first[0].kind, TrialEvent::Kind::kResult);
  }  // dropped here, never answered
  auto ended = take(sink, 1);
  ASSERT_EQ(ended.size(), 1u) << "the trial still waits for a verdict nobody will give";
  EXPECT_EQ(ended[0].kind, TrialEvent::Kind::kEnded);
  EXPECT_TRUE(ended[0].stopped);
  EXPECT_EQ(*reports, 0) << "an unanswered report returned as if acknowledged";
  EXPECT_EQ(executor.live(), 0);
  executor.shutdown();
}

TEST(ThreadExecutor, AStuckTrialIsAbandonedAfterTheGraceAndShutdownDoesNotWait) {
  EventSink sink;
  FakeClock clock;
  auto stuck = std::make_shared<std::atomic<bool>>(true);
  auto looping = std::make_shared<std::atomic<bool>>(false);
  {
    ThreadExecutor executor(
        sink, clock,
        [stuck, looping](Session&) {
          *looping = true;
          while (*stuck) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          *looping = false;
        },
        /*stop_grace_s=*/5);
    executor.start({0, 1}, trial_of(0), Placement{});
    for (int i = 0; i < 5000 && !*looping; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(*looping);
    executor.cancel({0, 1}, "hung");
    executor.poll();
    EXPECT_TRUE(sink.take(std::chrono::milliseconds(0)).empty()) << "within the grace nothing is reported";
    clock.advance(6);
    executor.poll();
    auto events = sink.take(std::chrono::milliseconds(0));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].kind, TrialEvent::Kind::kFailed);
    EXPECT_TRUE(events[0].lost);
    EXPECT_EQ(executor.live(), 0);
    executor.shutdown();
    EXPECT_TRUE(*looping) << "shutdown returned with the abandoned trial still running";
  }
  *stuck = false;  // let the abandoned thread finish before the test binary exits
  for (int i = 0; i < 5000 && *looping; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(*looping) << "the abandoned thread did not end once released";
}

}  // namespace
}  // namespace tune::internal
