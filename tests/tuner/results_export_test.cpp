// `tune results`: every result as a CSV or JSON row, with the config in
// effect when it was reported.
#include <gtest/gtest.h>

#include <sstream>

#include "storage/store.h"
#include "test_util.h"
#include "base/error.h"
#include "tuner/cli/results_export.h"

namespace tune {
namespace {

using tune::testing::TempDir;

// Trial 0 reports twice, then exploits trial 1 (lr 0.1 -> 0.2) and reports
// once more; trial 1 reports a NaN loss (null) and a metric named "time".
struct ExportStore {
  TempDir dir;
  std::unique_ptr<Store> store = Store::open(dir.path());

  ExportStore() {
    const int64_t id = store->create_experiment(ExperimentRecord{0, "pbt-demo", "FINISHED", "loss", "min"});
    const int64_t t0 = store->add_trial(id, 0, {{"lr", 0.1}, {"net", {{"width", 8}}}});
    const int64_t t1 = store->add_trial(id, 1, {{"lr", 0.3}, {"net", {{"width", 16}}}});
    store->add_result(t0, 1, 1, {{"loss", 2.0}, {"acc", 0.5}}, 10);
    store->add_result(t1, 1, 1, {{"loss", nullptr}, {"time", 7}}, 11);
    store->add_result(t0, 2, 1, {{"loss", 1.0}, {"acc", 0.6}, {"tag", "a,\"b\""}}, 12);
    ExploitRecord x;
    x.trial_id = t0;
    x.donor_trial_id = t1;
    x.iteration = 2;
    x.old_config = {{"lr", 0.1}, {"net", {{"width", 8}}}};
    x.new_config = {{"lr", 0.2}, {"net", {{"width", 16}}}};
    x.time = 13;
    store->add_exploit(x);
    store->set_trial_config(t0, x.new_config);
    store->add_result(t0, 3, 2, {{"loss", 0.5}, {"acc", 0.7}}, 14);
  }

  std::string run(const std::string& format, const std::string& experiment = "pbt-demo") {
    cli::QueryOptions q;
    q.storage = dir.path();
    q.experiment = experiment;
    q.format = format;
    std::ostringstream out;
    EXPECT_EQ(cli::export_results(q, out), 0);
    return out.str();
  }
};

TEST(ResultsExport, CsvHasEveryResultWithTheConfigInEffect) {
  ExportStore s;
  const std::string csv = s.run("csv");
  const std::string expected =
      "trial_index,attempt,iteration,time,loss,acc,tag,metrics/time,config/lr,config/net.width\n"
      "0,1,1,10.0,2.0,0.5,,,0.1,8\n"
      "0,1,2,12.0,1.0,0.6,\"a,\"\"b\"\"\",,0.1,8\n"
      "0,2,3,14.0,0.5,0.7,,,0.2,16\n"
      "1,1,1,11.0,,,,7,0.3,16\n";
  EXPECT_EQ(csv, expected);
}

TEST(ResultsExport, JsonRowsCarryTheSameFields) {
  ExportStore s;
  const Json rows = Json::parse(s.run("json"));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[2]["trial_index"], 0);
  EXPECT_EQ(rows[2]["attempt"], 2);
  EXPECT_EQ(rows[2]["iteration"], 3);
  EXPECT_EQ(rows[2]["loss"], 0.5);
  EXPECT_EQ(rows[2]["config/lr"], 0.2);
  EXPECT_EQ(rows[1]["config/lr"], 0.1);
  EXPECT_TRUE(rows[3]["loss"].is_null());
  EXPECT_EQ(rows[3]["metrics/time"], 7);
  EXPECT_EQ(rows[3]["time"], 11.0);
}

TEST(ResultsExport, AnExperimentWithoutResultsGivesAHeaderOrAnEmptyArray) {
  ExportStore s;
  s.store->create_experiment(ExperimentRecord{0, "empty"});
  EXPECT_EQ(s.run("csv", "empty"), "trial_index,attempt,iteration,time\n");
  EXPECT_EQ(Json::parse(s.run("json", "empty")), Json::array());
}

TEST(ResultsExport, UnknownExperimentsAndFormatsAreErrors) {
  ExportStore s;
  cli::QueryOptions q;
  q.storage = s.dir.path();
  q.experiment = "pbt-dem";
  q.format = "csv";
  std::ostringstream out;
  try {
    cli::export_results(q, out);
    FAIL() << "no error";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'pbt-demo'?"), std::string::npos) << e.what();
  }
  q.experiment = "pbt-demo";
  q.format = "table";
  EXPECT_THROW(cli::export_results(q, out), ConfigError);
}

// Issue 30, 8: a program printing {"config/x": 9} in a trial whose config
// has x lost the metric (--json kept the config's value, --csv had two
// config/x columns); a NUL in a metric went raw into the CSV.
TEST(ResultsExport, EveryMetricKeepsAColumnOfItsOwnAndNoControlByteIsRaw) {
  TempDir dir;
  auto store = Store::open(dir.path());
  const int64_t id = store->create_experiment(ExperimentRecord{0, "clash", "FINISHED", "loss", "min"});
  const int64_t t0 = store->add_trial(id, 0, {{"x", 1}});
  store->add_result(t0, 1, 1,
                    {{"loss", 0.5}, {"config/x", 9}, {"metrics/time", 3}, {"time", 4},
                     {"note", std::string("a\0b\rc", 5)}, {"lo\x01ss", 1}},
                    10);
  cli::QueryOptions q;
  q.storage = dir.path();
  q.experiment = "clash";
  q.format = "csv";
  std::ostringstream csv;
  cli::export_results(q, csv);
  EXPECT_EQ(csv.str(),
            "trial_index,attempt,iteration,time,loss,metrics/config/x,\"lo\\u0001ss\",metrics/metrics/time,note,"
            "metrics/time,config/x\n"
            "0,1,1,10.0,0.5,9,1,3,\"a\\u0000b\\rc\",4,1\n");
  EXPECT_EQ(csv.str().find('\0'), std::string::npos);
  q.format = "json";
  std::ostringstream json;
  cli::export_results(q, json);
  const Json row = Json::parse(json.str()).at(0);
  EXPECT_EQ(row["config/x"], 1) << "the config";
  EXPECT_EQ(row["metrics/config/x"], 9) << "the metric";
  EXPECT_EQ(row["metrics/metrics/time"], 3);
  EXPECT_EQ(row["metrics/time"], 4);
  EXPECT_EQ(row["time"], 10.0);
  EXPECT_EQ(row["note"], std::string("a\0b\rc", 5)) << "JSON escapes it itself";
}

}  // namespace
}  // namespace tune
