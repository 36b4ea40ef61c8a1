// The trial lifecycle the driver and the simulator share: its moves, its
// queues, the exploit rule and what a free slot runs next.
#include "schedulers/trial_state_machine.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "base/error.h"

namespace tune {
namespace {

using Next = TrialStateMachine::Next;

const auto kNeverBusy = [](int64_t) { return false; };
const auto kAllCheckpointed = [](int64_t) { return true; };

// A scheduler whose answers the test sets, recording what it was asked.
class Scripted : public Scheduler {
 public:
  TrialDecision on_result(int64_t, const Json&) override { return TrialDecision::next(); }
  std::optional<int64_t> choose_trial_to_run(const std::vector<int64_t>& paused) override {
    offered.push_back(paused);
    return choose;
  }
  TrialDecision on_trial_resume(int64_t trial) override {
    resumed.push_back(trial);
    return resume;
  }
  void on_no_more_trials() override { no_more += 1; }
  bool can_start_new_trial() const override { return new_trials; }

  std::optional<int64_t> choose;
  TrialDecision resume;
  bool new_trials = true;
  int no_more = 0;
  std::vector<std::vector<int64_t>> offered;
  std::vector<int64_t> resumed;
};

TEST(TrialStateMachine, EachMoveGoesWhereTheLifecycleSaysAndNowhereElse) {
  using S = TrialStatus;
  struct Move {
    const char* name;
    void (TrialStateMachine::*call)(int64_t);
    std::set<S> from;
    S to;
  };
  const std::vector<Move> moves = {
      {"start", &TrialStateMachine::start, {S::kPending, S::kPaused}, S::kRunning},
      {"pause", &TrialStateMachine::pause, {S::kRunning}, S::kPaused},
      {"terminate", &TrialStateMachine::terminate, {S::kRunning, S::kPaused}, S::kTerminated},
      {"fail", &TrialStateMachine::fail, {S::kRunning, S::kPaused, S::kPending}, S::kError},
      {"retry", &TrialStateMachine::retry, {S::kRunning, S::kPaused, S::kPending}, S::kPending},
      {"requeue", &TrialStateMachine::requeue, {S::kRunning}, S::kPending},
  };
  for (const Move& move : moves) {
    for (S from : {S::kPending, S::kRunning, S::kPaused, S::kTerminated, S::kError}) {
      SCOPED_TRACE(std::string(move.name) + " from " + status_name(from));
      TrialStateMachine m;
      // Reach `from` the way a trial does.
      m.add(1, from == S::kRunning ? S::kPending : from);
      if (from == S::kRunning) m.start(1);
      if (move.from.count(from)) {
        (m.*move.call)(1);
        EXPECT_EQ(m.status(1), move.to);
      } else {
        EXPECT_THROW((m.*move.call)(1), Error);
        EXPECT_EQ(m.status(1), from) << "a refused move changes nothing";
      }
    }
  }
  TrialStateMachine m;
  EXPECT_THROW(m.add(1, TrialStatus::kRunning), Error) << "a restored trial enters PENDING, not RUNNING";
  m.add(1);
  EXPECT_THROW(m.add(1), Error);
  EXPECT_THROW(m.start(2), Error);
  EXPECT_THROW(m.status(2), Error);
}

TEST(TrialStateMachine, RetriesAndExploitsRunFirstRestoredTrialsInTheirOrder) {
  TrialStateMachine m;
  Scripted s;
  m.add(0, TrialStatus::kPending, /*queued=*/true);
  m.add(1, TrialStatus::kPending, /*queued=*/true);
  m.add(2);
  m.start(2);
  m.retry(2);  // failed with retries left: first in line
  EXPECT_EQ(m.queued(), (std::deque<int64_t>{2, 0, 1}));
  std::vector<int64_t> order;
  for (int i = 0; i < 3; ++i) {
    const Next next = m.next(s, kNeverBusy, nullptr, kAllCheckpointed);
    ASSERT_EQ(next.kind, Next::kStart);
    order.push_back(next.trial);
    m.start(next.trial);
  }
  EXPECT_EQ(order, (std::vector<int64_t>{2, 0, 1}));
  EXPECT_TRUE(m.queued().empty());
  m.requeue(0);  // interrupted: PENDING but not queued (a resume restarts it)
  EXPECT_EQ(m.status(0), TrialStatus::kPending);
  EXPECT_TRUE(m.queued().empty());
  EXPECT_TRUE(s.offered.empty()) << "queued trials go before the scheduler is asked";
}

TEST(TrialStateMachine, ARetryWaitsForItsOldAttemptAndHoldsBackPausedAndNewTrials) {
  TrialStateMachine m;
  Scripted s;
  s.choose = 5;
  m.add(5);
  m.start(5);
  m.pause(5);
  m.add(3);
  m.start(3);
  m.retry(3);
  auto busy3 = [](int64_t t) { return t == 3; };
  const uint64_t version = m.version();
  EXPECT_EQ(m.next(s, busy3, nullptr, kAllCheckpointed).kind, Next::kWait) << "waits for trial 3's old attempt";
  EXPECT_TRUE(s.offered.empty());
  EXPECT_EQ(m.version(), version) << "a look changes nothing";
  EXPECT_EQ(m.next(s, kNeverBusy, nullptr, kAllCheckpointed).kind, Next::kWait) << "until it is told";
  m.idle(3);  // trial 3's old attempt ended
  const Next next = m.next(s, kNeverBusy, nullptr, kAllCheckpointed);
  EXPECT_EQ(next.kind, Next::kStart);
  EXPECT_EQ(next.trial, 3);
}

// version() changes with every move and queue change (the driver keeps a
// kWait answer until it does or an attempt ends), and with no_more_trials.
TEST(TrialStateMachine, ItsVersionChangesWithEveryChange) {
  TrialStateMachine m;
  Scripted s;
  std::vector<uint64_t> versions = {m.version()};
  auto changed = [&] {
    const bool moved = m.version() != versions.back();
    versions.push_back(m.version());
    return moved;
  };
  m.add(0);
  EXPECT_TRUE(changed());
  m.start(0);
  EXPECT_TRUE(changed());
  m.pause(0);
  EXPECT_TRUE(changed());
  m.start(0);
  EXPECT_TRUE(changed());
  m.retry(0);
  EXPECT_TRUE(changed());
  m.start(0);
  EXPECT_TRUE(changed());
  m.requeue(0);
  EXPECT_TRUE(changed());
  m.add(1);
  m.start(1);
  m.terminate(1);
  EXPECT_TRUE(changed());
  m.add(2);
  m.start(2);
  m.fail(2);
  EXPECT_TRUE(changed());
  m.no_more_trials(s);
  EXPECT_TRUE(changed());
  (void)m.status(0);
  (void)m.next(s, kNeverBusy, nullptr, kAllCheckpointed);
  EXPECT_FALSE(changed()) << "looking is not a change";
}

TEST(TrialStateMachine, ThePausedTrialTheSchedulerPicksResumesUnlessItsResumeEndsOrExploitsIt) {
  TrialStateMachine m;
  Scripted s;
  for (int64_t t : {4, 6, 8}) {
    m.add(t);
    m.start(t);
    m.pause(t);
  }
  auto busy6 = [](int64_t t) { return t == 6; };
  s.choose = 8;
  Next next = m.next(s, busy6, nullptr, kAllCheckpointed);
  EXPECT_EQ(s.offered.back(), (std::vector<int64_t>{4, 8})) << "ascending, without the busy one";
  ASSERT_EQ(next.kind, Next::kStart);
  EXPECT_EQ(next.trial, 8);
  m.start(8);
  EXPECT_EQ(m.paused(), (std::set<int64_t>{4, 6}));

  // A pick outside the offer is ignored: a new trial instead.
  s.choose = 6;
  EXPECT_EQ(m.next(s, busy6, nullptr, kAllCheckpointed).kind, Next::kNew);

  // on_trial_resume stops the pick: apply ends it, and the look repeats.
  s.choose = 4;
  s.resume = TrialDecision::stop();
  std::vector<std::pair<int64_t, TrialAction>> applied;
  auto apply = [&](int64_t t, const TrialDecision& d) {
    applied.emplace_back(t, d.action);
    if (d.action == TrialAction::kStop) m.terminate(t);
    if (d.action == TrialAction::kExploit) m.retry(t);
  };
  m.idle(6);  // trial 6's attempt ended
  next = m.next(s, kNeverBusy, apply, kAllCheckpointed);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0], std::make_pair(int64_t{4}, TrialAction::kStop));
  EXPECT_EQ(m.status(4), TrialStatus::kTerminated);
  // The repeat offered what was left (6) and the scheduler's answer (4) is gone: a new trial.
  EXPECT_EQ(s.offered.back(), (std::vector<int64_t>{6}));
  EXPECT_EQ(next.kind, Next::kNew);

