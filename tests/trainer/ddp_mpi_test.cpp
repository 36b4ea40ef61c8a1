// Data-parallel training over real MPI ranks (ddp_check under mpirun), and
// the example trainables end to end through the tune CLI.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "test_util.h"
#include "trainer/torch/datasets.h"
#include "trainer/torch/predict.h"

namespace {

using tune::testing::run_command;
using tune::testing::run_tune;
using tune::testing::TempDir;

std::string mpirun(int ranks) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --allow-run-as-root --oversubscribe "
         "--bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none -np " +
         std::to_string(ranks) + " " + DDP_CHECK_BINARY + " ";
}

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v;
  float f;
  while (in.read(reinterpret_cast<char*>(&f), 4)) v.push_back(f);
  return v;
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(double(a[i]) - b[i]));
  return d;
}

void run_ok(const std::string& command) {
  auto r = run_command(command);
  ASSERT_EQ(r.exit_code, 0) << command << "\n" << r.out << r.err;
}

struct EquivalenceCase {
  bool overlap;
  int bucket_bytes;
  bool shared_memory;
  int expected_buckets;
  int ranks = 2;
};

class Equivalence : public ::testing::TestWithParam<EquivalenceCase> {};

TEST_P(Equivalence, TwoRanksWithBatchBMatchOneRankWithBatchTwoB) {
  TempDir dir;
  const auto c = GetParam();
  const std::string tail = " 6 " + std::string(c.overlap ? "1 " : "0 ") + std::to_string(c.bucket_bytes) +
                           (c.shared_memory ? " 1" : " 0");
  // R ranks with batch 8 each see, step by step, the samples one rank sees
  // with batch 8 R (DistributedSampler interleaves the ranks).
  run_ok(mpirun(c.ranks) + "equivalence " + dir.file("two") + " 8" + tail);
  run_ok(mpirun(1) + "equivalence " + dir.file("one") + " " + std::to_string(8 * c.ranks) + tail);
  auto two = read_floats(dir.file("two")), one = read_floats(dir.file("one"));
  ASSERT_FALSE(one.empty());
  EXPECT_LT(max_difference(two, one), 2e-5);
  // Rank 0's initial weights were used by both, and training moved them.
  EXPECT_EQ(max_difference(read_floats(dir.file("two.initial")), read_floats(dir.file("one.initial"))), 0.0);
  EXPECT_GT(max_difference(one, read_floats(dir.file("one.initial"))), 1e-3);
  int buckets = 0, shared = -1, kept = -1;
  std::ifstream(dir.file("two.buckets")) >> buckets >> shared >> kept;
  EXPECT_EQ(buckets, c.expected_buckets);
  EXPECT_EQ(shared, c.shared_memory ? 1 : 0);  // every rank on this node: the window is used when asked
  EXPECT_EQ(kept, 1);  // gradients stay as they were after their GradientSync is gone
}

// MlpNet(12, {32, 16}, 3): 6 tensors, 1,011 floats; in reverse order
// {3, 48, 16} | {512} | {32} | {384} with 512-byte (128-float) buckets;
// 1 MiB holds them all. The shared window ignores buckets (one reduce of
// the whole gradient after backward); 3 ranks take its general path (2 ranks
// have their own pass), 1,011 floats split unevenly.
INSTANTIATE_TEST_SUITE_P(Buckets, Equivalence,
                         ::testing::Values(EquivalenceCase{true, 512, true, 1}, EquivalenceCase{true, 512, false, 4},
                                           EquivalenceCase{false, 512, false, 4}, EquivalenceCase{false, 512, true, 1},
                                           EquivalenceCase{true, 1 << 20, true, 1}, EquivalenceCase{true, 512, true, 1, 3},
                                           EquivalenceCase{true, 512, false, 4, 3}),
                         [](const ::testing::TestParamInfo<EquivalenceCase>& info) {
                           const auto& c = info.param;
                           return std::string(c.shared_memory ? "SharedMemory" : "MpiIallreduce") +
                                  (c.overlap ? "Overlapped" : "AfterBackward") + std::to_string(c.bucket_bytes) + "ByteBuckets" +
                                  (c.ranks == 2 ? "" : std::to_string(c.ranks) + "Ranks");
                         });

