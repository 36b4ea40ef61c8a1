// Store: records round-trip through SQLite, and transactions nest.
#include "storage/store.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <vector>

#include "test_util.h"
#include "base/error.h"

namespace tune {
namespace {

using ::testing::HasSubstr;
using tune::testing::TempDir;

ExperimentRecord experiment(const std::string& name) {
  ExperimentRecord e;
  e.name = name;
  e.status = "RUNNING";
  e.metric = "loss";
  e.mode = "min";
  e.spec = {{"num_samples", 4}, {"space", {{"lr", {{"loguniform", {1e-4, 1e-1}}}}}}};
  e.spec_source = "metric: loss\n";
  return e;
}

struct Fixture : ::testing::Test {
  TempDir dir;
  std::unique_ptr<Store> store = Store::open(dir.path());
  int64_t exp_id = store->create_experiment(experiment("exp"));
};

using StoreExperiments = Fixture;
using StoreTrials = Fixture;
using StoreResults = Fixture;
using StoreTransactions = Fixture;

TEST_F(StoreExperiments, CreateFindAndListRoundTripEveryField) {
  ExperimentRecord second = experiment("second");
  second.searcher_state = {{"rng", 42}};
  second.created_at = 1000.5;
  int64_t second_id = store->create_experiment(second);
  EXPECT_NE(second_id, exp_id);

  auto found = store->find_experiment("second");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, second_id);
  EXPECT_EQ(found->status, "RUNNING");
  EXPECT_EQ(found->metric, "loss");
  EXPECT_EQ(found->mode, "min");
  EXPECT_EQ(found->spec, second.spec);
  EXPECT_EQ(found->spec_source, "metric: loss\n");
  EXPECT_EQ(found->searcher_state, Json({{"rng", 42}}));
  EXPECT_TRUE(found->scheduler_state.is_null());
  EXPECT_EQ(found->created_at, 1000.5);
  EXPECT_EQ(found->updated_at, 1000.5);

  auto all = store->experiments();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "exp");
  EXPECT_EQ(all[1].name, "second");
  EXPECT_GT(all[0].created_at, 0);
}

TEST_F(StoreExperiments, FindReturnsNothingForAnUnknownName) {
  EXPECT_FALSE(store->find_experiment("nope"));
}

TEST_F(StoreExperiments, ADuplicateNameIsRefused) {
  try {
    store->create_experiment(experiment("exp"));
    FAIL() << "expected tune::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "experiment 'exp' already exists");
  }
}

TEST_F(StoreExperiments, StatusAndStatesUpdate) {
  store->set_experiment_status(exp_id, "FINISHED");
  store->set_searcher_state(exp_id, {{"seen", {1, 2, 3}}});
  store->set_scheduler_state(exp_id, {{"rung", 2}});
  auto e = store->find_experiment("exp");
  EXPECT_EQ(e->status, "FINISHED");
  EXPECT_EQ(e->searcher_state, Json({{"seen", {1, 2, 3}}}));
  EXPECT_EQ(e->scheduler_state, Json({{"rung", 2}}));
  EXPECT_GE(e->updated_at, e->created_at);
  store->set_searcher_state(exp_id, Json());
  EXPECT_TRUE(store->find_experiment("exp")->searcher_state.is_null());
  EXPECT_THROW(store->set_experiment_status(999, "FAILED"), Error);
}

// The parts of a scheduler's state come back in the order they were added,
// per experiment; setting the whole state drops them.
TEST_F(StoreExperiments, SchedulerStatePartsKeepTheirOrderUntilTheWholeStateReplacesThem) {
  const int64_t other = store->create_experiment(experiment("other"));
  EXPECT_TRUE(store->scheduler_state_parts(exp_id).empty());
  store->set_scheduler_state(exp_id, {{"part", 0}});
  for (int i = 1; i <= 3; ++i) store->add_scheduler_state_part(exp_id, {{"part", i}});
  store->add_scheduler_state_part(other, {{"part", 9}});
  EXPECT_EQ(store->scheduler_state_parts(exp_id),
            (std::vector<Json>{{{"part", 1}}, {{"part", 2}}, {{"part", 3}}}));
  EXPECT_EQ(store->find_experiment("exp")->scheduler_state, Json({{"part", 0}}));
  store->set_scheduler_state(exp_id, {{"whole", true}});
  EXPECT_TRUE(store->scheduler_state_parts(exp_id).empty());
  EXPECT_EQ(store->scheduler_state_parts(other), std::vector<Json>{Json({{"part", 9}})});
  EXPECT_EQ(store->find_experiment("exp")->scheduler_state, Json({{"whole", true}}));
}

