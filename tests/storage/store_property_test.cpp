// Store: arbitrary configs round-trip; the driver's write rates are met.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <chrono>
#include <cmath>
#include <map>

#include "storage/store.h"
#include "test_util.h"

namespace tune {
namespace {

using tune::testing::TempDir;

rc::Gen<std::string> gen_text() {
  return rc::gen::oneOf(rc::gen::container<std::string>(rc::gen::inRange<char>(32, 127)),
                        rc::gen::element<std::string>("", "a.b", "ünïcødé", "日本", "tab\there",
                                                      "quote\"s", "new\nline"));
}

rc::Gen<Json> gen_leaf() {
  return rc::gen::oneOf(
      rc::gen::map(rc::gen::arbitrary<int64_t>(), [](int64_t v) { return Json(v); }),
      rc::gen::map(rc::gen::suchThat(rc::gen::arbitrary<double>(),
                                     [](double v) { return std::isfinite(v); }),
                   [](double v) { return Json(v); }),
      rc::gen::map(gen_text(), [](std::string v) { return Json(v); }),
      rc::gen::map(rc::gen::arbitrary<bool>(), [](bool v) { return Json(v); }));
}

rc::Gen<Json> gen_object(int depth) {
  rc::Gen<Json> value =
      depth == 0 ? gen_leaf() : rc::gen::oneOf(gen_leaf(), gen_leaf(), gen_object(depth - 1));
  // Scaled down: at full size, three levels of 100 keys would be 10^6 leaves;
  // at 0.2, up to 20 keys a level (more than one statement of params rows).
  return rc::gen::map(
      rc::gen::scale(0.2, rc::gen::container<std::map<std::string, Json>>(gen_text(), value)),
      [](const std::map<std::string, Json>& m) { return Json(m); });
}

// The params rows a config should give: each leaf under its dotted name, the
// first one where names collide after flattening (keys containing '.').
void expected_params(const Json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object() && !it->empty()) {
      expected_params(*it, name, out);
    } else {
      out.emplace(name, dump_json(*it));
    }
  }
}

TEST(StoreProperty, ArbitraryConfigsRoundTripThroughAddTrial) {
  TempDir tmp;
  auto store = Store::open(tmp.path());
  int64_t exp = store->create_experiment(ExperimentRecord{0, "exp"});
  int64_t next_index = 0;
  SQLite::Database raw(Store::database_path(tmp.path()));
  SQLite::Statement params(raw, "SELECT name, value_json FROM params WHERE trial_id = ?");
  size_t most = 0;

  bool ok = rc::check("config survives add_trial/trials()", [&] {
    Json config = *gen_object(3);
    int64_t index = next_index++;
    int64_t id = store->add_trial(exp, index, config);
    // trial() re-reads the row: loading every trial each case would be quadratic.
    auto trial = store->trial(exp, index);
    RC_ASSERT(trial.has_value());
    RC_ASSERT(trial->id == id);
    RC_ASSERT(trial->config == config);

    // Every leaf, in statements of several rows: the same rows as one at a time.
    params.reset();
    params.bind(1, id);
    std::map<std::string, std::string> rows, expected;
    while (params.executeStep()) rows[params.getColumn(0).getString()] = params.getColumn(1).getString();
    expected_params(config, "", expected);
    RC_ASSERT(rows == expected);
    most = std::max(most, rows.size());
  });
  EXPECT_TRUE(ok);
  EXPECT_GT(most, 16u) << "no config took more than two statements of params: the test did not test";
}

// The driver commits trial lifecycles and batches of results in transactions;
// every row must be there afterwards. (Speed is measured in bench/, not here.)
TEST(StoreBatches, EveryBatchedResultAndTrialLifecycleIsStored) {
  TempDir tmp;
  auto store = Store::open(tmp.path());
  int64_t exp = store->create_experiment(ExperimentRecord{0, "exp"});
  const int kTrials = 500;
  for (int i = 0; i < kTrials; ++i) {
    Transaction txn(*store);
    int64_t t = store->add_trial(exp, i, {{"lr", 0.01}, {"model", {{"layers", i % 4}}}});
    store->set_trial_status(t, kRunning, i);
    store->add_result(t, 1, 0, {{"loss", 1.0 / (i + 1)}}, i);
    store->set_trial_status(t, kTerminated, i);
    txn.commit();
  }
  int64_t trial = store->add_trial(exp, kTrials, Json::object());
  const int kResults = 5000, kBatch = 500;
  for (int b = 0; b < kResults / kBatch; ++b) {
    Transaction txn(*store);
    for (int i = 0; i < kBatch; ++i) {
      int it = b * kBatch + i;
      store->add_result(trial, it, 0, {{"loss", 1.0 / (it + 1)}}, it);
    }
    txn.commit();
  }
  auto trials = store->trials(exp);
  ASSERT_EQ(trials.size(), static_cast<size_t>(kTrials + 1));
  for (int i = 0; i < kTrials; ++i) {
    EXPECT_EQ(trials[i].status, kTerminated);
    EXPECT_EQ(trials[i].last_iteration, 1);
  }
  auto results = store->results(trial);
  ASSERT_EQ(results.size(), static_cast<size_t>(kResults));
  EXPECT_EQ(results.back().iteration, kResults - 1);
}

}  // namespace
}  // namespace tune