TEST(Checkpoint, TwoEpochsThenRestoreInAFreshGroupPlusOneEqualsThreeEpochs) {
  TempDir dir;
  run_ok(mpirun(2) + "train " + dir.file("full") + " 3 - -");
  run_ok(mpirun(2) + "train " + dir.file("part") + " 2 " + dir.file("ckpt") + " -");
  ASSERT_TRUE(std::filesystem::exists(dir.file("ckpt/model.pt")));
  ASSERT_TRUE(std::filesystem::exists(dir.file("ckpt/optimizer.pt")));
  run_ok(mpirun(2) + "train " + dir.file("resumed") + " 3 - " + dir.file("ckpt"));
  auto full = read_floats(dir.file("full")), resumed = read_floats(dir.file("resumed"));
  EXPECT_LT(max_difference(full, resumed), 1e-6);
  EXPECT_GT(max_difference(full, read_floats(dir.file("part"))), 1e-4);  // the third epoch did something
}

// ---- through the CLI --------------------------------------------------------

nlohmann::json json_of(const std::string& text) { return nlohmann::json::parse(text); }

std::string taxi_sweep(const std::string& name, const std::string& extra, int max_failures) {
  return "name: " + name + R"(
trainable: taxi_tip
metric: val_loss
mode: min
num_samples: 2
resources: {workers: 2}
search: {seed: 4}
stop: {training_iteration: 3}
param_space:
  lr: {loguniform: [0.003, 0.03]}
  optimizer: adam
  samples: 400
  val_size: 200
  batch_size: 32
  epochs: 3
)" + extra + "checkpoint: {num_to_keep: 3}\nfailure: {max_failures: " +
         std::to_string(max_failures) + "}\n";
}

TEST(TrainerCli, RankThatThrowsEndsItsGroupAndTheRetryRestoresTheSameTraining) {
  TempDir dir;
  const std::string query = " --storage " + dir.file("store"), store = query + " --quiet --slots 2";
  ASSERT_EQ(run_tune("run " + dir.write("a.yaml", taxi_sweep("clean", "", 0)) + store).exit_code, 0);
  auto flaky = run_tune("run " + dir.write("b.yaml", taxi_sweep("flaky", "  fail_rank: 1\n  fail_epoch: 2\n", 1)) + store);
  ASSERT_EQ(flaky.exit_code, 0) << flaky.err;
  auto clean = json_of(run_tune("trials clean --json" + query).out);
  auto retried = json_of(run_tune("trials flaky --json" + query).out);
  ASSERT_EQ(clean.size(), 2u);
  ASSERT_EQ(retried.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(retried[i]["status"], "TERMINATED") << retried[i].dump();
    EXPECT_EQ(retried[i]["attempts"], 2) << retried[i].dump();
    EXPECT_EQ(retried[i]["last_result"]["epoch"], 3);
    // Epoch 3 ran in a fresh group from the epoch-2 checkpoint: same numbers.
    EXPECT_NEAR(retried[i]["last_result"]["val_loss"].get<double>(), clean[i]["last_result"]["val_loss"].get<double>(),
                1e-6);
  }
  // Without retries the trial ends ERROR and the sweep still finishes.
  auto failing = run_tune("run " + dir.write("c.yaml", taxi_sweep("failing", "  fail_rank: 1\n  fail_epoch: 1\n", 0)) + store);
  EXPECT_EQ(failing.exit_code, 1);  // every trial errored
  auto errored = json_of(run_tune("trials failing --json" + query).out);
  ASSERT_EQ(errored.size(), 2u);
  for (const auto& t : errored) {
    EXPECT_EQ(t["status"], "ERROR");
    EXPECT_EQ(t["last_result"]["epoch"], 1);
  }
}