// A run of parts that holds everything the earlier parts held ("base"):
// the parts before it go, its own and later ones stay, and so do the first
// part and the other experiments' parts.
TEST_F(StoreExperiments, PartsBeforeABasePartCanBeDropped) {
  const int64_t other = store->create_experiment(experiment("other"));
  store->set_scheduler_state(exp_id, {{"part", 0}});
  std::vector<int64_t> ids;
  for (int i = 1; i <= 5; ++i) {
    ids.push_back(store->add_scheduler_state_part(exp_id, {{"part", i}}));
    store->add_scheduler_state_part(other, {{"part", 10 + i}});
  }
  for (size_t k = 1; k < ids.size(); ++k) EXPECT_GT(ids[k], ids[k - 1]);
  EXPECT_EQ(store->drop_scheduler_state_parts_before(exp_id, ids[3], 2), 2) << "at most the limit, oldest first";
  EXPECT_EQ(store->scheduler_state_parts(exp_id), (std::vector<Json>{{{"part", 3}}, {{"part", 4}}, {{"part", 5}}}));
  EXPECT_EQ(store->drop_scheduler_state_parts_before(exp_id, ids[3], 2), 1);
  EXPECT_EQ(store->drop_scheduler_state_parts_before(exp_id, ids[3], 2), 0);
  EXPECT_EQ(store->scheduler_state_parts(exp_id), (std::vector<Json>{{{"part", 4}}, {{"part", 5}}}));
  EXPECT_EQ(store->find_experiment("exp")->scheduler_state, Json({{"part", 0}}));
  EXPECT_EQ(store->scheduler_state_parts(other).size(), 5u);
}

TEST_F(StoreTrials, ConfigRoundTripsAndParamsAreFlattened) {
  Json config = {{"lr", 0.01},
                 {"model", {{"layers", 3}, {"act", "relu"}, {"dims", {64, 32}}}},
                 {"use_bn", true}};
  int64_t id = store->add_trial(exp_id, 0, config);
  auto t = store->trial(exp_id, 0);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->id, id);
  EXPECT_EQ(t->experiment_id, exp_id);
  EXPECT_EQ(t->status, kPending);
  EXPECT_EQ(t->config, config);
  EXPECT_EQ(t->attempts, 0);
  EXPECT_TRUE(t->last_result.is_null());
  EXPECT_GT(t->created_at, 0);
  EXPECT_EQ(t->started_at, 0);

  SQLite::Database db(Store::database_path(dir.path()));
  SQLite::Statement q(db,
                      "SELECT name, value_json, value_real, value_text FROM params"
                      " WHERE trial_id = ? ORDER BY name");
  q.bind(1, id);
  std::map<std::string, std::tuple<std::string, std::string, std::string>> rows;
  while (q.executeStep()) {
    auto text = [&](int i) { return q.isColumnNull(i) ? "NULL" : q.getColumn(i).getString(); };
    rows[text(0)] = {text(1), text(2), text(3)};
  }
  using Row = std::tuple<std::string, std::string, std::string>;
  EXPECT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows["lr"], Row("0.01", "0.01", "NULL"));
  EXPECT_EQ(rows["model.layers"], Row("3", "3.0", "NULL"));
  EXPECT_EQ(rows["model.act"], Row("\"relu\"", "NULL", "relu"));
  EXPECT_EQ(rows["model.dims"], Row("[64,32]", "NULL", "NULL"));
  EXPECT_EQ(rows["use_bn"], Row("true", "NULL", "NULL"));
}

