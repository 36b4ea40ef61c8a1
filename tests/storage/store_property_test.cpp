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
  // Scaled down: at full size, three levels of 100 keys would be 10^6 leaves.
  return rc::gen::map(
      rc::gen::scale(0.08, rc::gen::container<std::map<std::string, Json>>(gen_text(), value)),
      [](const std::map<std::string, Json>& m) { return Json(m); });
}

int count_leaves(const Json& j) {
  int n = 0;
  for (const auto& v : j) n += (v.is_object() && !v.empty()) ? count_leaves(v) : 1;
  return n;
}

TEST(StoreProperty, ArbitraryConfigsRoundTripThroughAddTrial) {
  TempDir tmp;
  auto store = Store::open(tmp.path());
  int64_t exp = store->create_experiment(ExperimentRecord{0, "exp"});
  int64_t next_index = 0;
  SQLite::Database raw(Store::database_path(tmp.path()));
  SQLite::Statement params(raw, "SELECT count(*) FROM params WHERE trial_id = ?");

  bool ok = rc::check("config survives add_trial/trials()", [&] {
    Json config = *gen_object(3);
    int64_t index = next_index++;
    int64_t id = store->add_trial(exp, index, config);
    auto trials = store->trials(exp);
    RC_ASSERT(trials.back().trial_index == index);
    RC_ASSERT(trials.back().id == id);
    RC_ASSERT(trials.back().config == config);
    RC_ASSERT(store->trial(exp, index)->config == config);

    params.reset();
    params.bind(1, id);
    params.executeStep();
    // Keys containing '.' may collide after flattening; the first one wins.
    int rows = params.getColumn(0).getInt();
    RC_ASSERT(rows <= count_leaves(config));
    RC_ASSERT((rows == 0) == (count_leaves(config) == 0));
  });
  EXPECT_TRUE(ok);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The driver commits results in batches and walks each trial through
// add_trial / RUNNING / result / TERMINATED; both must stay well above the
// rates it needs (20,000 results/s, 1,000 trials/s).
TEST(StoreThroughput, BatchedResultsAndTrialLifecyclesMeetTheDriversRates) {
  TempDir tmp;
  auto store = Store::open(tmp.path());
  int64_t exp = store->create_experiment(ExperimentRecord{0, "exp"});

  const int kTrials = 2000;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kTrials; ++i) {
    Transaction txn(*store);
    int64_t t = store->add_trial(exp, i, {{"lr", 0.01}, {"model", {{"layers", i % 4}}}});
    store->set_trial_status(t, kRunning, i);
    store->add_result(t, 1, 0, {{"loss", 1.0 / (i + 1)}}, i);
    store->set_trial_status(t, kTerminated, i);
    txn.commit();
  }
  double trials_per_s = kTrials / seconds_since(start);

  int64_t trial = store->add_trial(exp, kTrials, Json::object());
  const int kResults = 50000, kBatch = 500;
  start = std::chrono::steady_clock::now();
  for (int b = 0; b < kResults / kBatch; ++b) {
    Transaction txn(*store);
    for (int i = 0; i < kBatch; ++i) {
      int it = b * kBatch + i;
      store->add_result(trial, it, 0, {{"loss", 1.0 / (it + 1)}, {"acc", 0.5}, {"lr", 1e-3}}, it);
    }
    txn.commit();
  }
  double results_per_s = kResults / seconds_since(start);

  RecordProperty("trials_per_s", std::to_string(static_cast<int>(trials_per_s)));
  RecordProperty("results_per_s", std::to_string(static_cast<int>(results_per_s)));
  std::printf("store throughput: %.0f trials/s (one commit each), %.0f results/s (batches of %d)\n",
              trials_per_s, results_per_s, kBatch);
  EXPECT_GE(trials_per_s, 1000);
  EXPECT_GE(results_per_s, 20000);
  EXPECT_EQ(store->results(trial).size(), static_cast<size_t>(kResults));
}

}  // namespace
}  // namespace tune