TEST(TrainerCli, CosineScheduleAnnealsTheLearningRateAndBadTrainingOptionsFailInOneLine) {
  TempDir dir;
  const std::string query = " --storage " + dir.file("store"), store = query + " --quiet --slots 2";
  ASSERT_EQ(run_tune("run " + dir.write("a.yaml", taxi_sweep("cosine", "  lr_schedule: cosine\n", 0)) + store).exit_code, 0);
  ASSERT_EQ(run_tune("run " + dir.write("b.yaml", taxi_sweep("constant", "", 0)) + store).exit_code, 0);
  auto cosine = json_of(run_tune("results cosine --json" + query).out);
  auto constant = json_of(run_tune("results constant --json" + query).out);
  ASSERT_EQ(cosine.size(), 6u);  // 2 trials x 3 epochs
  ASSERT_EQ(constant.size(), 6u);
  std::map<int, std::vector<double>> rates;  // per trial, by epoch: lr at the epoch's last step / base lr
  for (const auto& r : cosine) {
    rates[r["trial_index"].get<int>()].push_back(r["lr"].get<double>() / r["config/lr"].get<double>());
  }
  ASSERT_EQ(rates.size(), 2u);
  for (const auto& [trial, by_epoch] : rates) {
    ASSERT_EQ(by_epoch.size(), 3u) << trial;
    // 7 steps per epoch (400 rows over 2 ranks, batch 32): after step 6 of
    // epoch e the factor is (1 + cos(pi * (e + 6/7) / 3)) / 2.
    for (int e = 0; e < 3; ++e) EXPECT_NEAR(by_epoch[e], 0.5 * (1 + std::cos(M_PI * (e + 6.0 / 7) / 3)), 1e-9) << trial;
  }
  for (const auto& r : constant) EXPECT_DOUBLE_EQ(r["lr"].get<double>(), r["config/lr"].get<double>());

  // Unknown values end the trial with a one-line error; the sweep finishes.
  auto bad = run_tune("run " + dir.write("c.yaml", taxi_sweep("bad", "  lr_schedule: linear\n", 0)) + store);
  EXPECT_EQ(bad.exit_code, 1);
  auto flip = run_tune("run " + dir.write("d.yaml", taxi_sweep("flip", "  augment: flip\n", 0)) + store);
  EXPECT_EQ(flip.exit_code, 1);
  for (const auto& [name, message] :
       std::vector<std::pair<std::string, std::string>>{{"bad", "config 'lr_schedule' must be constant or cosine, got 'linear'"},
                                                        {"flip", "config 'augment: flip' needs image features (N x C x H x W)"}}) {
    for (const auto& t : json_of(run_tune("trials " + name + " --json" + query).out)) {
      EXPECT_EQ(t["status"], "ERROR");
      EXPECT_NE(t["error"].get<std::string>().find(message), std::string::npos) << t["error"];
      EXPECT_EQ(t["error"].get<std::string>().find('\n'), std::string::npos) << t["error"];
    }
  }
}