// A trial inserted as it starts reads as one added and then started: the
// same status, attempts, times and params, from one row write.
TEST_F(StoreTrials, AStartedTrialIsTheSameAsOneAddedThenStarted) {
  const Json config = {{"lr", 0.01}, {"model", {{"act", "relu"}}}};
  const int64_t two_writes = store->add_trial(exp_id, 0, config);
  store->set_trial_status(two_writes, "RUNNING", 123.5);
  const int64_t one_write = store->add_started_trial(exp_id, 1, config, 123.5);
  const auto a = *store->trial(exp_id, 0), b = *store->trial(exp_id, 1);
  EXPECT_EQ(b.id, one_write);
  EXPECT_EQ(b.status, "RUNNING");
  EXPECT_EQ(b.status, a.status);
  EXPECT_EQ(b.attempts, 1);
  EXPECT_EQ(b.attempts, a.attempts);
  EXPECT_EQ(b.started_at, 123.5);
  EXPECT_EQ(b.started_at, a.started_at);
  EXPECT_EQ(b.ended_at, a.ended_at);
  EXPECT_EQ(b.config, a.config);
  EXPECT_EQ(b.last_iteration, 0);
  EXPECT_TRUE(b.last_result.is_null());
  SQLite::Database db(Store::database_path(dir.path()));
  SQLite::Statement q(db, "SELECT group_concat(name || '=' || value_json, ' ') FROM params WHERE trial_id = ?");
  q.bind(1, one_write);
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getString(), "lr=0.01 model.act=\"relu\"");
  EXPECT_THROW(store->add_started_trial(exp_id, 1, config, 124.0), Error) << "the index is taken";
}

TEST_F(StoreTrials, TrialsAreListedByIndexAndADuplicateIndexIsRefused) {
  store->add_trial(exp_id, 2, {{"x", 2}});
  store->add_trial(exp_id, 0, {{"x", 0}});
  store->add_trial(exp_id, 1, {{"x", 1}});
  auto trials = store->trials(exp_id);
  ASSERT_EQ(trials.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(trials[i].config["x"], i);
  EXPECT_FALSE(store->trial(exp_id, 7));
  EXPECT_THROW(store->add_trial(exp_id, 1, {{"x", 9}}), Error);
  EXPECT_EQ(store->trials(exp_id).size(), 3u);
}

TEST_F(StoreTrials, AFailedAddTrialInsideABatchKeepsTheRestOfTheBatch) {
  Transaction txn(*store);
  store->add_trial(exp_id, 0, {{"x", 0}});
  EXPECT_THROW(store->add_trial(exp_id, 0, {{"x", 1}}), Error);
  store->add_trial(exp_id, 1, {{"x", 2}});
  txn.commit();
  EXPECT_EQ(store->trials(exp_id).size(), 2u);
}

TEST_F(StoreTrials, ANewConfigReplacesTheParamsRows) {
  int64_t t = store->add_trial(exp_id, 0, {{"lr", 0.1}, {"opt", "sgd"}});
  store->set_trial_config(t, {{"lr", 0.12}, {"wd", 1e-4}});
  EXPECT_EQ(store->trial(exp_id, 0)->config, (Json{{"lr", 0.12}, {"wd", 1e-4}}));
  SQLite::Database raw(Store::database_path(dir.path()));
  SQLite::Statement q(raw, "SELECT group_concat(name || '=' || value_real) FROM params WHERE trial_id = ? ORDER BY name");
  q.bind(1, t);
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getString(), "lr=0.12,wd=0.0001");
  EXPECT_THROW(store->set_trial_config(9999, Json::object()), Error);
}

TEST_F(StoreTrials, ExploitsRecordTheLineage) {
  int64_t a = store->add_trial(exp_id, 0, {{"lr", 0.1}});
  int64_t b = store->add_trial(exp_id, 1, {{"lr", 0.2}});
  ExploitRecord e;
  e.trial_id = a;
  e.donor_trial_id = b;
  e.iteration = 4;
  e.donor_iteration = 4;
  e.checkpoint_path = "/x/trial_00000/checkpoint_000004_from_00001";
  e.old_config = {{"lr", 0.1}};
  e.new_config = {{"lr", 0.24}};
  e.time = 12.5;
  store->add_exploit(e);
  auto lineage = store->exploits(exp_id);
  ASSERT_EQ(lineage.size(), 1u);
  EXPECT_EQ(lineage[0].trial_id, a);
  EXPECT_EQ(lineage[0].donor_trial_id, b);
  EXPECT_EQ(lineage[0].iteration, 4);
  EXPECT_EQ(lineage[0].checkpoint_path, e.checkpoint_path);
  EXPECT_EQ(lineage[0].new_config, e.new_config);
  EXPECT_EQ(lineage[0].old_config, e.old_config);
  EXPECT_DOUBLE_EQ(lineage[0].time, 12.5);
}

