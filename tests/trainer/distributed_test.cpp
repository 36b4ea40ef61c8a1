// Single-process tests of the data-parallel helpers: sampling, metrics,
// checkpoints, data readers and models. Multi-rank behaviour: ddp_mpi_test.cpp.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <malloc.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "base/error.h"
#include "test_util.h"
#include "trainer/torch/datasets.h"
#include "trainer/torch/distributed.h"
#include "trainer/torch/models.h"
#include "trainer/torch/predict.h"

namespace {

using namespace tune::torch_dp;
using tune::testing::TempDir;

RC_GTEST_PROP(DistributedSampler, ShardsCoverEveryIndexAndRepeatOnlyThePadding, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(0, 400);
  const int size = *rc::gen::inRange(1, 6);
  const int64_t epoch = *rc::gen::inRange<int64_t>(0, 50);
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  std::map<int64_t, int> seen;
  const int64_t per_rank = (n + size - 1) / size;
  for (int r = 0; r < size; ++r) {
    auto shard = shard_indices(n, r, size, epoch, seed);
    RC_ASSERT(static_cast<int64_t>(shard.size()) == (n == 0 ? 0 : per_rank));
    for (auto i : shard) {
      RC_ASSERT(i >= 0 && i < n);
      ++seen[i];
    }
  }
  RC_ASSERT(static_cast<int64_t>(seen.size()) == n);  // covering
  int64_t repeats = 0;
  // The padding wraps around the shuffled order (as PyTorch's sampler does):
  // with fewer samples than ranks a sample can come more than twice.
  const int64_t most = n == 0 ? 0 : (per_rank * size + n - 1) / n;
  for (auto& [index, count] : seen) {
    RC_ASSERT(count <= most);
    repeats += count - 1;
  }
  RC_ASSERT(repeats == (n == 0 ? 0 : per_rank * size - n));  // only the padding repeats
}

RC_GTEST_PROP(DistributedSampler, DropLastGivesDisjointEqualShards, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(0, 400);
  const int size = *rc::gen::inRange(1, 6);
  std::set<int64_t> seen;
  for (int r = 0; r < size; ++r) {
    DistributedSampler sampler(n, r, size, 9, true, /*drop_last=*/true);
    sampler.set_epoch(3);
    auto shard = sampler.indices();
    RC_ASSERT(static_cast<int64_t>(shard.size()) == n / size);
    for (auto i : shard) RC_ASSERT(seen.insert(i).second);  // disjoint
  }
}

TEST(DistributedSampler, UnshuffledShardsMatchPyTorchsPaddedLayout) {
  // torch.utils.data.DistributedSampler(range(10), num_replicas=3, shuffle=False):
  // indices padded with [0, 1], rank r takes indices[r::3].
  const std::vector<std::vector<int64_t>> expected = {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
  for (int r = 0; r < 3; ++r) EXPECT_EQ(DistributedSampler(10, r, 3, 0, /*shuffle=*/false).indices(), expected[r]);
}

TEST(DistributedSampler, ReshufflesPerEpochAndRepeatsForTheSameSeedAndEpoch) {
  DistributedSampler a(200, 1, 2, 42), b(200, 1, 2, 42), other_seed(200, 1, 2, 43);
  a.set_epoch(0);
  b.set_epoch(0);
  EXPECT_EQ(a.indices(), b.indices());
  EXPECT_NE(a.indices(), other_seed.indices());
  auto epoch0 = a.indices();
  a.set_epoch(1);
  EXPECT_NE(a.indices(), epoch0);
  auto sorted0 = epoch0, sorted1 = a.indices();
  std::sort(sorted0.begin(), sorted0.end());
  std::sort(sorted1.begin(), sorted1.end());
  EXPECT_NE(sorted0, sorted1);  // not just a reordering: rank 1 gets other samples
}

TEST(DistributedSampler, BatchesCutTheShardWithASmallerLastBatch) {
  DistributedSampler sampler(23, 0, 2, 1);
  auto batches = sampler.batches(5);
  ASSERT_EQ(batches.size(), 3u);  // 12 indices: 5 + 5 + 2
  EXPECT_EQ(batches[2].size(0), 2);
  std::vector<int64_t> joined;
  for (auto& b : batches)
    for (int64_t i = 0; i < b.size(0); ++i) joined.push_back(b[i].item<int64_t>());
  EXPECT_EQ(joined, sampler.indices());
  EXPECT_THROW(sampler.batches(0), tune::ConfigError);
  EXPECT_THROW(DistributedSampler(10, 2, 2, 0), tune::ConfigError);
}

// 48 MiB is over glibc's largest dynamic mmap threshold (32 MiB): by default
// such a block is always mmapped and unmapped on free. After
// keep_freed_memory() it comes from the heap and stays there once freed.
TEST(Process, KeepFreedMemoryServesLargeBlocksFromTheHeapAndKeepsThem) {
  ASSERT_EQ(std::getenv("MALLOC_MMAP_THRESHOLD_"), nullptr);
  ASSERT_EQ(std::getenv("GLIBC_TUNABLES"), nullptr);
  EXPECT_TRUE(keep_freed_memory());
  EXPECT_TRUE(keep_freed_memory());  // idempotent
  constexpr size_t kBlock = size_t{48} << 20;
  const size_t mapped_before = mallinfo2().hblkhd;
  auto* block = static_cast<volatile char*>(std::malloc(kBlock));
  ASSERT_NE(block, nullptr);
  block[0] = 1;
  block[kBlock - 1] = 1;
  EXPECT_LT(mallinfo2().hblkhd, mapped_before + kBlock);
  std::free(const_cast<char*>(block));
  EXPECT_GE(mallinfo2().fordblks, kBlock);
}

// Runs this test binary again with `env` and only `test` selected: exactly
// that one test must run and pass (a renamed test fails here rather than
// passing with 0 tests run).
void expect_rerun_passes(const std::string& env, const std::string& test) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = env + " '" + self + "' --gtest_filter=" + test + " 2>&1";
  std::string out;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr) << command;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  EXPECT_EQ(::pclose(pipe), 0) << command << "\n" << out;
  EXPECT_NE(out.find("[  PASSED  ] 1 test."), std::string::npos) << command << "\n" << out;
}

