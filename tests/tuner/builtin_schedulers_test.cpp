// The built-in schedulers through the real driver (in-process trials that
// checkpoint every iteration): ASHA promotion pauses and resumes trials from
// their checkpoints, HyperBand ends its losers, PBT exploits are in the store.
// (The scheduler's state across kill -9 + `tune resume`: tests/tuner/cli_e2e_test.cpp.)
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <iomanip>
#include <filesystem>
#include <map>
#include <set>

#include "storage/store.h"
#include "tuner_test_util.h"
#include "tuner/tuner.h"

namespace tune {
namespace {

using testing::TempDir;

RunConfig quiet(const TempDir& dir, int slots) { return testing::quiet_run(dir, slots); }

// loss = q + 1/iteration; the state (a running sum of q) is checkpointed, so a
// resumed trial that restarted from scratch would have a wrong state.
void curve(Session& s) {
  double state = 0;
  if (s.checkpoint()) std::ifstream(s.checkpoint()->path + "/state") >> state;
  const double q = s.config()["q"].get<double>();
  for (int64_t i = s.iteration() + 1; i <= 27; ++i) {
    state += q;
    std::string dir = s.make_checkpoint_dir();
    std::ofstream(dir + "/state") << std::setprecision(17) << state;
    s.report({{"loss", q + 1.0 / static_cast<double>(i)}, {"state", state}}, dir);
  }
}

SweepSpec spec(const std::string& name, int64_t samples, const std::string& type, Json params) {
  SweepSpec s;
  s.name = name;
  s.metric = "loss";
  s.mode = "min";
  s.num_samples = samples;
  s.search.seed = 3;
  s.param_space.add("q", uniform(0, 1));
  s.scheduler.type = type;
  s.scheduler.params = std::move(params);
  return s;
}

// Every trial's results are iterations 1..n without gaps, and the state is
// the sum over them (so resumes continued from checkpoints).
void expect_continuous(Store& store, const std::string& experiment, std::map<int64_t, int>* reached) {
  auto exp = store.find_experiment(experiment);
  ASSERT_TRUE(exp);
  for (const auto& trial : store.trials(exp->id)) {
    EXPECT_EQ(trial.status, "TERMINATED") << trial.trial_index;
    auto rows = store.results(trial.id);
    for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(rows[i].iteration, static_cast<int64_t>(i + 1));
    const double q = trial.config["q"];
    EXPECT_NEAR(trial.last_result["state"].get<double>(), q * static_cast<double>(rows.size()), 1e-9);
    (*reached)[static_cast<int>(rows.size())] += 1;
  }
}

TEST(BuiltinSchedulers, AshaPromotionPausesAndResumesFromCheckpoints) {
  for (bool backfill : {false, true}) {
    SCOPED_TRACE(backfill ? "backfill" : "no backfill");
    TempDir dir;
    ResultGrid grid = Tuner(curve,
                            spec("asha", 9, "asha",
                                 {{"promotion", true}, {"reduction_factor", 3}, {"max_t", 9}, {"backfill", backfill}}),
                            quiet(dir, 2))
                          .fit();
    testing::expect_grid_is_the_stores(grid, dir.path());
    EXPECT_EQ(grid.num_terminated(), 9);
    auto store = Store::open(dir.path(), true);
    std::map<int64_t, int> reached;  // iterations trained -> trials
    expect_continuous(*store, "asha", &reached);
    int at_least_3 = 0, at_9 = 0;
    for (const auto& [iterations, count] : reached) at_least_3 += iterations >= 3 ? count : 0, at_9 += iterations >= 9 ? count : 0;
    // 9 trials, rf 3, rungs 1, 3, 9: the best trial (lowest q) reaches 9 and
    // at least 3 trials reach 3; without backfill every trial ends at a rung
    // and most at 1 (backfill, once the searcher is done, gives slots that
    // would idle to trials the rule left at a rung, so those end in between).
    EXPECT_GE(at_9, 1);
    EXPECT_GE(at_least_3, 3);
    if (!backfill) {
      EXPECT_EQ(reached[1] + reached[3] + reached[9], 9);
      EXPECT_GE(reached[1], 4);
    }
    EXPECT_EQ(grid.best().metrics["training_iteration"], 9);
    // Paused trials were resumed: more than one attempt each for the promoted.
    int resumed = 0;
    for (const auto& t : store->trials(store->find_experiment("asha")->id)) resumed += t.attempts > 1;
    EXPECT_GE(resumed, 3);
  }
}

TEST(BuiltinSchedulers, HyperBandRunsItsBracketsThroughTheDriver) {
  TempDir dir;
  // max_t 4, eta 2: brackets (4@1, 2@2, 1@4), (3@2, 1@4), (3@4): 10 trials.
  ResultGrid grid = Tuner(curve, spec("hb", 10, "hyperband", {{"max_t", 4}, {"reduction_factor", 2}}), quiet(dir, 2)).fit();
  EXPECT_EQ(grid.num_terminated(), 10);
  auto store = Store::open(dir.path(), true);
  std::map<int64_t, int> reached;
  expect_continuous(*store, "hb", &reached);
  EXPECT_EQ(reached, (std::map<int64_t, int>{{1, 2}, {2, 3}, {4, 5}}));
}

TEST(BuiltinSchedulers, AshaStoppingAndMedianStopEarly) {
  for (const auto& [type, params] : std::vector<std::pair<std::string, Json>>{
           {"asha", {{"reduction_factor", 3}, {"max_t", 27}}},
           {"median_stopping", {{"time_attr", "training_iteration"}, {"grace_period", 3}, {"min_samples_required", 2}}}}) {
    TempDir dir;
    // Eight qualities in a fixed order (not drawn: whether a rule stops two of
    // them would depend on the draws' order), one slot: each rule sees the
    // trials one after another, the best third.
    SweepSpec s = spec(type, 1, type, params);
    s.param_space = SearchSpace();
    s.param_space.add("q", grid_search({0.5, 0.9, 0.1, 0.8, 0.3, 0.95, 0.7, 0.6}));
    ResultGrid grid = Tuner(curve, s, quiet(dir, 1)).fit();
    ASSERT_EQ(grid.size(), 8u);
    int stopped_early = 0;
    for (const auto& r : grid.results()) stopped_early += r.metrics["training_iteration"].get<int>() < 27;
    EXPECT_GE(stopped_early, 2) << type;
    EXPECT_EQ(grid.best().metrics["training_iteration"], 27) << type;
  }
}

TEST(BuiltinSchedulers, PbtExploitsAreRecordedAndTrialsContinue) {
  TempDir dir;
  Json params = {{"time_attr", "training_iteration"}, {"perturbation_interval", 3}, {"quantile_fraction", 0.5},
                 {"hyperparam_mutations", {{"q", {{"uniform", {0, 1}}}}}}, {"seed", 1}};
  ResultGrid grid = Tuner(curve, spec("pbt", 4, "pbt", params), quiet(dir, 2)).fit();
  testing::expect_grid_is_the_stores(grid, dir.path());
  EXPECT_EQ(grid.num_terminated(), 4);
  auto store = Store::open(dir.path(), true);
  auto exp = store->find_experiment("pbt");
  auto lineage = store->exploits(exp->id);
  ASSERT_FALSE(lineage.empty());
  std::map<int64_t, TrialRecord> by_id;
  for (const auto& t : store->trials(exp->id)) by_id[t.id] = t;
  for (const auto& e : lineage) {
    EXPECT_NE(e.trial_id, e.donor_trial_id);
    EXPECT_EQ(e.iteration % 3, 0);
    EXPECT_GT(e.donor_iteration, 0);
  }
  // 4 trials on 2 slots share them (Ray's time sharing): a trial that goes
  // on as it is at a boundary gives its slot up while others wait, so every
  // trial has started before any reaches the end (one after the other, trials
  // 2 and 3 would start only once 0 and 1 had ended). Only a trial exploited
  // at each of its 8 boundaries keeps its slot throughout.
  double last_start = 0, first_end = 1e300;
  for (const auto& [id, t] : by_id) {
    const auto rows = store->results(id);
    ASSERT_FALSE(rows.empty());
    last_start = std::max(last_start, rows.front().time);
    for (const auto& row : rows)
      if (row.iteration == 27) first_end = std::min(first_end, row.time);
  }
  EXPECT_LT(last_start, first_end);
  // Every trial runs to the end; its iterations go on by one, except where it
  // exploited: there it goes on from the donor's iteration (as in Ray).
  for (const auto& [id, t] : by_id) {
    auto rows = store->results(id);
    ASSERT_FALSE(rows.empty());
    // The end is iteration 27, reported or restored (an exploit of a donor
    // that had already finished ends the trial at once, at the donor's 27).
    bool restored_end = false;
    for (const auto& e : lineage)
      restored_end = restored_end || (e.trial_id == id && e.iteration == rows.back().iteration && e.donor_iteration == 27);
    EXPECT_TRUE(rows.back().iteration == 27 || restored_end) << "trial " << t.trial_index << " ended at "
                                                            << rows.back().iteration;
    EXPECT_EQ(rows.front().iteration, 1);
    for (size_t i = 1; i < rows.size(); ++i) {
      if (rows[i].iteration == rows[i - 1].iteration + 1) continue;
      bool exploited_here = false;
      for (const auto& e : lineage)
        exploited_here = exploited_here || (e.trial_id == id && e.iteration == rows[i - 1].iteration &&
                                            e.donor_iteration + 1 == rows[i].iteration);
      EXPECT_TRUE(exploited_here) << "trial " << t.trial_index << ": iteration " << rows[i - 1].iteration << " then "
                                  << rows[i].iteration;
    }
  }
}

// An exploit can send a trial back in iterations (to a donor behind it): the
// checkpoints it writes after that must not reuse the directories of its
// earlier ones, or pruning an old one deletes the new one (the donor's
// checkpoint then vanishes under the next exploit: `tune run` failed with
// "cannot copy checkpoint").
TEST(BuiltinSchedulers, PbtCheckpointsOfEveryLineageKeepTheirOwnDirectories) {
  TempDir dir;
  Json params = {{"time_attr", "training_iteration"}, {"perturbation_interval", 2}, {"quantile_fraction", 0.5},
                 {"hyperparam_mutations", {{"q", {{"uniform", {0, 1}}}}}}, {"seed", 4}};
  SweepSpec s = spec("pbt_lineage", 6, "pbt", params);
  s.checkpoint.num_to_keep = 2;
  ResultGrid grid = Tuner(curve, s, quiet(dir, 2)).fit();
  EXPECT_EQ(grid.num_terminated(), 6);
  auto store = Store::open(dir.path(), true);
  auto exp = store->find_experiment("pbt_lineage");
  auto lineage = store->exploits(exp->id);
  int went_back = 0;
  for (const auto& e : lineage) went_back += e.donor_iteration < e.iteration ? 1 : 0;
  ASSERT_GT(went_back, 0) << "the test needs an exploit that goes back in iterations";
  for (const auto& t : store->trials(exp->id)) {
    std::set<std::string> paths;
    int live = 0;
    for (const auto& c : store->checkpoints(t.id)) {
      EXPECT_TRUE(paths.insert(c.path).second) << "two checkpoints of trial " << t.trial_index << " share " << c.path;
      if (c.deleted) continue;
      live += 1;
      EXPECT_TRUE(std::filesystem::exists(c.path + "/state")) << c.path << " is recorded but gone";
    }
    EXPECT_LE(live, 3) << "trial " << t.trial_index << ": num_to_keep 2 and the latest";
  }
}

// A donor checkpoint that cannot be copied (here: each checkpoint holds a
// named pipe, which a copy refuses) fails the exploiting trial, not the
// sweep. (Deleting each checkpoint after reporting it made the copy fail only
// most of the time: a donor still waiting for the answer to its report has
// its checkpoint in place.)
TEST(BuiltinSchedulers, AnExploitWhoseCopyFailsFailsThatTrialNotTheSweep) {
  TempDir dir;
  Json params = {{"time_attr", "training_iteration"}, {"perturbation_interval", 2}, {"quantile_fraction", 0.5},
                 {"hyperparam_mutations", {{"q", {{"uniform", {0, 1}}}}}}, {"seed", 4}};
  SweepSpec s = spec("pbt_gone", 4, "pbt", params);
  auto uncopyable = [](Session& session) {
    for (int64_t i = session.iteration() + 1; i <= 8; ++i) {
      std::string checkpoint = session.make_checkpoint_dir();
      std::ofstream(checkpoint + "/state") << i;
      if (mkfifo((checkpoint + "/pipe").c_str(), 0600) != 0) throw std::runtime_error("mkfifo failed");
      session.report({{"loss", session.config()["q"].get<double>() + 1.0 / static_cast<double>(i)}}, checkpoint);
    }
  };
  ResultGrid grid = Tuner(uncopyable, s, quiet(dir, 2)).fit();
  testing::expect_grid_is_the_stores(grid, dir.path());
  int exploit_errors = 0;
  auto store = Store::open(dir.path(), true);
  for (const auto& t : store->trials(store->find_experiment("pbt_gone")->id))
    exploit_errors += t.error.find("exploit of trial_") != std::string::npos ? 1 : 0;
  EXPECT_GT(exploit_errors, 0);
  EXPECT_EQ(grid.num_terminated() + grid.num_errors(), 4);
}

TEST(BuiltinSchedulers, AshaWithBayesianSearchLearnsFromStoppedTrials) {
  // BOHB-like: bayes proposes, ASHA stops; stopped trials still inform the
  // model (ranked below the trials that reached max_t), so later proposals
  // concentrate on low q.
  TempDir dir;
  SweepSpec s = spec("bohb", 16, "asha", {{"reduction_factor", 3}, {"max_t", 9}});
  s.search.algorithm = "bayes";
  s.search.params = {{"n_initial_points", 5}};
  ResultGrid grid = Tuner(curve, s, quiet(dir, 2)).fit();
  EXPECT_EQ(grid.num_terminated(), 16);
  int stopped = 0;
  double first = 0, last = 0;
  for (const auto& r : grid.results()) {
    stopped += r.metrics["training_iteration"].get<int>() < 9;
    (r.trial_index < 5 ? first : last) += r.config["q"].get<double>() / (r.trial_index < 5 ? 5 : 11);
  }
  EXPECT_GE(stopped, 3);
  EXPECT_LT(last, first);  // the model steers toward low q
  EXPECT_LT(grid.best().config["q"].get<double>(), 0.2);
}

}  // namespace
}  // namespace tune