// Found by tests/fuzz (store_json): a malformed exploit config escaped as
// nlohmann's parse_error instead of the store's one-line tune::Error.
TEST_F(StoreTrials, MalformedExploitConfigIsAStoreError) {
  int64_t a = store->add_trial(exp_id, 0, {{"lr", 0.1}});
  ExploitRecord e;
  e.trial_id = a;
  e.donor_trial_id = a;
  e.old_config = e.new_config = {{"lr", 0.1}};
  store->add_exploit(e);
  SQLite::Database db(Store::database_path(dir.path()), SQLite::OPEN_READWRITE);
  db.exec("UPDATE exploits SET new_config_json = '{\"lr\":\xff}'");
  EXPECT_THROW(store->exploits(exp_id), Error);
}

TEST_F(StoreTrials, StatusesCountAttemptsAndStampTimes) {
  int64_t id = store->add_trial(exp_id, 0, Json::object());
  store->set_trial_status(id, kRunning, 10.0);
  auto t = store->trial(exp_id, 0);
  EXPECT_EQ(t->status, kRunning);
  EXPECT_EQ(t->attempts, 1);
  EXPECT_EQ(t->started_at, 10.0);
  EXPECT_EQ(t->ended_at, 0);

  store->set_trial_status(id, kError, 11.0, "worker died");
  t = store->trial(exp_id, 0);
  EXPECT_EQ(t->status, kError);
  EXPECT_EQ(t->ended_at, 11.0);
  EXPECT_EQ(t->error, "worker died");

  store->set_trial_status(id, kRunning, 12.0);
  store->set_trial_status(id, kPaused, 13.0);
  t = store->trial(exp_id, 0);
  EXPECT_EQ(t->attempts, 2);
  EXPECT_EQ(t->started_at, 12.0);
  EXPECT_EQ(t->ended_at, 0) << "a restart clears ended_at";
  EXPECT_EQ(t->error, "worker died") << "an empty error keeps the stored one";

  store->set_trial_status(id, kTerminated, 14.0);
  t = store->trial(exp_id, 0);
  EXPECT_EQ(t->status, kTerminated);
  EXPECT_EQ(t->ended_at, 14.0);
  EXPECT_EQ(t->attempts, 2);
  EXPECT_THROW(store->set_trial_status(12345, kRunning, 1.0), Error);
}

TEST_F(StoreResults, ResultsRoundTripInOrderAndUpdateTheLastResult) {
  int64_t trial = store->add_trial(exp_id, 0, {{"x", 1}});
  for (int i = 1; i <= 3; ++i) {
    store->add_result(trial, i, 0, {{"loss", 1.0 / i}, {"acc", 0.5}, {"tag", "a"}}, 100.0 + i);
  }
  store->add_result(trial, 2, 1, {{"loss", 0.9}}, 200.0);  // retry restarts at 2

  auto results = store->results(trial);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].iteration, 1);
  EXPECT_EQ(results[0].metrics["loss"], 1.0);
  EXPECT_EQ(results[2].time, 103.0);
  EXPECT_EQ(results[3].attempt, 1);
  EXPECT_LT(results[0].id, results[3].id);

  auto t = store->trial(exp_id, 0);
  EXPECT_EQ(t->last_iteration, 2);
  EXPECT_EQ(t->last_result, Json({{"loss", 0.9}}));
}

