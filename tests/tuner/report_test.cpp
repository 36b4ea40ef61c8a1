// The HTML report's data: what is extracted from a store written through the
// Store API (scheduler marks, slot intervals, rungs, lineage, best trial) or
// by a multi-objective sweep (each objective, the Pareto front) and the
// analyses behind it; the page's assembly and atomic writing.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include "storage/store.h"
#include "test_util.h"
#include "base/error.h"
#include "tuner/query/pareto_front.h"
#include "tuner/report/report.h"
#include "tuner/report/report_data.h"
#include "tuner/tuner.h"
#include "tuner_test_util.h"

namespace tune {
namespace {

using report::MarkKind;
using tune::testing::two_objectives;
using tune::testing::TempDir;

// Results carry what the driver adds: training_iteration and time_this_iter_s.
void result(Store& store, int64_t trial, int64_t iteration, int attempt, Json loss, double time, double took = 1) {
  store.add_result(trial, iteration, attempt, {{"loss", loss}, {"training_iteration", iteration}, {"time_this_iter_s", took}}, time);
}

// An ASHA-like sweep that started at t = 1000:
//   trial 0: 4 iterations, loss 4 3 2 1               (best)
//   trial 1: 1 iteration, loss 5, then terminated     (stopped at the first rung)
//   trial 2: paused after 2, resumed for 3 and 4      (paused, promoted)
//   trial 3: attempt 1 failed and was retried; attempt 2 failed for good
//   trial 4: only NaN losses (null in the store)
struct AshaStore {
  TempDir dir;
  std::unique_ptr<Store> store = Store::open(dir.path());
  int64_t experiment = 0;
  std::vector<int64_t> rows;

  AshaStore() {
    ExperimentRecord e{0, "asha-demo", "FINISHED", "loss", "min"};
    e.spec = {{"scheduler", {{"type", "asha"}, {"params", {{"max_t", 4}}}}},
              {"search", {{"algorithm", "random"}}},
              {"resources", {{"workers", 1}, {"cpus_per_worker", 1}}}};
    e.created_at = 1000;
    e.updated_at = 1010;
    experiment = store->create_experiment(e);
    for (int i = 0; i < 5; ++i) rows.push_back(store->add_trial(experiment, i, {{"x", i * 1.5}, {"opt", i % 2 ? "sgd" : "adam"}, {"seed", 7}}));
    Store& s = *store;
    s.set_trial_status(rows[0], kRunning, 1000);
    for (int i = 1; i <= 4; ++i) result(s, rows[0], i, 1, 5.0 - i, 1000 + i);
    s.set_trial_status(rows[0], kTerminated, 1004.5);
    s.set_trial_status(rows[1], kRunning, 1001);
    result(s, rows[1], 1, 1, 5.0, 1002);
    s.set_trial_status(rows[1], kTerminated, 1002);
    s.set_trial_status(rows[2], kRunning, 1002);
    result(s, rows[2], 1, 1, 3.0, 1003);
    result(s, rows[2], 2, 1, 2.5, 1004);
    s.set_trial_status(rows[2], kPaused, 1004);
    s.set_trial_status(rows[2], kRunning, 1005);
    result(s, rows[2], 3, 2, 2.0, 1006);
    result(s, rows[2], 4, 2, 1.5, 1007);
    s.set_trial_status(rows[2], kTerminated, 1007);
    s.set_trial_status(rows[3], kRunning, 1004.5);
    result(s, rows[3], 1, 1, 4.5, 1005.5);
    s.add_event(experiment, rows[3], "trial_retry", {{"message", "boom"}, {"attempt", 1}}, 1006);
    s.set_trial_status(rows[3], kRunning, 1006.5);
    result(s, rows[3], 1, 2, 4.4, 1007.5);
    result(s, rows[3], 2, 2, 4.0, 1008.5);
    s.set_trial_status(rows[3], kError, 1009, "boom again");
    s.set_trial_status(rows[4], kRunning, 1007);
    result(s, rows[4], 1, 1, nullptr, 1008);
    result(s, rows[4], 2, 1, nullptr, 1009);
    s.set_trial_status(rows[4], kTerminated, 1009);
  }

  report::ExperimentData extract(const ReportOptions& options = {}) {
    return report::extract_experiment(*store, *store->find_experiment("asha-demo"), options, 2000);
  }
};

std::vector<std::pair<int64_t, int64_t>> marks_of(const report::ExperimentData& d, MarkKind kind) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& m : d.marks) {
    if (m.kind == kind) out.emplace_back(m.trial, m.iteration);
  }
  return out;
}