  // An exploit from a trial with a checkpoint queues the pick first; it then starts.
  s.choose = 6;
  s.resume = TrialDecision::exploit(8, Json{{"lr", 2}});
  next = m.next(s, kNeverBusy, apply, kAllCheckpointed);
  EXPECT_EQ(applied.back(), std::make_pair(int64_t{6}, TrialAction::kExploit));
  ASSERT_EQ(next.kind, Next::kStart);
  EXPECT_EQ(next.trial, 6);

  // A resume decision that leaves the trial PAUSED is a caller's bug, not a loop.
  TrialStateMachine m2;
  m2.add(1);
  m2.start(1);
  m2.pause(1);
  s.choose = 1;
  s.resume = TrialDecision::stop();
  EXPECT_THROW(m2.next(s, kNeverBusy, [](int64_t, const TrialDecision&) {}, kAllCheckpointed), Error);
}

TEST(TrialStateMachine, AnExploitNeedsAnotherKnownTrialWithACheckpoint) {
  TrialStateMachine m;
  for (int64_t t : {1, 2, 3}) m.add(t);
  auto checkpointed = [](int64_t t) { return t != 3; };
  const TrialDecision ok = m.vet(1, TrialDecision::exploit(2, Json{{"x", 1}}), checkpointed);
  EXPECT_EQ(ok.action, TrialAction::kExploit);
  EXPECT_EQ(ok.donor, 2);
  EXPECT_EQ(ok.new_config, (Json{{"x", 1}}));
  EXPECT_EQ(m.vet(1, TrialDecision::exploit(1, Json{{"x", 1}}), checkpointed).action, TrialAction::kContinue)
      << "itself";
  EXPECT_EQ(m.vet(1, TrialDecision::exploit(3, Json{{"x", 1}}), checkpointed).action, TrialAction::kContinue)
      << "no checkpoint";
  EXPECT_EQ(m.vet(1, TrialDecision::exploit(9, Json{{"x", 1}}), checkpointed).action, TrialAction::kContinue)
      << "unknown";
  for (const TrialDecision& d : {TrialDecision::next(), TrialDecision::stop(), TrialDecision::pause()})
    EXPECT_EQ(m.vet(1, d, checkpointed).action, d.action) << "only exploits are vetted";
}

