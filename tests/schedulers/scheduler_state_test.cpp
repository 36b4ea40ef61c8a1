// save_state / restore_state: a restored scheduler takes the same decisions,
// older states still load, and corrupt integers are errors.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "scheduler_test_util.h"
#include "schedulers/scheduler.h"

namespace tune {
namespace {

using testing::iteration_pbt;

// Drives a scheduler with a random script; halfway, a copy restored from
// save_state() must take the same decisions as the original from then on.
void expect_restore_continues(const std::string& type, const Json& params,
                              const std::function<Json(Json)>& as_saved = [](Json state) { return state; }) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    auto a = make_scheduler(type, params, "loss", "min");
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<int64_t> iteration(12, 0);
    std::unique_ptr<Scheduler> b;
    for (int i = 0; i < 12; ++i) a->on_trial_add(i, {{"x", u(rng)}});
    for (int step = 0; step < 400; ++step) {
      if (step == 200) {
        b = make_scheduler(type, params, "loss", "min");
        b->restore_state(as_saved(Json::parse(a->save_state().dump())));
      }
      const int trial = static_cast<int>(rng() % 12);
      iteration[trial] += 1;
      Json result = {{"training_iteration", iteration[trial]}, {"time_total_s", iteration[trial] * 1.5},
                     {"loss", u(rng) + 1.0 / iteration[trial]}};
      a->on_checkpoint(trial, iteration[trial]);
      TrialDecision da = a->on_result(trial, result);
      std::vector<int64_t> paused = {0, 3, 5, 7};
      std::optional<int64_t> ca = a->choose_trial_to_run(paused);
      if (b) {
        b->on_checkpoint(trial, iteration[trial]);
        TrialDecision db = b->on_result(trial, result);
        ASSERT_EQ(static_cast<int>(da.action), static_cast<int>(db.action)) << type << " step " << step;
        ASSERT_EQ(da.donor, db.donor);
        ASSERT_EQ(da.new_config, db.new_config);
        ASSERT_EQ(ca, b->choose_trial_to_run(paused));
      }
    }
  }
}

// PBT's state as versions before 2026-11-29 saved it: one object per member
// (its history as [time, score] pairs), where it now saves one array per field.
Json pbt_member_form(Json state) {
  const Json& c = state.at("members");
  Json members = Json::array();
  size_t next = 0;
  for (size_t i = 0; i < c.at("trial").size(); ++i) {
    Json m = Json::object();
    for (const char* key : {"trial", "config", "score", "last_perturb", "has_checkpoint", "alive", "waiting", "paused",
                            "paused_at", "now", "checkpoint_iteration", "plan"})
      m[key] = c.at(key)[i];
    if (c.contains("history_count")) {  // PB2's (PBT's too up to c84b9f0)
      m["history_t_max"] = c.at("history_t_max")[i];
      Json history = Json::array();
      for (int64_t k = 0; k < c.at("history_count")[i].get<int64_t>(); ++k, ++next)
        history.push_back({c.at("history_t")[next], c.at("history_score")[next]});
      m["history"] = history;
    }
    members.push_back(m);
  }
  state["members"] = members;
  return state;
}

// A PBT state saved before time sharing (no paused members, no "now", no
// checkpoint iterations, no "more_trials") still restores: nothing paused,
// each member's time its latest result's, more trials possible.
TEST(SchedulerState, APbtStateFromBeforeTimeSharingRestores) {
  auto a = iteration_pbt(2);
  for (int i = 0; i < 3; ++i) a->on_trial_add(i, {{"x", 0.1 * i}});
  for (int i = 0; i < 3; ++i) {
    a->on_checkpoint(i, 1);
    (void)a->on_result(i, {{"training_iteration", 1}, {"loss", 0.1 * (i + 1)}});
  }
  Json old = pbt_member_form(a->save_state());
  old.erase("more_trials");
  for (Json& m : old["members"])
    for (const char* key : {"paused", "paused_at", "now", "checkpoint_iteration"}) m.erase(key);
  auto b = iteration_pbt(2);
  ASSERT_NO_THROW(b->restore_state(old));
  EXPECT_EQ(b->choose_trial_to_run({0, 1, 2}), std::nullopt);  // more trials may come: new ones first
  b->on_no_more_trials();
  b->on_checkpoint(2, 2);
  // Trial 2 (worst) at its boundary clones trial 0 (best, at 1: behind it).
  TrialDecision d = b->on_result(2, {{"training_iteration", 2}, {"loss", 0.9}});
  ASSERT_EQ(d.action, TrialAction::kExploit);
  EXPECT_EQ(d.donor, 0);
}

