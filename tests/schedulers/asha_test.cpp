// ASHA: the paper's get_job rule (promotion mode) and Ray's stopping rule on
// scripted sequences of results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "schedulers/scheduler.h"
#include "schedulers/simulator.h"
#include "base/error.h"

namespace tune {
namespace {

Json at(double t, double loss) { return {{"training_iteration", t}, {"loss", loss}}; }

TEST(AshaPromotion, FollowsGetJobOnAScriptedSequence) {
  // rf 3, rungs at 1, 3, 9 (max_t).
  auto s = make_scheduler("asha", {{"promotion", true}, {"grace_period", 1}, {"reduction_factor", 3}, {"max_t", 9}},
                          "loss", "min");
  for (int i = 0; i < 6; ++i) s->on_trial_add(i, Json::object());
  EXPECT_EQ(s->on_result(0, at(1, 0.5)).action, TrialAction::kPause);
  // One trial at rung 0: floor(1/3) = 0 promotable -> start a new trial.
  EXPECT_EQ(s->choose_trial_to_run({0}), std::nullopt);
  EXPECT_EQ(s->on_result(1, at(1, 0.3)).action, TrialAction::kPause);
  EXPECT_EQ(s->on_result(2, at(1, 0.9)).action, TrialAction::kPause);
  // Three at rung 0: the top 1 (trial 1) is promoted, then nothing more.
  EXPECT_EQ(s->choose_trial_to_run({0, 1, 2}), 1);
  EXPECT_EQ(s->choose_trial_to_run({0, 2}), std::nullopt);
  EXPECT_EQ(s->on_result(1, at(2, 0.25)).action, TrialAction::kContinue);
  EXPECT_EQ(s->on_result(1, at(3, 0.2)).action, TrialAction::kPause);
  EXPECT_EQ(s->on_result(3, at(1, 0.1)).action, TrialAction::kPause);
  EXPECT_EQ(s->on_result(4, at(1, 0.2)).action, TrialAction::kPause);
  EXPECT_EQ(s->on_result(5, at(1, 0.8)).action, TrialAction::kPause);
  // Rung 1 holds only trial 1 (floor(1/3) = 0), so rung 0's top 2 of 6 go:
  // trial 1 is already promoted, trial 3 (0.1) then trial 4 (0.2).
  EXPECT_EQ(s->choose_trial_to_run({0, 1, 2, 3, 4, 5}), 3);
  EXPECT_EQ(s->choose_trial_to_run({0, 1, 2, 4, 5}), 4);
  EXPECT_EQ(s->choose_trial_to_run({0, 1, 2, 5}), std::nullopt);
  EXPECT_EQ(s->on_result(3, at(3, 0.05)).action, TrialAction::kPause);
  EXPECT_EQ(s->on_result(4, at(3, 0.15)).action, TrialAction::kPause);
  // Rung 1 now has 3: its best (trial 3) goes to rung 2 before anything at rung 0.
  EXPECT_EQ(s->choose_trial_to_run({0, 1, 2, 4, 5}), std::nullopt);  // trial 3 is not paused: skipped
  EXPECT_EQ(s->choose_trial_to_run({0, 1, 2, 3, 4, 5}), 3);
  EXPECT_EQ(s->on_result(3, at(9, 0.01)).action, TrialAction::kStop);  // max_t
}

TEST(AshaPromotion, EndsWithSuccessiveHalvingCountsAtTheTop) {
  // 81 trials, rf 3, rungs 1..27: every rung's top third is promoted in the end,
  // and the best trial (lowest loss) is the one reaching 27 in every run.
  for (int workers : {1, 4, 16}) {
    auto s = make_scheduler("asha", {{"promotion", true}, {"reduction_factor", 3}, {"max_t", 27}}, "loss", "min");
    SimulationOptions o;
    o.workers = workers;
    o.num_trials = 81;
    o.config_of = [](int64_t i) { return Json{{"q", (i * 37) % 81}}; };
    o.step = [](const Json& c, std::vector<double>&, int64_t it) { return c["q"].get<double>() + 100.0 / it; };
    SimulationResult r = simulate(*s, o);
    ASSERT_EQ(r.trials.size(), 81u);
    // q = 0 is trial 0 (the best), it must get to max_t.
    EXPECT_EQ(r.trials[0].iterations, 27) << "workers " << workers;
    // At a given iteration the loss orders trials as q does (q + 100/it), and q
    // is a permutation of 0..80: trial by_q[q] has q.
    std::vector<int64_t> by_q(81);
    for (int64_t i = 0; i < 81; ++i) by_q[static_cast<size_t>((i * 37) % 81)] = i;
    // Rung by rung (1 -> 3 -> 9 -> 27): when the sweep ends, the top
    // floor(n/3) of the n trials that reached a rung have all been promoted to
    // the next one (ASHA may have promoted others early, never fewer).
    const std::vector<int64_t> rungs = {1, 3, 9, 27};
    std::vector<size_t> reached;
    for (size_t k = 0; k + 1 < rungs.size(); ++k) {
      std::vector<int64_t> at_rung;  // best first
      for (int64_t q = 0; q < 81; ++q) {
        const int64_t trial = by_q[static_cast<size_t>(q)];
        if (r.trials[static_cast<size_t>(trial)].iterations >= rungs[k]) at_rung.push_back(trial);
      }
      reached.push_back(at_rung.size());
      for (size_t j = 0; j < at_rung.size() / 3; ++j) {
        EXPECT_GE(r.trials[static_cast<size_t>(at_rung[j])].iterations, rungs[k + 1])
            << "workers " << workers << ": trial " << at_rung[j] << " is #" << j + 1 << " of " << at_rung.size()
            << " at rung " << rungs[k] << " but was not promoted";
      }
    }
    EXPECT_EQ(reached[0], 81u);  // every trial ran its first rung
    EXPECT_GE(reached[1], 27u);
    EXPECT_GE(reached[2], 9u);
    // And not everything was promoted: successive halving cut at each rung.
    EXPECT_LT(reached[1], 81u) << "workers " << workers;
    EXPECT_LT(reached[2], reached[1]) << "workers " << workers;
    for (const auto& t : r.trials) EXPECT_EQ(t.status, "TERMINATED");
  }
}

// The paper's get_job (Li et al. 2018, Algorithm 2), written out here as the
// oracle: with one worker, a free worker promotes the best not-yet-promoted
// trial among the top floor(n / rf) of the highest rung that has one, else it
// starts a new trial. The simulated ASHA (backfill off: it is an extension)
// must take every trial exactly as far as the oracle does, which bounds the
// promotions from above as well as below.
TEST(AshaPromotion, MatchesThePapersGetJobWithOneWorker) {
  const int64_t n = 81;
  const double rf = 3;
  const std::vector<int64_t> milestones = {1, 3, 9, 27};
  auto loss = [](int64_t trial, int64_t it) { return static_cast<double>((trial * 37) % 81) + 100.0 / it; };
  // The oracle.
  std::vector<std::vector<std::pair<double, int64_t>>> rung(milestones.size());  // (loss, trial)
  std::vector<std::set<int64_t>> promoted(milestones.size());
  std::vector<int64_t> reached(n, 0);
  int64_t started = 0;
  while (true) {
    std::optional<std::pair<int64_t, size_t>> job;  // trial, rung it goes to
    for (size_t k = milestones.size() - 1; k-- > 0 && !job;) {
      auto sorted = rung[k];
      std::sort(sorted.begin(), sorted.end());
      const auto top = static_cast<size_t>(std::floor(static_cast<double>(sorted.size()) / rf + 1e-9));
      for (size_t j = 0; j < top && !job; ++j)
        if (!promoted[k].count(sorted[j].second)) job = {{sorted[j].second, k + 1}};
    }
    if (job) {
      const auto [trial, k] = *job;
      promoted[k - 1].insert(trial);
      reached[static_cast<size_t>(trial)] = milestones[k];
      rung[k].emplace_back(loss(trial, milestones[k]), trial);
    } else if (started < n) {
      reached[static_cast<size_t>(started)] = milestones[0];
      rung[0].emplace_back(loss(started, milestones[0]), started);
      ++started;
    } else {
      break;
    }
  }
  // The scheduler, through the simulator.
  auto s = make_scheduler("asha", {{"promotion", true}, {"reduction_factor", rf}, {"max_t", 27}, {"backfill", false}},
                          "loss", "min");
  SimulationOptions o;
  o.workers = 1;
  o.num_trials = n;
  o.config_of = [](int64_t i) { return Json{{"i", i}}; };
  o.step = [&](const Json& c, std::vector<double>&, int64_t it) { return loss(c["i"].get<int64_t>(), it); };
  const SimulationResult r = simulate(*s, o);
  ASSERT_EQ(r.trials.size(), static_cast<size_t>(n));
  std::map<int64_t, int> counts;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(r.trials[static_cast<size_t>(i)].iterations, reached[static_cast<size_t>(i)]) << "trial " << i;
    counts[reached[static_cast<size_t>(i)]] += 1;
  }
  // The oracle's own shape: 81 -> 27+ -> 9+ -> 3+ trials reach the rungs.
  EXPECT_GE(counts[27], 1);
  EXPECT_LT(counts[27] + counts[9], 81);
}

TEST(AshaStopping, StopsBelowTheRungPercentileLikeRay) {
  // rf 4: continue only at or above the 75th percentile of the scores already at the rung.
  auto s = make_scheduler("asha", {{"grace_period", 1}, {"reduction_factor", 4}, {"max_t", 16}}, "loss", "min");
  for (int i = 0; i < 5; ++i) s->on_trial_add(i, Json::object());
  EXPECT_EQ(s->on_result(0, at(1, 0.5)).action, TrialAction::kContinue);  // first at the rung
  EXPECT_EQ(s->on_result(1, at(1, 0.6)).action, TrialAction::kStop);      // worse than 0.5
  EXPECT_EQ(s->on_result(2, at(1, 0.4)).action, TrialAction::kContinue);  // better than everything
  // Scores so far (max-form) -0.5, -0.6, -0.4: 75th percentile = -0.45.
  EXPECT_EQ(s->on_result(3, at(1, 0.46)).action, TrialAction::kStop);
  EXPECT_EQ(s->on_result(4, at(1, 0.44)).action, TrialAction::kContinue);
  // Between rungs nothing is judged; reaching max_t stops.
  EXPECT_EQ(s->on_result(0, at(2, 9.0)).action, TrialAction::kContinue);
  EXPECT_EQ(s->on_result(0, at(4, 0.3)).action, TrialAction::kContinue);  // first at rung 4
  EXPECT_EQ(s->on_result(2, at(4, 0.35)).action, TrialAction::kStop);
  EXPECT_EQ(s->on_result(0, at(16, 0.1)).action, TrialAction::kStop);
}

TEST(AshaStopping, ModeMaxAndAnotherTimeAttribute) {
  auto s = make_scheduler("asha", {{"time_attr", "epoch"}, {"grace_period", 2}, {"reduction_factor", 2}, {"max_t", 8},
                                   {"mode", "max"}, {"metric", "acc"}},
                          "loss", "min");
  EXPECT_EQ(s->on_result(0, {{"epoch", 2}, {"acc", 0.8}}).action, TrialAction::kContinue);
  EXPECT_EQ(s->on_result(1, {{"epoch", 2}, {"acc", 0.7}}).action, TrialAction::kStop);
  EXPECT_EQ(s->on_result(2, {{"epoch", 1}, {"acc", 0.1}}).action, TrialAction::kContinue);  // before grace
  EXPECT_EQ(s->on_result(3, {{"training_iteration", 5}, {"loss", 0.1}}).action, TrialAction::kContinue);  // no epoch: not judged
}

TEST(Asha, SeveralBracketsStartAtLaterRungs) {
  auto s = make_scheduler("asha", {{"brackets", 2}, {"reduction_factor", 2}, {"max_t", 8}}, "loss", "min");
  s->on_trial_add(0, Json::object());  // bracket 0: rungs 1, 2, 4, 8
  s->on_trial_add(1, Json::object());  // bracket 1: rungs 2, 4, 8
  EXPECT_EQ(s->on_result(0, at(1, 0.5)).action, TrialAction::kContinue);
  EXPECT_EQ(s->on_result(1, at(1, 0.9)).action, TrialAction::kContinue);  // no rung at 1 in bracket 1
  EXPECT_EQ(s->on_result(1, at(2, 0.9)).action, TrialAction::kContinue);  // first at its rung 2
  EXPECT_EQ(s->on_result(0, at(2, 0.95)).action, TrialAction::kContinue); // bracket 0's rung 2: first too
}

TEST(Asha, PromotionKeepsEveryWorkerBusy) {
  // 64 workers, 2,000 trials of rf 3 up to 27: no worker idles while trials are left
  // (utilisation over the whole run, tail included, is measured by bench/run schedulers).
  auto s = make_scheduler("asha", {{"promotion", true}, {"reduction_factor", 3}, {"max_t", 27}}, "loss", "min");
  SimulationOptions o;
  o.workers = 64;
  o.num_trials = 2000;
  o.config_of = [](int64_t i) { return Json{{"q", (i * 7919) % 2000}}; };
  o.step = [](const Json& c, std::vector<double>&, int64_t it) { return c["q"].get<double>() / 2000 + 1.0 / it; };
  SimulationResult r = simulate(*s, o);
  EXPECT_EQ(r.idle_with_trials_left, 0);
  EXPECT_GT(r.utilization(), 0.5);
}

// Backfill: once no trial is left to start, slots that would idle while the
// last trials finish go to trials the rule left behind, without touching the
// rule's own decisions. 64 workers, 3,000 trials with distinct curves
// (loss = a + b/t), rf 3 up to 81, steps of different lengths per trial.
SimulationResult backfill_run(bool promotion, bool backfill) {
  auto s = make_scheduler("asha", {{"promotion", promotion}, {"reduction_factor", 3}, {"max_t", 81}, {"backfill", backfill}},
                          "loss", "min");
  SimulationOptions o;
  o.workers = 64;
  o.num_trials = 3000;
  o.max_iterations = 81;
  o.config_of = [](int64_t i) { return Json{{"a", ((i * 7919) % 3000) / 3000.0}, {"b", ((i * 104729) % 997) / 500.0}}; };
  o.step = [](const Json& c, std::vector<double>&, int64_t t) {
    return c["a"].get<double>() + c["b"].get<double>() / static_cast<double>(t);
  };
  o.step_time = [](int64_t trial, const Json&, int64_t) { return 1.0 + static_cast<double>(trial % 3) * 0.25; };
  return simulate(*s, o);
}

TEST(AshaBackfill, FillsTheFinalDrainWithoutChangingTheRule) {
  for (bool promotion : {false, true}) {
    SCOPED_TRACE(promotion ? "promotion" : "stopping");
    const SimulationResult off = backfill_run(promotion, false);
    const SimulationResult on = backfill_run(promotion, true);
    ASSERT_EQ(off.trials.size(), on.trials.size());
    EXPECT_LT(off.utilization(), 0.8);  // the drain this is about: a third of the run
    // Promotion mode has every paused trial to choose from; stopping mode
    // only those below a cut-off once the searcher was done.
    EXPECT_GE(on.utilization(), promotion ? 0.99 : 0.9);
    int64_t extra = 0, reached = 0;
    for (size_t k = 0; k < off.trials.size(); ++k) {
      const SimulatedTrial& a = off.trials[k];
      const SimulatedTrial& b = on.trials[k];
      // Every step the rule gave a trial is still given (curves are
      // deterministic, so the metrics agree), and more only through backfill.
      ASSERT_GE(b.iterations, a.iterations) << k;
      extra += b.iterations - a.iterations;
      if (a.iterations == 81) ++reached;
      for (int64_t i = 0; i < a.iterations; ++i)
        ASSERT_EQ(a.metrics[static_cast<size_t>(i)], b.metrics[static_cast<size_t>(i)]) << k;
    }
    EXPECT_GT(reached, 0);
    EXPECT_GT(extra, 1000);
    // Not longer: stopping mode has nothing to wait for; in promotion mode a
    // promotion that finds every slot backfilled waits until the next result
    // of one of them (one step per rung at most on the critical path).
    if (promotion)
      EXPECT_LE(on.makespan, off.makespan + 4 * 1.5);
    else
      EXPECT_EQ(on.makespan, off.makespan);
    EXPECT_EQ(on.trials.size(), 3000u);
  }
}

TEST(AshaBackfill, OnlyAfterTheSearcherIsDoneAndNeverBeyondTheHorizon) {
  // Stopping mode, rf 3, max_t 9 (rungs 1, 3, 9), one second per step, the
  // clock in each result's timestamp. Trial 0 is good, trials 1 and 2 bad.
  auto s = make_scheduler("asha", {{"reduction_factor", 3}, {"max_t", 9}}, "loss", "min");
  auto r = [](double t, double loss, double clock) {
    return Json{{"training_iteration", t}, {"loss", loss}, {"time_total_s", t}, {"timestamp", clock}};
  };
  s->on_trial_add(0, Json::object());
  s->on_trial_add(1, Json::object());
  EXPECT_EQ(s->on_result(0, r(1, 0.1, 1)).action, TrialAction::kContinue);
  // The searcher is not done: the rule applies as in Ray (stop below the cut-off).
  EXPECT_EQ(s->on_result(1, r(1, 0.9, 1)).action, TrialAction::kStop);
  s->on_trial_complete(1, r(1, 0.9, 1));
  s->on_trial_add(2, Json::object());
  s->on_no_more_trials();
  EXPECT_EQ(s->on_result(0, r(2, 0.09, 2)).action, TrialAction::kContinue);
  // Trial 2 is below the cut-off at rung 1; trial 0 needs 1 more second to
  // its rung 3: one step of backfill fits, then trial 2 waits paused.
  EXPECT_EQ(s->on_result(2, r(1, 0.95, 2)).action, TrialAction::kContinue);
  s->on_checkpoint(2, 2);  // it can wait paused only with a checkpoint of where it is
  EXPECT_EQ(s->on_result(2, r(2, 0.94, 3)).action, TrialAction::kPause);
  EXPECT_EQ(s->choose_trial_to_run({2}), std::nullopt);  // trial 0 is about to reach its rung
  EXPECT_EQ(s->on_result(0, r(3, 0.08, 3)).action, TrialAction::kContinue);  // passes rung 3: 6 s to 9
  EXPECT_EQ(s->choose_trial_to_run({2}), std::optional<int64_t>(2));
  EXPECT_EQ(s->on_result(0, r(4, 0.07, 4)).action, TrialAction::kContinue);
  EXPECT_EQ(s->on_result(2, r(3, 0.93, 4)).action, TrialAction::kContinue);  // a leg to 3 + 5 = 8
  for (int t = 4; t < 8; ++t) {
    EXPECT_EQ(s->on_result(0, r(t + 1, 0.07, t + 1)).action, TrialAction::kContinue) << t;
    EXPECT_EQ(s->on_result(2, r(t, 0.9, t + 1)).action, TrialAction::kContinue) << t;
  }
  EXPECT_EQ(s->on_result(0, r(9, 0.06, 9)).action, TrialAction::kStop);  // max_t
  s->on_trial_complete(0, r(9, 0.06, 9));
  s->on_checkpoint(2, 8);
  EXPECT_EQ(s->on_result(2, r(8, 0.9, 9)).action, TrialAction::kPause);  // nothing left to fill
  EXPECT_EQ(s->choose_trial_to_run({2}), std::nullopt);  // the driver ends it with the sweep

  // Without a checkpoint a trial that cannot go on ends, as without backfill.
  auto bare = make_scheduler("asha", {{"reduction_factor", 3}, {"max_t", 9}}, "loss", "min");
  bare->on_trial_add(0, Json::object());
  bare->on_trial_add(1, Json::object());
  bare->on_no_more_trials();
  EXPECT_EQ(bare->on_result(0, r(1, 0.1, 1)).action, TrialAction::kContinue);
  EXPECT_EQ(bare->on_result(0, r(2, 0.1, 2)).action, TrialAction::kContinue);
  EXPECT_EQ(bare->on_result(0, r(3, 0.1, 3)).action, TrialAction::kContinue);
  EXPECT_EQ(bare->on_result(1, r(1, 0.9, 3)).action, TrialAction::kContinue);  // backfill: 5 s fit
  EXPECT_EQ(bare->on_result(0, r(9, 0.1, 9)).action, TrialAction::kStop);
  bare->on_trial_complete(0, r(9, 0.1, 9));
  EXPECT_EQ(bare->on_result(1, r(2, 0.9, 9)).action, TrialAction::kContinue);  // its leg runs to rung 3
  EXPECT_EQ(bare->on_result(1, r(3, 0.9, 10)).action, TrialAction::kStop);

  // backfill: false keeps Ray's behaviour.
  auto plain = make_scheduler("asha", {{"reduction_factor", 3}, {"max_t", 9}, {"backfill", false}}, "loss", "min");
  plain->on_trial_add(0, Json::object());
  plain->on_trial_add(1, Json::object());
  plain->on_no_more_trials();
  EXPECT_EQ(plain->on_result(0, r(1, 0.1, 1)).action, TrialAction::kContinue);
  EXPECT_EQ(plain->on_result(1, r(1, 0.9, 1)).action, TrialAction::kStop);
  EXPECT_EQ(plain->choose_trial_to_run({}), std::nullopt);
}

TEST(Asha, RejectsBadOptions) {
  auto error = [](const Json& params) {
    try {
      make_scheduler("asha", params, "loss", "min");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({{"reduction_facter", 1}}), "scheduler asha has no option 'reduction_facter' (did you mean 'reduction_factor'?); options: "
                                   "time_attr, metric, mode, max_t, grace_period, reduction_factor, brackets, "
                                   "stop_last_trials, promotion, backfill");
  EXPECT_EQ(error({{"reduction_factor", 1}}), "scheduler asha: reduction_factor must be a number > 1, got 1");
  EXPECT_EQ(error({{"max_t", -3}}), "scheduler asha: max_t must be a positive number, got -3");
  EXPECT_EQ(error({{"grace_period", 200}}), "scheduler asha: grace_period must be <= max_t (100), got 200");
  EXPECT_EQ(error({{"promotion", "yes"}}), "scheduler asha: promotion must be true or false, got 'yes'");
  EXPECT_EQ(error({{"mode", "up"}}), "scheduler asha: mode must be min|max, got 'up'");
  EXPECT_THROW(make_scheduler("asha", Json::object(), "", ""), ConfigError);
  EXPECT_EQ(error({{"brackets", 0}}), "scheduler asha: brackets must be an integer >= 1, got 0");
}

// The simulator stamps each result with the fake time it came at (what
// `scheduler_bench replay` measures time to accuracy with): 2 workers, FIFO,
// trial i's steps take i + 1 s, two steps each; trial 2 takes the worker
// trial 0 frees at t = 2.
TEST(Simulator, ResultsCarryTheFakeTimeTheyCameAt) {
  auto s = make_scheduler("fifo", Json::object(), "loss", "min");
  SimulationOptions o;
  o.workers = 2;
  o.num_trials = 3;
  o.max_iterations = 2;
  o.step = [](const Json&, std::vector<double>&, int64_t it) { return 1.0 / static_cast<double>(it); };
  o.step_time = [](int64_t trial, const Json&, int64_t) { return static_cast<double>(trial + 1); };
  const SimulationResult r = simulate(*s, o);
  ASSERT_EQ(r.trials.size(), 3u);
  EXPECT_EQ(r.trials[0].times, (std::vector<double>{1, 2}));
  EXPECT_EQ(r.trials[1].times, (std::vector<double>{2, 4}));
  EXPECT_EQ(r.trials[2].times, (std::vector<double>{5, 8}));
  EXPECT_EQ(r.makespan, 8);
}

}  // namespace
}  // namespace tune