// TUNE_KEEP_FREED_MEMORY=0 leaves malloc alone: the 48 MiB block is mmapped.
// The setting is read once per process, so the test re-runs this binary.
TEST(Process, KeepFreedMemoryOptOutLeavesMallocAlone) {
  if (const char* opt_out = std::getenv("TUNE_KEEP_FREED_MEMORY")) {
    ASSERT_STREQ(opt_out, "0");
    EXPECT_FALSE(keep_freed_memory());
    constexpr size_t kBlock = size_t{48} << 20;
    const size_t mapped_before = mallinfo2().hblkhd;
    void* block = std::malloc(kBlock);
    ASSERT_NE(block, nullptr);
    EXPECT_GE(mallinfo2().hblkhd, mapped_before + kBlock);
    std::free(block);
    return;
  }
  expect_rerun_passes("TUNE_KEEP_FREED_MEMORY=0", "Process.KeepFreedMemoryOptOutLeavesMallocAlone");
}

// 1e-30 * 1e-10 is subnormal (the smallest normal float is 1.2e-38). With
// flushing on it becomes 0, and so does a subnormal input (DAZ).
float subnormal_product() {
  auto tiny = torch::full({64}, 1e-30f);
  return (tiny * 1e-10f).sum().item<float>();
}

TEST(Process, FlushDenormalsMakesSubnormalResultsZero) {
  if (const char* opt_out = std::getenv("TUNE_FLUSH_DENORMALS")) {
    ASSERT_STREQ(opt_out, "0");
    EXPECT_FALSE(flush_denormals());
    EXPECT_GT(subnormal_product(), 0.0f);  // the FPU was left alone
    return;
  }
  ASSERT_GT(subnormal_product(), 0.0f);  // this process starts without flushing
  ASSERT_TRUE(flush_denormals());
  EXPECT_EQ(subnormal_product(), 0.0f);
  EXPECT_EQ((torch::full({4}, 1e-39f) * 1.0f).sum().item<float>(), 0.0f);
  // Normal values are untouched.
  EXPECT_FLOAT_EQ((torch::full({4}, 1e-20f) * 1e-10f).sum().item<float>(), 4e-30f);
  torch::globalContext().setFlushDenormal(false);  // the next tests run on this thread
  EXPECT_GT(subnormal_product(), 0.0f);
  // TUNE_FLUSH_DENORMALS=0 opts out: this binary again, in that mode.
  expect_rerun_passes("TUNE_FLUSH_DENORMALS=0", "Process.FlushDenormalsMakesSubnormalResultsZero");
}

