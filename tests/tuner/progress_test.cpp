// The progress table printed while a sweep runs.
#include "tuner/driver/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tune::internal {
namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

ProgressRow row(int64_t index, const std::string& status, nlohmann::json config, nlohmann::json result) {
  return {index, status, std::move(config), std::move(result), ""};
}

// A sweep file with more constants than columns: the sampled parameters are
// the columns, in the order given, whatever their names sort to.
TEST(Progress, ShowsTheSampledParametersNotTheConstants) {
  nlohmann::json config = {{"a1", 1}, {"a2", 2}, {"a3", 3}, {"a4", 4}, {"a5", 5},  {"a6", 6},
                           {"a7", 7}, {"a8", 8}, {"a9", 9}, {"lr", 0.01}, {"zwidth", 128}};
  std::vector<ProgressRow> rows = {row(0, "RUNNING", config, nullptr)};
  const auto out = lines(render_progress("exp", "acc", "max", rows, 1.0, 1, 2, false, {"zwidth", "lr"}));
  ASSERT_GE(out.size(), 4u);
  EXPECT_EQ(out[1].rfind("trial        status   zwidth  lr    iter  acc  time_s", 0), 0u) << out[1];
  EXPECT_EQ(out[1].find("a1"), std::string::npos);
  EXPECT_NE(out[3].find("128     0.01"), std::string::npos) << out[3];
}

TEST(Progress, FallsBackToTheConfigWhenNothingIsSampled) {
  std::vector<ProgressRow> rows = {row(0, "TERMINATED", {{"x", 1}, {"y", "b"}}, {{"acc", 0.5}})};
  const auto out = lines(render_progress("exp", "acc", "max", rows, 1.0, 0, 2, true));
  ASSERT_GE(out.size(), 4u);
  EXPECT_EQ(out[0].rfind("== exp finished == 1.0s elapsed, 0/2 slots busy | 1 TERMINATED", 0), 0u) << out[0];
  EXPECT_NE(out[1].find("x  y  iter  acc"), std::string::npos) << out[1];
}

TEST(Progress, CapsTheParameterColumns) {
  nlohmann::json config = nlohmann::json::object();
  std::vector<std::string> sampled;
  for (int i = 0; i < 15; ++i) {
    config["p" + std::to_string(10 + i)] = i;
    sampled.push_back("p" + std::to_string(10 + i));
  }
  std::vector<ProgressRow> rows = {row(0, "PENDING", config, nullptr)};
  const auto out = lines(render_progress("exp", "", "max", rows, 1.0, 0, 2, false, sampled));
  ASSERT_GE(out.size(), 2u);
  EXPECT_NE(out[1].find("p19"), std::string::npos) << out[1];
  EXPECT_EQ(out[1].find("p20"), std::string::npos) << out[1];
  EXPECT_EQ(kMaxParamColumns, 10u);
}

TEST(Progress, RunningFirstThenBestByMetricAndARowLimit) {
  std::vector<ProgressRow> rows = {row(0, "TERMINATED", {{"x", 0}}, {{"acc", 0.2}}),
                                   row(1, "TERMINATED", {{"x", 1}}, {{"acc", 0.9}}),
                                   row(2, "RUNNING", {{"x", 2}}, nullptr),
                                   row(3, "TERMINATED", {{"x", 3}}, {{"acc", 0.5}})};
  const auto out = lines(render_progress("exp", "acc", "max", rows, 1.0, 1, 2, false, {"x"}, 3));
  ASSERT_EQ(out.size(), 7u);
  EXPECT_EQ(out[3].rfind("trial_00002", 0), 0u) << out[3];
  EXPECT_EQ(out[4].rfind("trial_00001", 0), 0u) << out[4];
  EXPECT_EQ(out[5].rfind("trial_00003", 0), 0u) << out[5];
  EXPECT_EQ(out[6], "... 1 more trials");
}

}  // namespace
}  // namespace tune::internal

namespace tune::internal {
namespace {

TEST(ProgressEta, ComesFromTheMeanTrialTimeAndTheTrialsLeft) {
  EtaInput in;
  in.total_trials = 10;
  in.finished_s = {10, 20};  // mean 15
  in.running_s = {5, 20};     // lack 10 and 0
  in.concurrency = 2;
  // 6 trials not started x 15 s + 10 s, over 2 at a time.
  EXPECT_DOUBLE_EQ(*estimate_eta(in), (6 * 15.0 + 10.0) / 2);
  in.budget_left = 12;
  EXPECT_DOUBLE_EQ(*estimate_eta(in), 12.0) << "the time budget caps it";
}

TEST(ProgressEta, IsUnknownBeforeAnyTrialFinishesOrForAnUnboundedSearch) {
  EtaInput in;
  in.total_trials = 10;
  in.running_s = {3};
  EXPECT_FALSE(estimate_eta(in).has_value());
  in.finished_s = {4};
  in.total_trials = -1;
  EXPECT_FALSE(estimate_eta(in).has_value());
  in.budget_left = 30;
  EXPECT_DOUBLE_EQ(*estimate_eta(in), 30.0);
}

TEST(ProgressEta, IsShownInTheHeaderWhileRunning) {
  std::vector<ProgressRow> rows = {{0, "RUNNING", {{"x", 1}}, nullptr, ""}};
  EXPECT_NE(render_progress("exp", "loss", "min", rows, 1.0, 1, 2, false, {"x"}, 20, 75.0).find(", ETA 1m15s,"),
            std::string::npos);
  EXPECT_EQ(render_progress("exp", "loss", "min", rows, 1.0, 1, 2, true, {"x"}, 20, 75.0).find("ETA"),
            std::string::npos);
  EXPECT_EQ(format_duration(3725), "1h02m");
  EXPECT_EQ(format_duration(4.2), "4s");
}

}  // namespace
}  // namespace tune::internal