TEST(TrialStateMachine, NewTrialsOnlyWhileTheSchedulerTakesThemAndUntilTheSearcherRunsOut) {
  TrialStateMachine m;
  Scripted s;
  s.new_trials = false;
  EXPECT_EQ(m.next(s, kNeverBusy, nullptr, kAllCheckpointed).kind, Next::kNone);
  s.new_trials = true;
  EXPECT_EQ(m.next(s, kNeverBusy, nullptr, kAllCheckpointed).kind, Next::kNew);
  m.no_more_trials(s);
  m.no_more_trials(s);
  EXPECT_EQ(s.no_more, 1) << "the scheduler hears it once";
  EXPECT_TRUE(m.no_more_trials());
  EXPECT_EQ(m.next(s, kNeverBusy, nullptr, kAllCheckpointed).kind, Next::kNone);
}

// Property: over random sequences of moves (legal or not), the queues always
// match the statuses: every queued trial is PENDING, the paused set is
// exactly the PAUSED trials, and a refused move changes nothing.
TEST(TrialStateMachine, TheQueuesAlwaysMatchTheStatuses) {
  std::mt19937_64 rng(20261128);
  const std::vector<void (TrialStateMachine::*)(int64_t)> moves = {
      &TrialStateMachine::start, &TrialStateMachine::pause, &TrialStateMachine::terminate,
      &TrialStateMachine::fail, &TrialStateMachine::retry, &TrialStateMachine::requeue};
  int refused = 0, done = 0;
  for (int run = 0; run < 50; ++run) {
    TrialStateMachine m;
    for (int64_t t = 0; t < 8; ++t) m.add(t, TrialStatus::kPending, rng() % 2 == 0);
    for (int step = 0; step < 200; ++step) {
      const int64_t t = static_cast<int64_t>(rng() % 8);
      std::map<int64_t, TrialStatus> before;
      for (int64_t u = 0; u < 8; ++u) before[u] = m.status(u);
      const auto queued_before = m.queued();
      try {
        (m.*moves[rng() % moves.size()])(t);
        done += 1;
      } catch (const Error&) {
        refused += 1;
        for (int64_t u = 0; u < 8; ++u) ASSERT_EQ(m.status(u), before[u]);
        ASSERT_EQ(m.queued(), queued_before);
      }
      std::set<int64_t> paused;
      for (int64_t u = 0; u < 8; ++u)
        if (m.status(u) == TrialStatus::kPaused) paused.insert(u);
      ASSERT_EQ(m.paused(), paused);
      std::set<int64_t> seen;
      for (int64_t u : m.queued()) {
        ASSERT_EQ(m.status(u), TrialStatus::kPending) << "trial " << u;
        ASSERT_TRUE(seen.insert(u).second) << "trial " << u << " queued twice";
      }
    }
  }
  EXPECT_GT(done, 1000);
  EXPECT_GT(refused, 1000);
}