TEST(ReportData, SummarisesEachTrialAndFindsTheBest) {
  AshaStore s;
  const auto d = s.extract();
  ASSERT_EQ(d.trials.size(), 5u);
  EXPECT_EQ(d.trials[0].value, 1.0);
  EXPECT_EQ(d.trials[2].value, 1.5);
  EXPECT_EQ(d.trials[3].best, 4.0);
  EXPECT_TRUE(std::isnan(d.trials[4].value));  // NaN metrics only
  EXPECT_EQ(d.trials[2].end, 7.0);             // seconds since creation
  EXPECT_EQ(d.best_trial, 0);
  EXPECT_EQ(d.results, 14u);
  EXPECT_EQ(d.scheduler, "asha");
  EXPECT_EQ(d.search, "random");
  EXPECT_EQ(d.wall_s, 10.0);
  // x and opt vary; seed is a constant.
  EXPECT_EQ(d.params, (std::vector<std::string>{"opt", "x"}));
}

TEST(ReportData, MarksWhereTheSchedulerActedAndTrialsFailed) {
  AshaStore s;
  const auto d = s.extract();
  using Points = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(marks_of(d, MarkKind::kStopped), (Points{{1, 1}, {4, 2}}));  // fewer iterations than the longest
  EXPECT_EQ(marks_of(d, MarkKind::kPaused), (Points{{2, 2}}));
  EXPECT_EQ(marks_of(d, MarkKind::kPromoted), (Points{{2, 3}}));
  EXPECT_EQ(marks_of(d, MarkKind::kRetried), (Points{{3, 1}}));
  EXPECT_EQ(marks_of(d, MarkKind::kError), (Points{{3, 2}}));
  EXPECT_TRUE(marks_of(d, MarkKind::kExploited).empty());
}

TEST(ReportData, TurnsAttemptsIntoSlotIntervals) {
  AshaStore s;
  const auto d = s.extract();
  // trial 2 ran twice: [1003 - 1, 1004] and [1006 - 1, 1007].
  std::vector<std::pair<double, double>> trial2;
  for (const auto& i : d.intervals) {
    if (i.trial == 2) trial2.emplace_back(i.start, i.end);
  }
  EXPECT_EQ(trial2, (std::vector<std::pair<double, double>>{{2, 4}, {5, 7}}));
  EXPECT_EQ(d.intervals.size(), 7u);
  EXPECT_EQ(d.intervals.front().end, 4.0);  // trial 0's last result, not its end (it may end paused)
  EXPECT_EQ(d.intervals[5].end, 9.0);        // trial 3 failed at 1009, after its last result
  EXPECT_EQ(d.lanes, 2);  // never more than two trials at once
  // Busy 4 + 1 + 2 + 2 + 1 + 2.5 + 2 = 14.5 lane-seconds of 2 lanes x 9 s.
  EXPECT_DOUBLE_EQ(d.utilisation, 14.5 / 18.0);
}

