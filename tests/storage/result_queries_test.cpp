// Store's whole-experiment reads: result_columns (and its JSON scanner),
// for_each_result and events.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cmath>
#include <limits>

#include "storage/internal/json_scan.h"
#include "storage/store.h"
#include "test_util.h"

namespace tune {
namespace {

using storage_internal::scan_numbers;
using tune::testing::TempDir;

struct TwoExperiments {
  TempDir dir;
  std::unique_ptr<Store> store = Store::open(dir.path());
  int64_t a = store->create_experiment(ExperimentRecord{0, "a"});
  int64_t b = store->create_experiment(ExperimentRecord{0, "b"});
};

TEST(ResultColumns, ReadsTheKeysOfEveryResultByTrialThenAsReported) {
  TwoExperiments s;
  int64_t t0 = s.store->add_trial(s.a, 0, {{"x", 1}});
  int64_t t1 = s.store->add_trial(s.a, 1, {{"x", 2}});
  int64_t other = s.store->add_trial(s.b, 0, {{"x", 3}});
  s.store->add_result(t1, 1, 1, {{"loss", 0.5}, {"acc", "high"}}, 10);
  s.store->add_result(t0, 1, 1, {{"loss", 2.0}}, 11);
  s.store->add_result(other, 1, 1, {{"loss", 9.0}}, 12);
  s.store->add_result(t0, 2, 1, {{"loss", nullptr}, {"acc", 0.75}}, 13);
  s.store->add_result(t0, 1, 2, {{"loss", 1.5}, {"nested", {{"loss", 7}}}}, 14);  // a retry repeats iteration 1

  ResultColumns c = s.store->result_columns(s.a, {"loss", "acc", "missing"});
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c.trial_id, (std::vector<int64_t>{t0, t0, t0, t1}));
  EXPECT_EQ(c.iteration, (std::vector<int64_t>{1, 2, 1, 1}));
  EXPECT_EQ(c.attempt, (std::vector<int>{1, 1, 2, 1}));
  EXPECT_EQ(c.time, (std::vector<double>{11, 13, 14, 10}));
  EXPECT_EQ(c.values[0][0], 2.0);
  EXPECT_TRUE(std::isnan(c.values[0][1]));  // null: a NaN metric
  EXPECT_EQ(c.values[0][2], 1.5);           // the top-level key, not nested.loss
  EXPECT_EQ(c.values[0][3], 0.5);
  EXPECT_TRUE(std::isnan(c.values[1][0]));
  EXPECT_EQ(c.values[1][1], 0.75);
  EXPECT_TRUE(std::isnan(c.values[1][3]));  // a string
  for (double v : c.values[2]) EXPECT_TRUE(std::isnan(v));
}

TEST(ResultColumns, ReadsKeysWithEscapesThroughTheFullParser) {
  TwoExperiments s;
  int64_t t = s.store->add_trial(s.a, 0, Json::object());
  s.store->add_result(t, 1, 1, {{"we\"ird", 3.0}, {"loss", 1.0}}, 1);
  ResultColumns c = s.store->result_columns(s.a, {"we\"ird", "loss"});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c.values[0][0], 3.0);
  EXPECT_EQ(c.values[1][0], 1.0);
}

TEST(ForEachResult, VisitsEveryResultOfTheExperimentOnly) {
  TwoExperiments s;
  int64_t t0 = s.store->add_trial(s.a, 0, Json::object());
  int64_t other = s.store->add_trial(s.b, 0, Json::object());
  for (int i = 1; i <= 3; ++i) s.store->add_result(t0, i, 1, {{"loss", i * 1.0}}, i);
  s.store->add_result(other, 1, 1, {{"loss", 5.0}}, 9);
  std::vector<double> seen;
  s.store->for_each_result(s.a, [&](const ResultRecord& r) {
    EXPECT_EQ(r.trial_id, t0);
    seen.push_back(r.metrics["loss"].get<double>());
  });
  EXPECT_EQ(seen, (std::vector<double>{1, 2, 3}));
}

TEST(Events, AreReadBackInOrderWithTheirDetail) {
  TwoExperiments s;
  int64_t t = s.store->add_trial(s.a, 0, Json::object());
  s.store->add_event(s.a, t, "trial_retry", {{"attempt", 1}}, 5);
  s.store->add_event(s.b, std::nullopt, "finished", Json::object(), 6);
  s.store->add_event(s.a, std::nullopt, "finished", nullptr, 7);
  auto events = s.store->events(s.a);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, "trial_retry");
  EXPECT_EQ(events[0].trial_id, t);
  EXPECT_EQ(events[0].detail["attempt"], 1);
  EXPECT_EQ(events[0].time, 5);
  EXPECT_EQ(events[1].kind, "finished");
  EXPECT_FALSE(events[1].trial_id.has_value());
  EXPECT_TRUE(events[1].detail.is_null());
}

TEST(ScanNumbers, RefusesWhatIsNotOneObject) {
  double out[1];
  const std::vector<std::string> keys = {"a"};
  for (const char* bad : {"", "[1]", "{\"a\":1", "{\"a\" 1}", "{\"a\":1}x", "{\"a\":tru}", "{\"a\":\"x}", "{\"a\":1,}"}) {
    EXPECT_FALSE(scan_numbers(bad, keys, out)) << bad;
  }
  EXPECT_TRUE(scan_numbers(" { } ", keys, out));
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(scan_numbers("{\"b\":[1,{\"a\":2},\"]\"],\"a\":-1.5e-3}", keys, out));
  EXPECT_EQ(out[0], -1.5e-3);
}

// Every metrics object nlohmann writes: the scanner either agrees with the
// full parser on every key or hands the row to it.
TEST(ScanNumbers, AgreesWithTheFullParser) {
  const auto gen_key = rc::gen::element<std::string>("loss", "acc", "a\"b", "", "x y", "ü", "time_total_s");
  const auto gen_value = rc::gen::oneOf(
      rc::gen::map(rc::gen::arbitrary<double>(), [](double v) { return Json(v); }),
      rc::gen::map(rc::gen::arbitrary<int64_t>(), [](int64_t v) { return Json(v); }),
      rc::gen::map(rc::gen::arbitrary<std::string>(), [](std::string v) { return Json(v); }),
      rc::gen::just(Json(nullptr)), rc::gen::just(Json(true)),
      rc::gen::just(Json::parse(R"({"loss": [1, "}", {"a": 2}]})")));
  const bool ok = rc::check([&] {
    const auto entries = *rc::gen::container<std::vector<std::pair<std::string, Json>>>(rc::gen::pair(gen_key, gen_value));
    Json object = Json::object();
    for (const auto& [k, v] : entries) object[k] = v;
    const std::string text = object.dump(-1, ' ', false, Json::error_handler_t::replace);
    const std::vector<std::string> keys = {"loss", "acc", "time_total_s", "absent"};
    double out[4];
    if (!scan_numbers(text, keys, out)) {
      RC_ASSERT(text.find('\\') != std::string::npos);  // only escapes send a row to the parser
      return;
    }
    const Json parsed = Json::parse(text);
    for (size_t k = 0; k < keys.size(); ++k) {
      const auto it = parsed.find(keys[k]);
      if (it != parsed.end() && it->is_number()) {
        RC_ASSERT(out[k] == it->get<double>());
      } else {
        RC_ASSERT(std::isnan(out[k]));
      }
    }
  });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace tune