TEST(Process, BlasLibraryIsTheLoadedOne) {
  // The test links libtorch, which links libblas.so.3 (Debian alternatives).
  const std::string path = blas_library();
  ASSERT_FALSE(path.empty());
  EXPECT_TRUE(std::filesystem::exists(path)) << path;
  EXPECT_NE(path.find("blas"), std::string::npos) << path;
  EXPECT_EQ(uses_reference_blas(), path.find("openblas") == std::string::npos) << path;
}

TEST(MeanMetrics, OneRankGivesSumOverCount) {
  MeanMetrics m;
  m.add("loss", 3.0, 2);
  m.add("loss", 1.0, 2);
  m.add("accuracy", 5, 10);
  auto out = m.reduce(MPI_COMM_NULL);
  EXPECT_DOUBLE_EQ(out["loss"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(out["accuracy"].get<double>(), 0.5);
}

TEST(GradientSync, IsANoOpOnOneRank) {
  torch::manual_seed(0);
  MlpNet model(4, {3}, 2, 0.0);
  auto sync = prepare_model(model, MPI_COMM_NULL);
  torch::nn::functional::cross_entropy(model.forward(torch::randn({5, 4})), torch::tensor({0, 1, 0, 1, 1})).backward();
  auto before = model.parameters()[0].grad().clone();
  sync->synchronize();
  EXPECT_TRUE(torch::equal(before, model.parameters()[0].grad()));
}

TEST(Checkpoint, RoundTripRestoresModelOptimizerAndEpoch) {
  TempDir dir;
  torch::manual_seed(0);
  MlpNet a(4, {8}, 3, 0.0), b(4, {8}, 3, 0.0);
  torch::optim::Adam opt_a(a.parameters(), 0.01), opt_b(b.parameters(), 0.01);
  auto x = torch::randn({16, 4});
  auto y = torch::randint(0, 3, {16}, torch::kLong);
  auto step = [&](MlpNet& m, torch::optim::Adam& o) {
    o.zero_grad();
    torch::nn::functional::cross_entropy(m.forward(x), y).backward();
    o.step();
  };
  step(a, opt_a);
  save_checkpoint(dir.path() + "/ck", a, &opt_a, 7, MPI_COMM_NULL, {{"note", "x"}});
  auto state = load_checkpoint(dir.path() + "/ck", b, &opt_b);
  EXPECT_EQ(state["epoch"], 7);
  EXPECT_EQ(state["note"], "x");
  step(a, opt_a);
  step(b, opt_b);  // same Adam moments: same next step
  for (size_t i = 0; i < a.parameters().size(); ++i) EXPECT_TRUE(torch::equal(a.parameters()[i], b.parameters()[i]));
  try {
    load_checkpoint(dir.path() + "/missing", b);
    FAIL() << "no exception";
  } catch (const tune::Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing/model.pt"), std::string::npos) << e.what();
  }
}

// Where the built-in trainables train: the config's `device`, else the
// rank's GPU when this libtorch has CUDA and one is visible, else the CPU.
TEST(TrainingDevice, FollowsTheConfigAndFallsBackToTheCpu) {
  using tune::Json;
  const bool cuda = torch::cuda::is_available();
  EXPECT_EQ(training_device(Json{{"device", "cpu"}}), torch::Device(torch::kCPU));
  EXPECT_EQ(training_device(Json::object()), cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU));
  EXPECT_EQ(training_device(Json{{"device", "auto"}}), training_device(Json::object()));
  if (cuda) {
    EXPECT_EQ(training_device(Json{{"device", "cuda"}}), torch::Device(torch::kCUDA, 0));
  } else {
    EXPECT_THROW(training_device(Json{{"device", "cuda"}}), tune::ConfigError);
  }
  EXPECT_THROW(training_device(Json{{"device", "tpu"}}), tune::ConfigError);
  EXPECT_THROW(training_device(Json{{"device", 3}}), tune::ConfigError);
}

TEST(Checkpoint, LoadsOntoTheGivenDevice) {
  TempDir dir;
  torch::manual_seed(1);
  MlpNet a(4, {8}, 3, 0.0), b(4, {8}, 3, 0.0);
  torch::optim::SGD opt_a(a.parameters(), 0.1), opt_b(b.parameters(), 0.1);
  save_checkpoint(dir.path() + "/ck", a, &opt_a, 2, MPI_COMM_NULL);
  EXPECT_EQ(load_checkpoint(dir.path() + "/ck", b, &opt_b, torch::Device(torch::kCPU))["epoch"], 2);
  for (size_t i = 0; i < a.parameters().size(); ++i) {
    EXPECT_TRUE(b.parameters()[i].device().is_cpu());
    EXPECT_TRUE(torch::equal(a.parameters()[i], b.parameters()[i]));
  }
}

void write_gz(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

TEST(Idx, ReadsGzippedUnsignedByteTensors) {
  TempDir dir;
  std::vector<unsigned char> bytes = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3};
  for (int i = 0; i < 12; ++i) bytes.push_back(static_cast<unsigned char>(i * 20));
  write_gz(dir.file("x-images-idx3-ubyte.gz"), bytes);
  auto t = tune::data::read_idx(dir.file("x-images-idx3-ubyte.gz"));
  ASSERT_EQ(t.sizes(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(t[1][1][2].item<int>(), 220);
  write_gz(dir.file("x-labels-idx1-ubyte.gz"), {0, 0, 8, 1, 0, 0, 0, 2, 4, 9});
  auto d = read_prediction_input("fashion_mlp", dir.file("x-images-idx3-ubyte.gz"));
  EXPECT_EQ(d.labels[1].item<int64_t>(), 9);  // labels found beside the images
  EXPECT_NEAR(d.features[1][0][1][2].item<float>(), (220 / 255.0 - 0.2860) / 0.3530, 1e-5);
  write_gz(dir.file("bad.gz"), {1, 2, 3, 4});
  EXPECT_THROW(tune::data::read_idx(dir.file("bad.gz")), tune::Error);
  write_gz(dir.file("short.gz"), {0, 0, 8, 1, 0, 0, 0, 9, 1});
  try {
    tune::data::read_idx(dir.file("short.gz"));
    FAIL();
  } catch (const tune::Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(FashionMnist, MissingFilesNameTheAptPackage) {
  TempDir dir;
  try {
    tune::data::load_fashion_mnist("train", dir.path());
    FAIL();
  } catch (const tune::Error& e) {
    EXPECT_NE(std::string(e.what()).find("apt-get install dataset-fashion-mnist"), std::string::npos) << e.what();
  }
}

TEST(FashionMnist, TestSetHasTheDocumentedShapeAndThousandImagesPerClass) {
  // Published: 10,000 test images, 28 x 28, 1,000 per class.
  auto test = tune::data::load_fashion_mnist("test");
  ASSERT_EQ(test.features.sizes(), (std::vector<int64_t>{10000, 1, 28, 28}));
  auto counts = torch::bincount(test.labels);
  ASSERT_EQ(counts.size(0), 10);
  for (int c = 0; c < 10; ++c) EXPECT_EQ(counts[c].item<int64_t>(), 1000);
}

TEST(TaxiTrips, GeneratedDataIsDeterministicAndCsvRoundTrips) {
  TempDir dir;
  auto a = tune::data::generate_taxi_trips(50, 3), b = tune::data::generate_taxi_trips(50, 3);
  EXPECT_TRUE(torch::equal(a.features, b.features));
  EXPECT_EQ(a.features.size(1), 6);
  tune::data::write_csv(dir.file("t.csv"), a, tune::data::taxi_feature_names(), "is_big_tip");
  auto back = tune::data::read_csv(dir.file("t.csv"), tune::data::taxi_feature_names(), "is_big_tip");
  EXPECT_TRUE(torch::equal(back.features, a.features));
  EXPECT_TRUE(torch::equal(back.labels, a.labels));
  const double positive = a.labels.to(torch::kDouble).mean().item<double>();
  EXPECT_GT(positive, 0.1);
  EXPECT_LT(positive, 0.9);
}

TEST(TaxiTrips, CsvErrorsCarryFileAndLine) {
  TempDir dir;
  std::string path = dir.write("bad.csv", "passenger_count,trip_distance,fare_amount,trip_duration,hour,day_of_week\n1,2,3,4,5,6\n1,x,3,4,5,6\n");
  try {
    tune::data::read_csv(path, tune::data::taxi_feature_names(), "is_big_tip");
    FAIL();
  } catch (const tune::Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:3: column 'trip_distance'"), std::string::npos) << e.what();
  }
  try {
    tune::data::read_csv(dir.write("h.csv", "a,b\n1,2\n"), tune::data::taxi_feature_names(), "is_big_tip");
    FAIL();
  } catch (const tune::Error& e) {
    EXPECT_NE(std::string(e.what()).find("h.csv:1: missing column 'passenger_count'"), std::string::npos) << e.what();
  }
}

TEST(Models, BuildFromConfigAndRejectBadValues) {
  auto cnn = make_model("fashion_cnn", {{"width", 64}});
  EXPECT_EQ(cnn->forward(torch::zeros({2, 1, 28, 28})).sizes(), (std::vector<int64_t>{2, 10}));
  auto mlp = make_model("fashion_mlp", tune::Json::object());
  int64_t parameters = 0;
  for (auto& p : mlp->parameters()) parameters += p.numel();
  EXPECT_EQ(parameters, 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);  // 784-256-128-10
  EXPECT_THROW(make_model("fashion_mlp", {{"dropout", 1.5}}), tune::ConfigError);
  EXPECT_THROW(make_model("fashion_mlp", {{"width", "wide"}}), tune::ConfigError);
  EXPECT_THROW(make_model("nope", tune::Json::object()), tune::ConfigError);
}

}  // namespace

namespace {

TEST(PredictInput, TaxiTripsGeneratesLabelledRowsAndRejectsABadCount) {
  auto d = tune::torch_dp::read_prediction_input("taxi_tip", "taxi-trips:5");
  auto expected = tune::data::generate_taxi_trips(5, 2026);
  EXPECT_TRUE(torch::equal(d.features, expected.features));
  EXPECT_TRUE(torch::equal(d.labels, expected.labels));
  EXPECT_THROW(tune::torch_dp::read_prediction_input("taxi_tip", "taxi-trips:0"), std::exception);
  EXPECT_THROW(tune::torch_dp::read_prediction_input("taxi_tip", "taxi-trips:5x"), std::exception);
  EXPECT_THROW(tune::torch_dp::read_prediction_input("mlp", "x.csv"), std::exception);
}

}  // namespace