// The driver saves PBT's state at most once a second, not with each exploit:
// a resume hands each restored trial's stored config (after an exploit the
// state may predate) to the scheduler, and that config is what a later
// exploit of it as a donor explores from.
TEST(SchedulerState, ARestoredPbtTakesEachTrialsStoredConfig) {
  const Json params = {{"time_attr", "training_iteration"}, {"perturbation_interval", 2}, {"quantile_fraction", 0.5},
                       {"resample_probability", 0}, {"perturbation_factors", {2.0, 2.0}},
                       {"hyperparam_mutations", {{"x", {{"uniform", {0, 1}}}}}}};
  auto a = make_scheduler("pbt", params, "loss", "min");
  for (int i = 0; i < 3; ++i) a->on_trial_add(i, {{"x", 0.1}});
  for (int i = 0; i < 3; ++i) {
    a->on_checkpoint(i, 1);
    (void)a->on_result(i, {{"training_iteration", 1}, {"loss", 0.1 * (3 - i)}});  // trial 2 best
  }
  const Json saved = Json::parse(a->save_state().dump());
  for (const double stored : {0.1, 0.3}) {
    auto b = make_scheduler("pbt", params, "loss", "min");
    b->restore_state(saved);
    b->on_trial_restored(2, {{"x", stored}});  // an exploit after the save gave it this config
    b->on_checkpoint(0, 2);
    TrialDecision d = b->on_result(0, {{"training_iteration", 2}, {"loss", 0.9}});  // worst, at its boundary
    ASSERT_EQ(d.action, TrialAction::kExploit);
    EXPECT_EQ(d.donor, 2);
    EXPECT_DOUBLE_EQ(d.new_config.at("x").get<double>(), 2 * stored) << "explored from the stored config";
  }
}

std::unique_ptr<Scheduler> iteration_pb2(int interval) {
  return make_scheduler("pb2", {{"time_attr", "training_iteration"}, {"perturbation_interval", interval},
                                {"hyperparam_bounds", {{"x", {0.0, 1.0}}}}},
                        "loss", "min");
}

// PB2 keeps the latest 8 results of each member (its model's window) and the
// latest time of all: its state and memory do not grow with a trial's length.
TEST(SchedulerState, Pb2KeepsABoundedHistoryPerMember) {
  auto a = iteration_pb2(1000);
  a->on_trial_add(0, {{"x", 0.5}});
  for (int i = 1; i <= 100; ++i) (void)a->on_result(0, {{"training_iteration", i}, {"loss", 1.0 / i}});
  const Json saved = a->save_state();
  ASSERT_EQ(saved.at("members").at("trial").size(), 1u);
  EXPECT_EQ(saved["members"].at("history_count"), Json::array({8}));
  ASSERT_EQ(saved["members"].at("history_t").size(), 8u);
  const Json state = pbt_member_form(saved);
  const Json& member = state["members"][0];
  ASSERT_EQ(member.at("history").size(), 8u);
  EXPECT_EQ(member["history"][0][0], 93);
  EXPECT_EQ(member["history"][7][0], 100);
  EXPECT_EQ(member.at("history_t_max"), 100);
  // A state saved before the cap (the whole history, no history_t_max) restores to the same.
  Json old = state;
  old["members"][0].erase("history_t_max");
  Json full = Json::array();
  for (int i = 1; i <= 100; ++i) full.push_back({i, -1.0 / i});
  old["members"][0]["history"] = full;
  auto b = iteration_pb2(1000);
  b->restore_state(old);
  const Json again = pbt_member_form(b->save_state());
  EXPECT_EQ(again["members"][0]["history"].size(), 8u);
  EXPECT_EQ(again["members"][0]["history_t_max"], 100);
  EXPECT_EQ(b->save_state(), saved) << "the old form restores to the state it was saved from";
}

// PBT reads no member's past results, so it neither keeps nor saves them (they
// were two thirds of its state). A state from a version that saved them
// restores to the same state, and the same decisions, as one without.
TEST(SchedulerState, PbtKeepsNoHistory) {
  auto a = iteration_pbt(1000);
  for (int t = 0; t < 3; ++t) a->on_trial_add(t, {{"x", 0.5}});
  for (int i = 1; i <= 20; ++i)
    for (int t = 0; t < 3; ++t) (void)a->on_result(t, {{"training_iteration", i}, {"loss", (1.0 + t) / i}});
  const Json saved = a->save_state();
  for (const char* key : {"history_count", "history_t", "history_score", "history_t_max"})
    EXPECT_FALSE(saved.at("members").contains(key)) << key;
  Json old = saved;  // as PBT saved it before: every member's latest 8 results
  old["members"]["history_count"] = Json::array({8, 8, 8});
  old["members"]["history_t_max"] = Json::array({20, 20, 20});
  Json times = Json::array(), scores = Json::array();
  for (int t = 0; t < 3; ++t)
    for (int i = 13; i <= 20; ++i) times.push_back(i), scores.push_back(-(1.0 + t) / i);
  old["members"]["history_t"] = times;
  old["members"]["history_score"] = scores;
  for (const Json& form : {old, pbt_member_form(old)}) {
    auto b = iteration_pbt(1000);
    b->restore_state(form);
    EXPECT_EQ(b->save_state(), saved);
  }
}