TEST(TrainerCli, PredictUsesTheBestCheckpointAndGivesTheSameRowsOnOneAndTwoRanks) {
  TempDir dir;
  const std::string store = dir.file("store");
  ASSERT_EQ(run_tune("run " + dir.write("a.yaml", taxi_sweep("taxi", "", 0)) + " --storage " + store + " --quiet --slots 2")
                .exit_code,
            0);
  tune::data::Dataset trips = tune::data::generate_taxi_trips(257, 99);
  tune::data::write_csv(dir.file("trips.csv"), trips, tune::data::taxi_feature_names(), "is_big_tip");
  const std::string common = "predict taxi --storage " + store + " --input " + dir.file("trips.csv");
  auto one = run_tune(common + " --output " + dir.file("one.csv"));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto two = run_tune(common + " --output " + dir.file("two.csv") + " --workers 2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  EXPECT_EQ(read(dir.file("one.csv")), read(dir.file("two.csv")));
  EXPECT_NE(two.out.find("on 2 rank(s)"), std::string::npos) << two.out;

  // The C++ API picks the same checkpoint: its predictions match the CSV.
  auto best = tune::torch_dp::load_best_model(store, "taxi");
  EXPECT_NE(run_tune("best taxi --storage " + store).out.find(best.trial_name), std::string::npos);
  EXPECT_NE(one.out.find(best.trial_name), std::string::npos) << one.out;
  auto p = tune::torch_dp::predict(*best.model, trips.features, MPI_COMM_NULL);
  std::ifstream csv(dir.file("one.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "row,prediction,confidence,label");
  int64_t rows = 0, correct = 0;
  while (std::getline(csv, line)) {
    std::stringstream cells(line);
    std::string row, prediction;
    std::getline(cells, row, ',');
    std::getline(cells, prediction, ',');
    EXPECT_EQ(std::stoll(prediction), p.classes[rows].item<int64_t>()) << "row " << rows;
    correct += p.classes[rows].item<int64_t>() == trips.labels[rows].item<int64_t>();
    ++rows;
  }
  EXPECT_EQ(rows, 257);
  char accuracy[64];
  std::snprintf(accuracy, sizeof accuracy, "accuracy %.4f (%lld/257)", correct / 257.0, static_cast<long long>(correct));
  EXPECT_NE(one.out.find(accuracy), std::string::npos) << one.out;
  EXPECT_GT(correct / 257.0, 0.6);  // learned something (majority class is ~50-60%)
}

// `tune predict --workers 2` runs its ranks under mpirun in a process group of
// their own: a SIGTERM (or Ctrl-C, SIGHUP) that ends `tune predict` is passed
// on to them, so nothing goes on predicting into the output behind the
// user's back (before: exit 143, and the ranks finished 4,000,000 rows later).
TEST(TrainerCli, AStoppedPredictLeavesNoRankRunning) {
  TempDir dir;
  const std::string store = dir.file("store");
  ASSERT_EQ(run_tune("run " + dir.write("a.yaml", taxi_sweep("taxi", "", 0)) + " --storage " + store + " --quiet --slots 2")
                .exit_code,
            0);
  const std::string output = dir.file("stopped_predictions.csv");  // names its processes: pgrep -f
  run_command("(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + std::string(TUNE_BINARY) +
              " predict taxi --storage " + store + " --input taxi-trips:4000000 --output " + output +
              " --workers 2 & echo $! > " + dir.file("pid.tmp") + " && mv " + dir.file("pid.tmp") + " " +
              dir.file("pid") + "; wait $!; echo $? > " + dir.file("rc.tmp") + " && mv " + dir.file("rc.tmp") + " " +
              dir.file("rc") + ") >/dev/null 2>&1 &");
  // The processes whose command line holds `output` ("[s]": not the shell that runs pgrep).
  const std::string pattern = "'" + dir.path() + "/[s]topped_predictions.csv'";
  auto count = [&] { return std::stoi("0" + run_command("pgrep -c -f " + pattern).out); };
  int pid = 0;
  for (int i = 0; i < 400 && (pid == 0 || count() < 4); ++i) {  // tune, mpirun and two ranks
    std::ifstream(dir.file("pid")) >> pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GT(pid, 0);
  ASSERT_GE(count(), 4) << "the ranks did not start within 20 s";
  run_command("kill -TERM " + std::to_string(pid));
  int rc = -1;
  for (int i = 0; i < 400 && rc < 0; ++i) {
    std::ifstream(dir.file("rc")) >> rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(rc, 130) << "tune predict ends as interrupted";
  int left = count();
  for (int i = 0; i < 100 && left > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = count();
  }
  EXPECT_EQ(left, 0) << run_command("pgrep -af " + pattern).out;
}

TEST(TrainerCli, PredictReportsAMissingExperimentOrInputInOneLine) {
  TempDir dir;
  auto r = run_tune("predict nope --storage " + dir.file("store") + " --input x.csv --output y.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no tune store"), std::string::npos) << r.err;
  auto missing = run_tune("predict nope --output y.csv");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--input is required"), std::string::npos) << missing.err;
  auto batch = run_tune("predict nope --input x.csv --output y.csv --batch-size 0");
  EXPECT_EQ(batch.exit_code, 2);
  EXPECT_NE(batch.err.find("--batch-size must be >= 1"), std::string::npos) << batch.err;
  EXPECT_EQ(std::count(batch.err.begin(), batch.err.end(), '\n'), 1) << batch.err;
}

}  // namespace