// append_result leaves the trial's row to set_last_result; a resume's
// refresh_last_results brings the rows of unfinished trials up to their
// latest result (by insertion, not by iteration) and leaves the rest.
TEST_F(StoreResults, AppendedResultsReachTheTrialRowOnlyWhenSetOrRefreshed) {
  const int64_t running = store->add_started_trial(exp_id, 0, {{"x", 1}}, 10.0);
  const int64_t done = store->add_started_trial(exp_id, 1, {{"x", 2}}, 10.0);
  const int64_t paused = store->add_started_trial(exp_id, 2, {{"x", 3}}, 10.0);
  store->add_trial(exp_id, 3, {{"x", 4}});
  store->append_result(running, 1, 1, {{"loss", 0.5}}, 11.0);
  store->set_last_result(running, 1, {{"loss", 0.5}});
  store->append_result(running, 2, 1, {{"loss", 0.4}}, 12.0);
  store->append_result(running, 1, 2, {{"loss", 0.45}}, 13.0);  // a restart from the beginning
  EXPECT_EQ(store->results(running).size(), 3u);
  EXPECT_EQ(store->trial(exp_id, 0)->last_iteration, 1);
  EXPECT_EQ(store->trial(exp_id, 0)->last_result, Json({{"loss", 0.5}}));
  store->append_result(done, 1, 1, {{"loss", 0.3}}, 11.0);
  store->set_last_result(done, 1, {{"loss", 0.3}});
  store->set_trial_status(done, kTerminated, 12.0);
  store->append_result(done, 2, 1, {{"loss", 0.2}}, 13.0);  // not the driver's way: shows what is left alone
  store->append_result(paused, 3, 1, {{"loss", 0.7}}, 11.0);
  store->set_trial_status_and_result(paused, kPaused, 12.0, "slow", 3, {{"loss", 0.7}});
  const auto paused_row = store->trial(exp_id, 2);
  EXPECT_EQ(paused_row->status, kPaused);
  EXPECT_EQ(paused_row->error, "slow");
  EXPECT_EQ(paused_row->attempts, 1);
  EXPECT_EQ(paused_row->last_iteration, 3);
  EXPECT_EQ(paused_row->last_result, Json({{"loss", 0.7}})) << "status and last result in one write";
  EXPECT_THROW(store->set_trial_status_and_result(424242, kPaused, 12.0, "", 1, Json::object()), Error);

  store->refresh_last_results(exp_id);
  EXPECT_EQ(store->trial(exp_id, 0)->last_iteration, 1);
  EXPECT_EQ(store->trial(exp_id, 0)->last_result, Json({{"loss", 0.45}})) << "the latest, not the highest iteration";
  EXPECT_EQ(store->trial(exp_id, 1)->last_result, Json({{"loss", 0.3}})) << "a finished trial's row is final";
  EXPECT_EQ(store->trial(exp_id, 2)->last_iteration, 3);
  EXPECT_EQ(store->trial(exp_id, 3)->last_iteration, 0) << "no results: untouched";
  EXPECT_TRUE(store->trial(exp_id, 3)->last_result.is_null());
  const int64_t other = store->create_experiment(experiment("other"));
  const int64_t elsewhere = store->add_started_trial(other, 0, {{"x", 1}}, 10.0);
  store->append_result(elsewhere, 1, 1, {{"loss", 0.1}}, 11.0);
  store->refresh_last_results(exp_id);
  EXPECT_EQ(store->trial(other, 0)->last_iteration, 0) << "another experiment's trials are not touched";
}

TEST_F(StoreResults, NonFiniteMetricsAreStoredAsNull) {
  int64_t trial = store->add_trial(exp_id, 0, Json::object());
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  store->add_result(trial, 1, 0, {{"loss", nan}, {"grad", inf}, {"acc", 0.25}}, 1.0);
  auto r = store->results(trial).at(0);
  EXPECT_TRUE(r.metrics["loss"].is_null());
  EXPECT_TRUE(r.metrics["grad"].is_null());
  EXPECT_EQ(r.metrics["acc"], 0.25);
}

TEST_F(StoreResults, AResultForAMissingTrialIsRefused) {
  EXPECT_THROW(store->add_result(424242, 1, 0, {{"loss", 1}}, 1.0), Error);
}

TEST_F(StoreResults, CheckpointsAreListedLiveAndOldestFirst) {
  int64_t trial = store->add_trial(exp_id, 0, Json::object());
  int64_t a = store->add_checkpoint(trial, 1, "/ck/1", 0.5, 10.0);
  int64_t b = store->add_checkpoint(trial, 2, "/ck/2", std::nullopt, 11.0);
  int64_t c = store->add_checkpoint(trial, 3, "/ck/3", 0.25, 12.0);
  store->mark_checkpoint_deleted(b);
  auto live = store->checkpoints(trial);
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0].id, a);
  EXPECT_EQ(live[0].path, "/ck/1");
  EXPECT_EQ(live[0].score, 0.5);
  EXPECT_EQ(live[0].iteration, 1);
  EXPECT_EQ(live[0].created_at, 10.0);
  EXPECT_FALSE(live[0].deleted);
  EXPECT_EQ(live[1].id, c);
  EXPECT_THROW(store->mark_checkpoint_deleted(9999), Error);

  SQLite::Database db(Store::database_path(dir.path()));
  SQLite::Statement q(db, "SELECT deleted, score IS NULL FROM checkpoints WHERE id = ?");
  q.bind(1, b);
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getInt(), 1);
  EXPECT_EQ(q.getColumn(1).getInt(), 1);
}