// The earlier per-member form restores to schedulers that decide the same;
// a column that is not one entry per member is an error, not a crash.
TEST(SchedulerState, APbtStateInTheEarlierPerMemberFormRestores) {
  const Json async = {{"time_attr", "training_iteration"}, {"perturbation_interval", 5},
                      {"hyperparam_mutations", {{"x", {{"uniform", {0, 1}}}}}}};
  expect_restore_continues("pbt", async, pbt_member_form);
  expect_restore_continues("pbt", {{"time_attr", "training_iteration"}, {"perturbation_interval", 5}, {"synch", true},
                                   {"hyperparam_mutations", {{"x", {0.1, 0.5, 0.9}}}}},
                           pbt_member_form);
  auto a = make_scheduler("pbt", async, "loss", "min");
  for (int i = 0; i < 3; ++i) a->on_trial_add(i, {{"x", 0.5}});
  for (int i = 0; i < 3; ++i) (void)a->on_result(i, {{"training_iteration", 1}, {"loss", 0.5}});
  Json bad = a->save_state();
  bad["members"]["score"].erase(0);
  try {
    make_scheduler("pbt", async, "loss", "min")->restore_state(bad);
    FAIL() << "expected tune::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "pbt state: members' score is not one per trial");
  }
  auto pb2 = iteration_pb2(5);
  for (int i = 0; i < 3; ++i) pb2->on_trial_add(i, {{"x", 0.5}});
  for (int i = 0; i < 3; ++i) (void)pb2->on_result(i, {{"training_iteration", 1}, {"loss", 0.5}});
  bad = pb2->save_state();
  bad["members"]["history_count"][0] = 100;
  try {
    iteration_pb2(5)->restore_state(bad);
    FAIL() << "expected tune::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "pbt state: the histories are shorter than their counts");
  }
}

TEST(SchedulerState, RestoredSchedulersContinueTheSameDecisions) {
  expect_restore_continues("asha", {{"reduction_factor", 3}, {"max_t", 27}, {"brackets", 2}});
  expect_restore_continues("asha", {{"reduction_factor", 3}, {"max_t", 27}, {"promotion", true}});
  expect_restore_continues("hyperband", {{"max_t", 27}, {"reduction_factor", 3}});
  expect_restore_continues("median_stopping", {{"time_attr", "training_iteration"}, {"grace_period", 3}});
  expect_restore_continues("pbt", {{"time_attr", "training_iteration"}, {"perturbation_interval", 5},
                                   {"hyperparam_mutations", {{"x", {{"uniform", {0, 1}}}}}}});
  expect_restore_continues("pbt", {{"time_attr", "training_iteration"}, {"perturbation_interval", 5}, {"synch", true},
                                   {"hyperparam_mutations", {{"x", {0.1, 0.5, 0.9}}}}});
}

// ASHA saves its state by parts (what each list gained since the last part).
// A random script adds trials over time, ends some, pauses and promotes; at
// random steps a part is taken, and a scheduler restored from the parts so
// far (through their JSON text, as the store keeps them) must hold the same
// state as the original and take the same decisions from then on. After the
// restore it has nothing new to save; the parts it saves then continue the
// same list.
void expect_parts_rebuild_the_state(const Json& params) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    auto a = make_scheduler("asha", params, "loss", "min");
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<int64_t> iteration;
    std::vector<bool> ended;
    std::vector<Json> parts;
    auto take_part = [&](Scheduler& s) {
      std::optional<Json> part = s.save_state_part();
      ASSERT_TRUE(part.has_value());
      if (!part->is_null()) parts.push_back(Json::parse(part->dump()));
    };
    for (int step = 0; step < 600; ++step) {
      if (iteration.size() < 40 && (iteration.empty() || rng() % 8 == 0)) {
        a->on_trial_add(static_cast<int64_t>(iteration.size()), {{"x", u(rng)}});
        iteration.push_back(0);
        ended.push_back(false);
      }
      const auto trial = static_cast<int64_t>(rng() % iteration.size());
      if (ended[static_cast<size_t>(trial)]) continue;
      const int roll = static_cast<int>(rng() % 40);
      if (roll == 0) {
        a->on_trial_error(trial);
        ended[static_cast<size_t>(trial)] = true;
      } else {
        iteration[static_cast<size_t>(trial)] += 1;
        const int64_t it = iteration[static_cast<size_t>(trial)];
        a->on_checkpoint(trial, it);
        TrialDecision d = a->on_result(trial, {{"training_iteration", it}, {"time_total_s", it * 1.5},
                                               {"loss", u(rng) + 1.0 / static_cast<double>(it)}});
        if (d.action == TrialAction::kStop) {
          a->on_trial_complete(trial, nullptr);
          ended[static_cast<size_t>(trial)] = true;
        }
      }
      std::vector<int64_t> paused;
      for (int64_t t = 0; t < static_cast<int64_t>(iteration.size()); t += 3)
        if (!ended[static_cast<size_t>(t)]) paused.push_back(t);
      a->choose_trial_to_run(paused);
      if (rng() % 5 == 0) take_part(*a);
      if (step % 150 == 149) {
        auto b = make_scheduler("asha", params, "loss", "min");
        for (const Json& part : parts) b->restore_state(part);
        // The parts so far, then what a has not yet saved, is a's state.
        std::optional<Json> rest = a->save_state_part();
        ASSERT_TRUE(rest.has_value());
        if (!rest->is_null()) {
          parts.push_back(Json::parse(rest->dump()));
          b->restore_state(parts.back());
        }
        ASSERT_EQ(a->save_state(), b->save_state()) << "seed " << seed << " step " << step;
        EXPECT_TRUE(b->save_state_part()->is_null()) << "a restored state is saved already";
        const Json result = {{"training_iteration", 1000}, {"time_total_s", 1500.0}, {"loss", 0.5}};
        for (int64_t t = 0; t < static_cast<int64_t>(iteration.size()); ++t) {
          if (ended[static_cast<size_t>(t)]) continue;
          auto a2 = make_scheduler("asha", params, "loss", "min");
          a2->restore_state(a->save_state());
          ASSERT_EQ(static_cast<int>(a2->on_result(t, result).action), static_cast<int>(b->on_result(t, result).action))
              << "seed " << seed << " step " << step << " trial " << t;
          ASSERT_EQ(a2->save_state(), b->save_state());
          b = make_scheduler("asha", params, "loss", "min");
          for (const Json& part : parts) b->restore_state(part);
        }
      }
    }
    EXPECT_GT(parts.size(), 10u) << "seed " << seed;
  }
}