// next() starts the first queued trial whose attempt has ended, else offers
// the scheduler every PAUSED trial whose attempt has ended, ascending,
// whatever happened before: it parks a busy trial until idle() rather than
// looking at every queued or paused trial on each call. Random moves,
// attempts that start with a trial's start and end at random (idle(); a
// trial may pause, end or be retried while its attempt still ends); after
// each, next() is compared with the statuses and the live attempts.
TEST(TrialStateMachine, ItRunsExactlyTheQueuedOrPausedTrialsWhoseAttemptsHaveEnded) {
  std::mt19937_64 rng(20261129);
  const std::vector<void (TrialStateMachine::*)(int64_t)> moves = {
      &TrialStateMachine::start, &TrialStateMachine::pause, &TrialStateMachine::terminate,
      &TrialStateMachine::fail, &TrialStateMachine::retry, &TrialStateMachine::requeue};
  int offers = 0, nonempty = 0, with_busy = 0, queued_checks = 0;
  for (int run = 0; run < 200; ++run) {  // 200: retry and fail from PENDING queue trials more often
    TrialStateMachine m;
    std::set<int64_t> live;  // trials with an attempt that has not ended
    const int64_t n = 12;
    for (int64_t t = 0; t < n; ++t) m.add(t, rng() % 3 == 0 ? TrialStatus::kPaused : TrialStatus::kPending, false);
    auto busy = [&](int64_t t) { return live.count(t) > 0; };
    for (int step = 0; step < 300; ++step) {
      const int64_t t = static_cast<int64_t>(rng() % n);
      if (rng() % 10 == 0 && !live.empty()) {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng() % live.size()));
        const int64_t ended = *it;
        live.erase(it);  // an attempt ends
        m.idle(ended);
      } else {
        try {
          const auto move = moves[rng() % moves.size()];
          (m.*move)(t);
          if (move == &TrialStateMachine::start) live.insert(t);
        } catch (const Error&) {
        }
      }
      Scripted s;
      s.new_trials = false;
      const Next next = m.next(s, busy, [](int64_t, const TrialDecision&) {}, kAllCheckpointed);
      std::optional<int64_t> first_ready;  // the first queued trial whose attempt has ended
      for (int64_t u : m.queued())
        if (!first_ready && !busy(u)) first_ready = u;
      if (!m.queued().empty()) {
        ASSERT_EQ(next.kind, first_ready ? Next::kStart : Next::kWait) << "run " << run << " step " << step;
        if (first_ready) ASSERT_EQ(next.trial, *first_ready) << "run " << run << " step " << step;
        ASSERT_TRUE(s.offered.empty());
        queued_checks += 1;
        continue;
      }
      std::vector<int64_t> expected;
      bool any_busy = false;
      for (int64_t u : m.paused()) {
        if (!busy(u)) expected.push_back(u);
        any_busy = any_busy || busy(u);
      }
      if (expected.empty()) {
        ASSERT_TRUE(s.offered.empty()) << "run " << run << " step " << step;
      } else {
        ASSERT_EQ(s.offered.size(), 1u);
        ASSERT_EQ(s.offered[0], expected) << "run " << run << " step " << step;
        nonempty += 1;
      }
      offers += 1;
      with_busy += any_busy;
    }
  }
  EXPECT_GT(nonempty, 1500);
  EXPECT_GT(with_busy, 300) << "paused trials whose attempt had not ended were tested";
  EXPECT_GT(offers, 5000);
  EXPECT_GT(queued_checks, 5000);
}

}  // namespace
}  // namespace tune