// What a driver polls for (`tune hosts` requests): the events of one kind
// after a cursor, and the cursor moved past every event looked at, so the
// next poll reads only what was written since; other experiments' and
// other kinds' events are skipped.
TEST_F(StoreResults, EventsAfterACursorAndTheCursorMovesPastWhatWasRead) {
  const int64_t other = store->create_experiment(experiment("other"));
  for (int i = 0; i < 50; ++i) store->add_event(exp_id, std::nullopt, "trial_started", Json::object(), 1.0);
  store->add_event(other, std::nullopt, "host_request", {{"host", "b"}}, 2.0);
  store->add_event(exp_id, std::nullopt, "host_request", {{"host", "a"}}, 3.0);
  int64_t cursor = 0;
  auto found = store->events_after(exp_id, "host_request", cursor, &cursor);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].detail, Json({{"host", "a"}}));
  EXPECT_EQ(cursor, found[0].id) << "the newest event";
  EXPECT_TRUE(store->events_after(exp_id, "host_request", cursor, &cursor).empty());
  EXPECT_EQ(cursor, found[0].id);
  store->add_event(exp_id, std::nullopt, "trial_started", Json::object(), 4.0);
  store->add_event(exp_id, std::nullopt, "host_request", {{"host", "c"}}, 5.0);
  store->add_event(exp_id, std::nullopt, "trial_started", Json::object(), 6.0);
  found = store->events_after(exp_id, "host_request", cursor, &cursor);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].detail, Json({{"host", "c"}}));
  EXPECT_EQ(cursor, found[0].id + 1) << "past the trial_started after it";
  // Without a cursor to move, the same rows (what `tune hosts` waits on).
  EXPECT_EQ(store->events_after(exp_id, "host_request", 0).size(), 2u);
}

TEST_F(StoreResults, EventsAreAppendedWithAndWithoutATrial) {
  int64_t trial = store->add_trial(exp_id, 0, Json::object());
  store->add_event(exp_id, std::nullopt, "experiment_started", Json(), 1.0);
  store->add_event(exp_id, trial, "trial_error", {{"message", "boom"}}, 2.0);
  SQLite::Database db(Store::database_path(dir.path()));
  SQLite::Statement q(db,
                      "SELECT kind, trial_id IS NULL, detail_json, time FROM events"
                      " WHERE experiment_id = ? ORDER BY id");
  q.bind(1, exp_id);
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getString(), "experiment_started");
  EXPECT_EQ(q.getColumn(1).getInt(), 1);
  EXPECT_TRUE(q.isColumnNull(2));
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getString(), "trial_error");
  EXPECT_EQ(q.getColumn(1).getInt(), 0);
  EXPECT_EQ(q.getColumn(2).getString(), R"({"message":"boom"})");
  EXPECT_EQ(q.getColumn(3).getDouble(), 2.0);
  EXPECT_FALSE(q.executeStep());
}

TEST_F(StoreTransactions, RollbackDiscardsTheBatch) {
  store->begin();
  int64_t trial = store->add_trial(exp_id, 0, Json::object());
  store->add_result(trial, 1, 0, {{"loss", 1}}, 1.0);
  store->rollback();
  EXPECT_TRUE(store->trials(exp_id).empty());
  {
    Transaction txn(*store);
    store->add_trial(exp_id, 0, Json::object());
  }  // destroyed without commit
  EXPECT_TRUE(store->trials(exp_id).empty());
}

TEST_F(StoreTransactions, OnlyTheOutermostCommitReachesTheDatabase) {
  SQLite::Database reader(Store::database_path(dir.path()));
  auto count = [&] { return reader.execAndGet("SELECT count(*) FROM trials").getInt(); };
  {
    Transaction outer(*store);
    {
      Transaction inner(*store);
      store->add_trial(exp_id, 0, Json::object());
      inner.commit();
    }
    EXPECT_EQ(count(), 0) << "the inner commit must not be visible yet";
    outer.commit();
  }
  EXPECT_EQ(count(), 1);
}