TEST(SchedulerState, AshaPartsInOrderRebuildTheWholeState) {
  expect_parts_rebuild_the_state({{"reduction_factor", 3}, {"max_t", 27}, {"brackets", 2}});
  expect_parts_rebuild_the_state({{"reduction_factor", 3}, {"max_t", 27}, {"promotion", true}});
}

// A part holds only what changed: after one more trial reaches the first
// rung, the part is that one record and that trial's bracket, not the rungs
// of the trials before it.
TEST(SchedulerState, AnAshaPartHoldsOnlyWhatChanged) {
  auto a = make_scheduler("asha", {{"reduction_factor", 3}, {"max_t", 9}}, "loss", "min");
  for (int64_t t = 0; t < 50; ++t) {
    a->on_trial_add(t, nullptr);
    a->on_result(t, {{"training_iteration", 1}, {"loss", 1.0 / static_cast<double>(t + 1)}});
  }
  const Json first = *a->save_state_part();
  EXPECT_EQ(first.at("brackets")[0][0].at("trials").size(), 50u);
  EXPECT_TRUE(a->save_state_part()->is_null()) << "nothing new";
  a->on_trial_add(50, nullptr);
  a->on_result(50, {{"training_iteration", 1}, {"loss", 0.001}});
  const Json second = *a->save_state_part();
  EXPECT_EQ(second.at("brackets")[0][0].at("trials"), Json::array({50}));
  EXPECT_EQ(second.at("brackets")[0][0].at("scores"), Json::array({-0.001}));
  EXPECT_EQ(second.at("brackets")[0][1].at("trials"), Json::array());
  EXPECT_EQ(second.at("bracket_of").at("trials"), Json::array({50}));
  EXPECT_EQ(second.at("added"), 51);
  // The whole state is unchanged by taking parts.
  auto b = make_scheduler("asha", {{"reduction_factor", 3}, {"max_t", 9}}, "loss", "min");
  b->restore_state(first);
  b->restore_state(second);
  EXPECT_EQ(a->save_state(), b->save_state());
}

// FIFO, HyperBand and median stopping are saved whole.
TEST(SchedulerState, OnlyAshaAndPbtSaveByParts) {
  for (const std::string type : {"fifo", "hyperband", "median_stopping"})
    EXPECT_FALSE(make_scheduler(type, Json::object(), "loss", "min")->save_state_part().has_value()) << type;
  for (const auto& [type, mutations] : {std::pair<std::string, Json>{"pbt", {{"hyperparam_mutations", {{"x", {0.1, 0.5}}}}}},
                                        std::pair<std::string, Json>{"pb2", {{"hyperparam_bounds", {{"x", {0, 1}}}}}}}) {
    auto s = make_scheduler(type, mutations, "loss", "min");
    s->on_trial_add(0, {{"x", 0.5}});
    EXPECT_TRUE(s->save_state_part().has_value()) << type;
  }
}

// PBT (and PB2, which keeps PBT's state) saves by parts: the members changed
// since the last part. A random population (trials added over time, results,
// checkpoints, pauses at boundaries by time sharing or synch, resumes chosen
// by the scheduler, exploits, errors, the searcher running out) takes a part
// at random steps, as the driver does; a nullopt part is a whole state, which
// replaces the parts before it. A scheduler restored from the stored rows
// (through their JSON text) must hold the same state as the original and
// take the same decisions (the same exploits, donors and explored configs:
// the generator is carried as a count of draws) as a copy restored whole.
struct PbtScript {
  std::vector<int64_t> iteration, checkpoint;
  std::vector<int> status;  // 0 running, 1 paused, 2 ended
  std::mt19937_64 rng;
  int64_t population;
  bool announced_end = false;
  std::vector<std::string> log;  // every decision, for comparing two runs
  int exploits = 0, pauses = 0;
  std::function<void()> between;  // called at random between a checkpoint and its result