TEST(ReportData, RungsComeFromPausesAndStopsWithTheWorstSurvivorAsCutoff) {
  AshaStore s;
  const auto d = s.extract();
  ASSERT_EQ(d.rungs.size(), 2u);
  EXPECT_EQ(d.rungs[0].milestone, 1);
  // Reaching iteration 1: trials 0 (4), 1 (5), 2 (3), 3 (4.5); trial 4 has no value.
  EXPECT_EQ(d.rungs[0].trials, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(d.rungs[0].continued, (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(d.rungs[0].cutoff, 4.5);
  EXPECT_EQ(d.rungs[1].milestone, 2);
  EXPECT_EQ(d.rungs[1].cutoff, 3.0);  // trials 0 (3) and 2 (2.5) went on; trial 3 (4) did not
}

TEST(ReportData, AStoreWithoutTrialsOrMetricStillExtracts) {
  TempDir dir;
  auto store = Store::open(dir.path());
  store->create_experiment(ExperimentRecord{0, "empty", "RUNNING", "", ""});
  const auto d = report::extract_experiment(*store, *store->find_experiment("empty"), {}, 5);
  EXPECT_TRUE(d.trials.empty());
  EXPECT_EQ(d.best_trial, -1);
  EXPECT_TRUE(d.running);
  EXPECT_EQ(d.lanes, 0);
  EXPECT_TRUE(std::isnan(d.utilisation));
  EXPECT_EQ(d.mode, "min");
}

TEST(ReportData, AnExperimentWithOneMetricHasNoParetoFront) {
  AshaStore s;
  const auto d = s.extract();
  EXPECT_TRUE(d.objectives.empty());
  EXPECT_TRUE(d.objective_values.empty());
  EXPECT_TRUE(d.pareto_front.empty());
  const std::string page = render_report(*s.store, s.dir.path(), {"asha-demo"});
  EXPECT_EQ(page.find("\"pareto\""), std::string::npos);
}

TEST(ReportData, AMultiObjectiveExperimentHasEachObjectiveAndExactlyTheNonDominatedTrialsAsItsFront) {
  TempDir dir;
  SweepSpec spec;
  spec.name = "moo";
  spec.objectives = {{"loss", "min"}, {"accuracy", "max"}};
  spec.num_samples = 60;
  spec.search.seed = 11;
  spec.param_space.add("x", uniform(0, 1)).add("y", uniform(0, 1));
  Tuner(two_objectives, spec, testing::quiet_run(dir)).fit();
  auto store = Store::open(dir.path());
  const ExperimentRecord experiment = *store->find_experiment("moo");
  // A trial with one objective only takes no part, however good its loss.
  const int64_t partial = store->add_trial(experiment.id, 60, {{"x", 0.3}, {"y", 0.0}});
  store->set_trial_status(partial, kRunning, experiment.created_at + 1);
  store->add_result(partial, 1, 1, {{"loss", -1.0}}, experiment.created_at + 2);
  store->set_trial_status(partial, kTerminated, experiment.created_at + 2);

  const auto d = report::extract_experiment(*store, experiment, {}, 0);
  ASSERT_EQ(d.objectives, spec.objectives);
  ASSERT_EQ(d.trials.size(), 61u);
  const std::vector<TrialRecord> trials = store->trials(experiment.id);
  std::set<int64_t> expected;
  for (size_t i = 0; i < trials.size(); ++i) {
    const Json& mine = trials[i].last_result;
    EXPECT_EQ(d.objective_values[0][i], mine["loss"].get<double>());
    if (!mine.contains("accuracy")) {
      EXPECT_TRUE(std::isnan(d.objective_values[1][i]));
      continue;
    }
    EXPECT_EQ(d.objective_values[1][i], mine["accuracy"].get<double>());
    bool dominated = false;
    for (const TrialRecord& other : trials) {
      const Json& theirs = other.last_result;
      if (!theirs.contains("accuracy")) continue;
      const double la = theirs["loss"], lb = mine["loss"], aa = theirs["accuracy"], ab = mine["accuracy"];
      dominated = dominated || (la <= lb && aa >= ab && (la < lb || aa > ab));
    }
    if (!dominated) expected.insert(trials[i].trial_index);
  }
  EXPECT_EQ(std::set<int64_t>(d.pareto_front.begin(), d.pareto_front.end()), expected);
  EXPECT_GE(expected.size(), 3u);  // a trade-off, not one winner
  // In the order `tune best` lists the front.
  std::vector<int64_t> listed;
  for (const auto& member : internal::pareto_trials(*store, experiment, spec.objectives)) {
    listed.push_back(member.trial.trial_index);
  }
  EXPECT_EQ(d.pareto_front, listed);

  // The page's first screen has all of it (the Pareto chart draws it).
  const std::string page = render_report(*store, dir.path(), {"moo"});
  const std::string open = "<script type=\"application/json\" id=\"tune-data\">";
  const size_t start = page.find(open) + open.size();
  const Json pareto = Json::parse(page.substr(start, page.find("</script>", start) - start))["experiments"][0]["pareto"];
  EXPECT_EQ(pareto["objectives"], (Json{{{"metric", "loss"}, {"mode", "min"}}, {{"metric", "accuracy"}, {"mode", "max"}}}));
  EXPECT_EQ(pareto["front"], Json(d.pareto_front));
  ASSERT_EQ(pareto["values"].size(), 2u);
  EXPECT_EQ(pareto["values"][1].size(), 61u);
  EXPECT_TRUE(pareto["values"][1][60].is_null());
  EXPECT_NEAR(pareto["values"][0][7].get<double>(), d.objective_values[0][7], 1e-5 * std::abs(d.objective_values[0][7]));
}

TEST(ReportData, PbtLineageListsEachExploitWithItsPerturbation) {
  AshaStore s;
  ExploitRecord x;
  x.trial_id = s.rows[1];
  x.donor_trial_id = s.rows[0];
  x.iteration = 1;
  x.donor_iteration = 1;
  x.old_config = {{"x", 1.5}, {"opt", "sgd"}};
  x.new_config = {{"x", 1.8}, {"opt", "sgd"}};
  x.time = 1002;
  s.store->add_exploit(x);
  const auto d = s.extract();
  ASSERT_EQ(d.exploits.size(), 1u);
  EXPECT_EQ(d.exploits[0].trial, 1);
  EXPECT_EQ(d.exploits[0].donor, 0);
  EXPECT_EQ(d.exploits[0].time, 2);
  EXPECT_EQ(d.exploits[0].changes, (Json{{"x", {1.5, 1.8}}}));
}

TEST(ReportAnalysis, ImportanceGoesToTheParameterTheMetricDependsOn) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<report::TrialData> trials(200);
  for (auto& t : trials) {
    const double x = u(rng), noise = u(rng);
    t.params = {{"x", x}, {"noise", noise}, {"kind", u(rng) > 0 ? "a" : "b"}};
    t.value = x * x + 0.01 * u(rng);
  }
  const auto importance = report::parameter_importance({"kind", "noise", "x"}, trials);
  ASSERT_EQ(importance.size(), 3u);
  EXPECT_EQ(importance[0].param, "x");
  EXPECT_GT(importance[0].value, 0.9);
  double sum = 0;
  for (const auto& i : importance) sum += i.value;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_TRUE(report::parameter_importance({"x"}, std::vector<report::TrialData>(2)).empty());
}

TEST(ParetoOrder, TheNonDominatedPointsByTheFirstObjectiveBestFirst) {
  // a min, b max: (1, 1), (2, 3) twice, a NaN, (3, 1) which (1, 1) dominates, (0.5, 0.2).
  const std::vector<Objective> objectives = {{"a", "min"}, {"b", "max"}};
  const std::vector<std::vector<double>> values = {{1, 2, 2, NAN, 3, 0.5}, {1, 3, 3, 9, 1, 0.2}};
  EXPECT_EQ(internal::pareto_order(objectives, values), (std::vector<size_t>{5, 0, 1, 2}));  // equal points share it
  EXPECT_TRUE(internal::pareto_order(objectives, {{NAN}, {1}}).empty());
}

TEST(ReportAnalysis, DownsamplingKeepsEndsAndSpikesWithinBudget) {
  std::vector<double> x, y;
  for (int i = 0; i < 1000; ++i) {
    x.push_back(i);
    y.push_back(i == 500 ? 100.0 : i == 3 ? NAN : std::sin(i / 50.0));
  }
  const auto kept = report::downsample(x, y, 50);
  ASSERT_EQ(kept.size(), 50u);
  EXPECT_EQ(kept.front(), 0u);
  EXPECT_EQ(kept.back(), 999u);
  EXPECT_NE(std::find(kept.begin(), kept.end(), 500u), kept.end());
  EXPECT_EQ(std::find(kept.begin(), kept.end(), 3u), kept.end());
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  EXPECT_EQ(report::downsample({1, 2}, {NAN, 5}, 50), (std::vector<size_t>{1}));
}

// Lanes: no two intervals of a lane overlap, and as many lanes as the
// largest number of intervals open at one instant.
TEST(ReportAnalysis, LanesNeverOverlapAndMatchPeakConcurrency) {
  EXPECT_TRUE(rc::check([] {
    const auto starts = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 100));
    std::vector<report::Interval> intervals;
    for (size_t i = 0; i < starts.size(); ++i) {
      const int length = *rc::gen::inRange(1, 30);
      intervals.push_back({static_cast<int64_t>(i), 1, double(starts[i]), double(starts[i] + length), 0, ""});
    }
    const int lanes = report::assign_lanes(intervals);
    int peak = 0;
    for (int t = 0; t < 130; ++t) {
      int open = 0;
      for (const auto& i : intervals) open += i.start <= t && t < i.end;
      peak = std::max(peak, open);
    }
    RC_ASSERT(lanes == peak);
    for (const auto& a : intervals) {
      for (const auto& b : intervals) {
        if (&a != &b && a.lane == b.lane) RC_ASSERT(a.end <= b.start || b.end <= a.start);
      }
    }
  }));
}

TEST(ReportAnalysis, MedianCurveIsTheMedianOfRunningMeans) {
  std::vector<report::TrialProgress> trials = {
      {0, {1, 2, 3}, {6, 4, 2}},  // running means 6, 5, 4
      {1, {1, 2}, {2, 2}},        // 2, 2
      {2, {2, 3}, {10, NAN}},     // -, 10, 10
  };
  const auto curve = report::median_curve(trials, 10);
  EXPECT_EQ(curve.progress, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(curve.median, (std::vector<double>{4, 5, 4}));
}

}  // namespace
}  // namespace tune