TEST_F(StoreTransactions, AnInnerRollbackDiscardsTheOuterTransaction) {
  Transaction outer(*store);
  store->add_trial(exp_id, 0, Json::object());
  {
    Transaction inner(*store);
    store->add_trial(exp_id, 1, Json::object());
  }  // rolls back everything
  EXPECT_THROW(outer.commit(), Error);
  EXPECT_TRUE(store->trials(exp_id).empty());
  store->add_trial(exp_id, 5, Json::object());  // autocommit works again
  EXPECT_EQ(store->trials(exp_id).size(), 1u);
}

TEST_F(StoreTransactions, CommitWithoutBeginIsAnError) {
  EXPECT_THROW(store->commit(), Error);
  store->rollback();  // harmless at depth 0
}

using StoreLeases = Fixture;

TEST_F(StoreLeases, OneHolderAtATimeUntilItIsGoneOrReleased) {
  const LeaseRecord a{"host-a", 100, 10.0, 10.0}, b{"host-b", 200, 20.0, 20.0};
  auto never_gone = [](const LeaseRecord&) { return false; };
  EXPECT_FALSE(store->take_lease(exp_id, a, never_gone)) << "a free lease is taken";
  auto holder = store->take_lease(exp_id, b, never_gone);
  ASSERT_TRUE(holder) << "a held lease is refused";
  EXPECT_EQ(holder->host, "host-a");
  EXPECT_EQ(holder->pid, 100);
  EXPECT_DOUBLE_EQ(holder->started_at, 10.0);
  EXPECT_TRUE(store->renew_lease(exp_id, a, 12.0));
  EXPECT_FALSE(store->renew_lease(exp_id, b, 12.0)) << "only the holder renews";
  // The predicate sees the holder as stored, heartbeat included.
  double seen_heartbeat = 0;
  EXPECT_FALSE(store->take_lease(exp_id, b, [&](const LeaseRecord& h) {
    seen_heartbeat = h.heartbeat_at;
    return true;  // gone: taken over
  }));
  EXPECT_DOUBLE_EQ(seen_heartbeat, 12.0);
  EXPECT_FALSE(store->renew_lease(exp_id, a, 13.0)) << "a lease taken over is not renewed by its old holder";
  store->release_lease(exp_id, a);  // not the holder: nothing happens
  ASSERT_TRUE(store->take_lease(exp_id, a, never_gone));
  store->release_lease(exp_id, b);
  EXPECT_FALSE(store->take_lease(exp_id, a, never_gone)) << "a released lease is free";
}

TEST_F(StoreLeases, TheSameHostAndPidWithAnotherStartIsAnotherDriver) {
  const LeaseRecord first{"h", 7, 1.0, 1.0}, again{"h", 7, 2.0, 2.0};  // pid reused
  EXPECT_FALSE(store->take_lease(exp_id, first, [](const LeaseRecord&) { return false; }));
  EXPECT_TRUE(store->take_lease(exp_id, again, [](const LeaseRecord&) { return false; }));
  EXPECT_FALSE(store->renew_lease(exp_id, again, 3.0));
}

TEST_F(StoreLeases, LeasesOfExperimentsAreIndependent) {
  const int64_t other = store->create_experiment(experiment("other"));
  auto never_gone = [](const LeaseRecord&) { return false; };
  EXPECT_FALSE(store->take_lease(exp_id, {"h", 1, 1, 1}, never_gone));
  EXPECT_FALSE(store->take_lease(other, {"h", 2, 1, 1}, never_gone));
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

// trial_folder_name is "trial_%05lld" (the oracle: snprintf) without printf.
TEST(StoreNames, TrialFolderNamesAreThoseOfPrintf) {
  const std::vector<int64_t> indices = {0,         1,          9,      10,     99,     9999,   10000,  12345,
                                        99999,     100000,     123456, -1,     -3,     -12345, -123456,
                                        INT64_MAX, INT64_MIN + 1};
  std::vector<int64_t> all = indices;
  for (int64_t i = 0; i < 2000; ++i) all.push_back(i * 997);
  for (int64_t index : all) {
    char expected[40];
    std::snprintf(expected, sizeof expected, "trial_%05lld", static_cast<long long>(index));
    EXPECT_EQ(trial_folder_name(index), expected) << index;
  }
}

}  // namespace
}  // namespace tune