  void step(Scheduler& s) {
    std::uniform_real_distribution<double> u(0, 1);
    if (static_cast<int64_t>(iteration.size()) < population && (iteration.empty() || rng() % 6 == 0)) {
      const auto t = static_cast<int64_t>(iteration.size());
      s.on_trial_add(t, {{"x", u(rng)}});
      iteration.push_back(0), checkpoint.push_back(-1), status.push_back(0);
    } else if (static_cast<int64_t>(iteration.size()) == population && !announced_end) {
      s.on_no_more_trials();
      announced_end = true;
    }
    std::vector<int64_t> paused;
    for (size_t t = 0; t < status.size(); ++t)
      if (status[t] == 1) paused.push_back(static_cast<int64_t>(t));
    if (!paused.empty() && rng() % 3 == 0) {
      std::optional<int64_t> chosen = s.choose_trial_to_run(paused);
      log.push_back("choose " + (chosen ? std::to_string(*chosen) : std::string("none")));
      if (chosen) {
        TrialDecision d = s.on_trial_resume(*chosen);
        apply(*chosen, d);
      }
    }
    const auto t = static_cast<size_t>(rng() % iteration.size());
    if (status[t] != 0) return;
    if (rng() % 60 == 0) {
      s.on_trial_error(static_cast<int64_t>(t));
      status[t] = 2;
      log.push_back("error " + std::to_string(t));
      return;
    }
    if (rng() % 10 == 0 && iteration[t] > checkpoint[t]) {  // a checkpoint of where it is, alone
      s.on_checkpoint(static_cast<int64_t>(t), iteration[t]);
      checkpoint[t] = iteration[t];
      return;
    }
    iteration[t] += 1;
    if (rng() % 2 == 0) {
      s.on_checkpoint(static_cast<int64_t>(t), iteration[t]);
      checkpoint[t] = iteration[t];
      if (rng() % 3 == 0 && between) between();  // a part between the checkpoint and its result
    }
    TrialDecision d = s.on_result(static_cast<int64_t>(t), {{"training_iteration", iteration[t]},
                                                            {"loss", u(rng) + 1.0 / static_cast<double>(iteration[t])}});
    apply(static_cast<int64_t>(t), d);
    if (iteration[t] >= 40 && status[t] == 0) {
      s.on_trial_complete(static_cast<int64_t>(t), nullptr);
      status[t] = 2;
    }
  }

  void apply(int64_t trial, const TrialDecision& d) {
    const auto t = static_cast<size_t>(trial);
    log.push_back(std::to_string(trial) + " " + std::to_string(static_cast<int>(d.action)) + " " +
                  std::to_string(d.donor) + " " + d.new_config.dump());
    exploits += d.action == TrialAction::kExploit;
    pauses += d.action == TrialAction::kPause;
    if (d.action == TrialAction::kPause) status[t] = 1;
    if (d.action == TrialAction::kStop) status[t] = 2;
    if (d.action == TrialAction::kContinue || d.action == TrialAction::kExploit) status[t] = 0;
    if (d.action == TrialAction::kExploit) iteration[t] = std::max<int64_t>(0, checkpoint[static_cast<size_t>(d.donor)]);
  }
};

// bounded: parts of at most a few members at random (save_state_part_up_to,
// the driver's periodic save), the rest left for the next parts.
void expect_pbt_parts_rebuild_the_state(const std::string& type, const Json& params, int64_t population = 80,
                                        int steps = 1200, int seeds = 4, int at_least = 10, bool bounded = false) {
  int exploits = 0, pauses = 0, folded = 0;  // over the seeds: the script reached what it tests
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(seeds); ++seed) {
    auto a = make_scheduler(type, params, "loss", "min");
    PbtScript script{{}, {}, {}, std::mt19937_64(seed), population};
    std::vector<Json> rows;  // as the driver stores them: a whole state or first part, then parts
    int wholes = 0;             // whole states, and runs of parts that replaced the parts before them
    int split = 0;              // bounded parts that left changes for the next one
    size_t base = 0;            // rows[base]: the "base" part of a run under way (0: none)
    // everything: what the driver saves with a batch that pauses a trial.
    auto take_part = [&](bool everything = false) {
      std::optional<Json> part =
          bounded && !everything ? a->save_state_part_up_to(1 + script.rng() % 6) : a->save_state_part();
      split += bounded && part && a->state_part_pending();
      if (!part) {
        rows = {Json::parse(a->save_state().dump())};
        ++wholes;
      } else if (!part->is_null()) {
        rows.push_back(Json::parse(part->dump()));
        // As the driver does: the parts between the first row and a
        // finished run's base go (the first row stays, restored first).
        if (part->value("base", false) && rows.size() > 1) base = rows.size() - 1;
        if (part->value("rebased", false) && base > 0) {
          rows.erase(rows.begin() + 1, rows.begin() + static_cast<std::ptrdiff_t>(base));
          base = 0;
          ++wholes;
        }
      }
    };
    // The paused members a state says (what the store's PAUSED rows need).
    auto paused_members = [](Scheduler& s) {
      const Json members = Json::parse(s.save_state().dump()).at("members");
      std::set<int64_t> out;
      for (size_t i = 0; i < members.at("trial").size(); ++i)
        if (members.at("paused")[i].get<bool>()) out.insert(members.at("trial")[i].get<int64_t>());
      return out;
    };
    int pause_saves = 0;
    script.between = take_part;
    for (int step = 0; step < steps; ++step) {
      const int paused_before = script.pauses;
      script.step(*a);
      if (bounded && script.pauses > paused_before) {
        // A batch that pauses a trial: a bounded part, yet what is restored
        // from the rows knows every paused member (and no other).
        std::optional<Json> part = a->save_state_part_for_pause(1 + script.rng() % 6);
        ASSERT_TRUE(part.has_value());
        if (!part->is_null()) rows.push_back(Json::parse(part->dump()));
        if (part->value("base", false) && rows.size() > 1) base = rows.size() - 1;
        if (part->value("rebased", false) && base > 0) {
          rows.erase(rows.begin() + 1, rows.begin() + static_cast<std::ptrdiff_t>(base));
          base = 0;
          ++wholes;
        }
        auto b = make_scheduler(type, params, "loss", "min");
        for (const Json& row : rows) b->restore_state(row);
        ASSERT_EQ(paused_members(*a), paused_members(*b)) << type << " seed " << seed << " step " << step;
        ++pause_saves;
      }
      if (script.rng() % 4 == 0) take_part();
      if (step % 200 == 199) {
        take_part(/*everything=*/true);  // what is not yet saved
        EXPECT_FALSE(a->state_part_pending());
        auto b = make_scheduler(type, params, "loss", "min");
        for (const Json& row : rows) b->restore_state(row);
        // Through the text (a member without a score holds NaN, which never equals itself).
        const Json sa = Json::parse(a->save_state().dump()), sb = Json::parse(b->save_state().dump());
        ASSERT_TRUE(sa == sb) << type << " seed " << seed << " step " << step << ": "
                              << Json::diff(sa, sb).dump().substr(0, 600);
        EXPECT_TRUE(b->save_state_part()->is_null()) << "a restored state is saved already";
        // From here on, b decides as a copy restored whole.
        auto whole = make_scheduler(type, params, "loss", "min");
        whole->restore_state(Json::parse(a->save_state().dump()));
        PbtScript s1 = script, s2 = script;
        s1.log.clear(), s2.log.clear();
        s1.between = s2.between = nullptr;
        for (int k = 0; k < 150; ++k) s1.step(*whole), s2.step(*b);
        ASSERT_EQ(s1.log, s2.log) << type << " seed " << seed << " step " << step;
        ASSERT_EQ(whole->save_state().dump(), b->save_state().dump());
      }
    }
    exploits += script.exploits, pauses += script.pauses, folded += wholes;
    if (bounded) EXPECT_GE(split, 50) << type << " seed " << seed << ": the parts were never split";
    if (bounded) EXPECT_GE(pause_saves, 10) << type << " seed " << seed << ": no batch paused a trial";
  }
  EXPECT_GE(exploits, at_least) << type;
  EXPECT_GE(pauses, at_least) << type;
  EXPECT_GE(folded, at_least / 5) << type << ": the parts were never folded into a whole state";
}

TEST(SchedulerState, PbtPartsInOrderRebuildTheWholeState) {
  expect_pbt_parts_rebuild_the_state("pbt", {{"time_attr", "training_iteration"}, {"perturbation_interval", 3},
                                             {"seed", 7}, {"hyperparam_mutations", {{"x", {{"uniform", {0, 1}}}}}}});
}

TEST(SchedulerState, BoundedPbtPartsInOrderRebuildTheWholeState) {
  expect_pbt_parts_rebuild_the_state("pbt", {{"time_attr", "training_iteration"}, {"perturbation_interval", 3},
                                             {"seed", 7}, {"hyperparam_mutations", {{"x", {{"uniform", {0, 1}}}}}}},
                                     80, 1200, 4, 10, /*bounded=*/true);
  expect_pbt_parts_rebuild_the_state("pbt", {{"time_attr", "training_iteration"}, {"perturbation_interval", 3},
                                             {"synch", true}, {"hyperparam_mutations", {{"x", {0.1, 0.5, 0.9}}}}},
                                     80, 2000, 2, 5, /*bounded=*/true);  // synch decides once all 80 are there
}

TEST(SchedulerState, SynchPbtPartsInOrderRebuildTheWholeState) {
  expect_pbt_parts_rebuild_the_state("pbt", {{"time_attr", "training_iteration"}, {"perturbation_interval", 3},
                                             {"synch", true}, {"hyperparam_mutations", {{"x", {0.1, 0.5, 0.9}}}}});
}

TEST(SchedulerState, Pb2PartsInOrderRebuildTheWholeState) {
  // PB2 fits a GP per exploit: a smaller population.
  expect_pbt_parts_rebuild_the_state("pb2", {{"time_attr", "training_iteration"}, {"perturbation_interval", 3},
                                             {"hyperparam_bounds", {{"x", {0, 1}}}}},
                                     12, 500, 1, 3);
}

// A PBT part holds the members that changed, not the population; parts
// since the state they apply on are bounded (four times the population, at
// least 256 members), past which a save holds every member (a "base" run of
// parts, after which the driver drops the parts before it); a part that
// does not follow its state is an error.
TEST(SchedulerState, APbtPartHoldsOnlyWhatChanged) {
  auto a = iteration_pbt(1000);
  for (int64_t t = 0; t < 100; ++t) {
    a->on_trial_add(t, {{"x", 0.5}});
    (void)a->on_result(t, {{"training_iteration", 1}, {"loss", 1.0 / static_cast<double>(t + 1)}});
  }
  const Json first = *a->save_state_part();
  EXPECT_EQ(first.at("members").at("trial").size(), 100u);
  EXPECT_TRUE(a->save_state_part()->is_null()) << "nothing new";
  (void)a->on_result(7, {{"training_iteration", 2}, {"loss", 0.001}});
  const Json second = *a->save_state_part();
  EXPECT_EQ(second.at("members").at("trial"), Json::array({7}));
  EXPECT_EQ(second.at("members").at("score"), Json::array({-0.001}));
  EXPECT_FALSE(second.contains("rng")) << "the generator travels as a count of draws";
  auto b = iteration_pbt(1000);
  b->restore_state(first);
  b->restore_state(second);
  EXPECT_EQ(a->save_state().dump(), b->save_state().dump());
  // 100 members: once the parts since the state they apply on pass 400
  // members, a save holds every member, never a whole state: a "base" part
  // with the generator, "rebased" when it is the run's last.
  int parts = 0;
  std::optional<Json> part;
  for (int i = 0; i < 1000; ++i) {
    (void)a->on_result(i % 100, {{"training_iteration", 3 + i / 100}, {"loss", 0.5}});
    part = a->save_state_part();
    ASSERT_TRUE(part.has_value()) << "a whole state";
    if (part->value("base", false)) break;
    ++parts;
  }
  EXPECT_EQ(parts, 400 - 101 + 1) << "the first part (100) and the second (1) count";
  EXPECT_EQ(part->at("members").at("trial").size(), 100u);
  EXPECT_TRUE(part->contains("rng"));
  EXPECT_TRUE(part->value("rebased", false)) << "unbounded: the run is this one part";
  auto rebased = iteration_pbt(1000);
  rebased->restore_state(first);  // the first row stays; the parts before the base go
  rebased->restore_state(*part);
  EXPECT_EQ(a->save_state().dump(), rebased->save_state().dump());
  // Bounded: the run goes over several parts, the members changed first
  // first, the last one "rebased"; a change during the run waits for the next save.
  std::vector<Json> run;
  for (int i = 0; i < 1000 && run.empty(); ++i) {
    (void)a->on_result(i % 100, {{"training_iteration", 20 + i / 100}, {"loss", 0.4}});
    Json next = *a->save_state_part_up_to(30);
    if (next.value("base", false)) run.push_back(next);
  }
  ASSERT_EQ(run.size(), 1u);
  EXPECT_EQ(run[0].at("members").at("trial").size(), 30u);
  EXPECT_FALSE(run[0].value("rebased", false));
  const int64_t written = run[0].at("members").at("trial")[0].get<int64_t>();  // already in the run
  (void)a->on_result(written, {{"training_iteration", 40}, {"loss", 0.125}});
  while (a->state_part_pending()) run.push_back(*a->save_state_part_up_to(30));
  ASSERT_EQ(run.size(), 4u) << "30 + 30 + 30 + 10 members";
  EXPECT_TRUE(run.back().value("rebased", false));
  for (size_t k = 1; k < run.size(); ++k) EXPECT_FALSE(run[k].contains("rng")) << k;
  run.push_back(*a->save_state_part_up_to(30));
  ASSERT_TRUE(run.back().is_object());
  EXPECT_EQ(run.back().at("members").at("trial"), Json::array({written})) << "changed again during the run: the next save";
  auto from_run = iteration_pbt(1000);
  from_run->restore_state(first);
  for (const Json& p : run) from_run->restore_state(p);
  EXPECT_EQ(a->save_state().dump(), from_run->save_state().dump());
  // Bounded parts: the members changed first go first; the rest are pending.
  // A bounded save goes through the members changed when it began, and
  // those alone: one that changes meanwhile waits for the next save.
  for (int64_t t : {5, 3, 9, 1}) (void)a->on_result(t, {{"training_iteration", 20}, {"loss", 0.25}});
  EXPECT_FALSE(a->state_part_pending()) << "no save under way";
  const Json head = *a->save_state_part_up_to(3);
  EXPECT_EQ(head.at("members").at("trial"), Json::array({3, 5, 9})) << "the first three changed, ascending";
  EXPECT_TRUE(a->state_part_pending());
  (void)a->on_result(7, {{"training_iteration", 20}, {"loss", 0.25}});  // after the save began
  const Json rest = *a->save_state_part_up_to(3);
  EXPECT_EQ(rest.at("members").at("trial"), Json::array({1}));
  EXPECT_FALSE(a->state_part_pending());
  EXPECT_EQ(a->save_state_part_up_to(3)->at("members").at("trial"), Json::array({7})) << "the next save";
  EXPECT_TRUE(a->save_state_part_up_to(3)->is_null()) << "nothing new";
  Json bad = second;
  bad["draws"] = 0;
  auto c = iteration_pbt(1000);
  c->restore_state(a->save_state());
  (void)c->save_state_part();
  bad["draws"] = -1;
  EXPECT_THROW(c->restore_state(bad), Error);
}

// ASHA's state as versions before 2026-11-29 saved it: [trial, score] pairs
// per rung and [trial, bracket] pairs, where it now saves flat arrays.
Json asha_pair_form(Json state) {
  for (Json& bracket : state.at("brackets")) {
    for (Json& rung : bracket) {
      Json recorded = Json::array();
      for (size_t i = 0; i < rung.at("trials").size(); ++i) recorded.push_back({rung["trials"][i], rung["scores"][i]});
      rung.erase("trials");
      rung.erase("scores");
      rung["recorded"] = recorded;
    }
  }
  Json pairs = Json::array();
  const Json& of = state.at("bracket_of");
  for (size_t i = 0; i < of.at("trials").size(); ++i) pairs.push_back({of["trials"][i], of["brackets"][i]});
  state["bracket_of"] = pairs;
  return state;
}

TEST(SchedulerState, AnAshaStateInTheEarlierPairFormRestores) {
  const Json saved = asha_pair_form(Json::parse(R"({"brackets": [[{"milestone": 1, "trials": [4, 2], "scores": [0.5, 0.25],
      "promoted": [2]}]], "bracket_of": {"trials": [2, 4], "brackets": [0, 0]}, "added": 2, "ended": []})"));
  EXPECT_EQ(saved.at("brackets")[0][0].at("recorded"), Json::parse("[[4, 0.5], [2, 0.25]]"));
  EXPECT_EQ(saved.at("bracket_of"), Json::parse("[[2, 0], [4, 0]]"));
  expect_restore_continues("asha", {{"reduction_factor", 3}, {"max_t", 27}, {"brackets", 2}}, asha_pair_form);
  expect_restore_continues("asha", {{"reduction_factor", 3}, {"max_t", 27}, {"promotion", true}}, asha_pair_form);
}

TEST(SchedulerState, AnAshaStateWhoseArraysDifferInLengthIsAnError) {
  const Json good = Json::parse(R"({"brackets": [[{"milestone": 1, "trials": [4, 2], "scores": [0.5, 0.25],
      "promoted": []}]], "bracket_of": {"trials": [2, 4], "brackets": [0, 0]}, "added": 2, "ended": []})");
  auto message = [](const Json& state) {
    try {
      make_scheduler("asha", {{"max_t", 27}}, "loss", "min")->restore_state(state);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message(good), "(no error)");
  Json rung = good;
  rung["brackets"][0][0]["scores"] = {0.5};
  EXPECT_EQ(message(rung), "asha state: a rung's trials and scores differ in length");
  Json of = good;
  of["bracket_of"]["brackets"] = {0};
  EXPECT_EQ(message(of), "asha state: bracket_of's trials and brackets differ in length");
}

// Every integer of a saved state, one at a time, made a float out of range (a
// corrupt or hand-edited tune.db): restoring is a one-line tune::Error, never
// an undefined conversion (UBSan in scripts/sanitize.sh would abort on one).
void expect_corrupt_integers_are_errors(const std::string& type, const Json& params) {
  auto a = make_scheduler(type, params, "loss", "min");
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<int64_t> iteration(8, 0);
  for (int i = 0; i < 8; ++i) a->on_trial_add(i, {{"x", u(rng)}});
  for (int step = 0; step < 120; ++step) {
    const int trial = static_cast<int>(rng() % 8);
    iteration[trial] += 1;
    a->on_checkpoint(trial, iteration[trial]);
    (void)a->on_result(trial, {{"training_iteration", iteration[trial]}, {"time_total_s", iteration[trial] * 1.5},
                               {"loss", u(rng) + 1.0 / iteration[trial]}});
    if (step % 10 == 9) a->on_trial_complete(static_cast<int64_t>(rng() % 8), nullptr);
  }
  const Json saved = Json::parse(a->save_state().dump());
  std::vector<Json::json_pointer> integers;
  std::function<void(const Json&, const Json::json_pointer&)> walk = [&](const Json& j, const Json::json_pointer& at) {
    if (j.is_number_integer()) integers.push_back(at);
    if (j.is_array())
      for (size_t i = 0; i < j.size(); ++i) walk(j[i], at / i);
    if (j.is_object() && at.to_string().find("/config") == std::string::npos)  // configs are the user's values
      for (const auto& [key, value] : j.items()) walk(value, at / key);
  };
  walk(saved, Json::json_pointer());
  ASSERT_FALSE(integers.empty()) << type;
  for (const auto& at : integers) {
    Json corrupt = saved;
    corrupt[at] = 1e114;
    auto b = make_scheduler(type, params, "loss", "min");
    EXPECT_THROW(b->restore_state(corrupt), Error) << type << " " << at.to_string();
  }
}

TEST(SchedulerState, AFloatWhereTheStateHoldsAnIntegerIsAnError) {
  expect_corrupt_integers_are_errors("asha", {{"reduction_factor", 3}, {"max_t", 27}, {"brackets", 2}});
  expect_corrupt_integers_are_errors("hyperband", {{"max_t", 27}, {"reduction_factor", 3}});
  expect_corrupt_integers_are_errors("median_stopping", {{"time_attr", "training_iteration"}, {"grace_period", 3}});
  expect_corrupt_integers_are_errors("pbt", {{"time_attr", "training_iteration"}, {"perturbation_interval", 5},
                                             {"hyperparam_mutations", {{"x", {{"uniform", {0, 1}}}}}}});
}

}  // namespace
}  // namespace tune
