#include "trainer/torch/trainables.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <ATen/CPUGeneratorImpl.h>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "base/error.h"
#include "trainer/communicator.h"
#include "trainer/torch/distributed.h"
#include "trainer/torch/models.h"

namespace tune {

void register_mlp_trainable();          // mlp_trainable.cpp
void register_tabular_mlp_trainable();  // tabular_mlp.cpp

namespace torch_dp {
namespace {

// Worker groups are reused across trials: keep decoded datasets in memory.
const data::Dataset& cached_fashion(const std::string& split) {
  static std::mutex mutex;
  static std::map<std::string, data::Dataset> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(split);
  if (it == cache.end()) it = cache.emplace(split, data::load_fashion_mnist(split)).first;
  return it->second;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const Json& c, std::vector<torch::Tensor> parameters) {
  const std::string name = config_string(c, "optimizer", "sgd");
  const double lr = config_number(c, "lr", 0.01), weight_decay = config_number(c, "weight_decay", 0.0);
  if (!(lr > 0)) throw ConfigError("config 'lr' must be > 0");
  if (name == "sgd") {
    return std::make_unique<torch::optim::SGD>(
        parameters,
        torch::optim::SGDOptions(lr).momentum(config_number(c, "momentum", 0.9)).weight_decay(weight_decay));
  }
  if (name == "adam") {
    return std::make_unique<torch::optim::Adam>(parameters, torch::optim::AdamOptions(lr).weight_decay(weight_decay));
  }
  if (name == "adamw") {
    return std::make_unique<torch::optim::AdamW>(parameters,
                                                 torch::optim::AdamWOptions(lr).weight_decay(weight_decay));
  }
  throw ConfigError("config 'optimizer' must be sgd, adam or adamw, got '" + name + "'");
}

// Deterministic dropout per (seed, epoch, rank): a restored trial draws the
// same masks as an uninterrupted one.
void seed_epoch(int64_t seed, int64_t epoch, int rank) {
  torch::manual_seed(static_cast<uint64_t>(seed) * 1000003ULL + static_cast<uint64_t>(epoch) * 1009ULL +
                     static_cast<uint64_t>(rank));
}

double loss_sum(const torch::Tensor& output, const torch::Tensor& labels, bool regression) {
  namespace F = torch::nn::functional;
  if (regression) return F::mse_loss(output.squeeze(1), labels, F::MSELossFuncOptions(torch::kSum)).item<double>();
  return F::cross_entropy(output, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum)).item<double>();
}

torch::Tensor training_loss(const torch::Tensor& output, const torch::Tensor& labels, bool regression) {
  namespace F = torch::nn::functional;
  return regression ? F::mse_loss(output.squeeze(1), labels) : F::cross_entropy(output, labels);
}

// val_loss (cross-entropy, or squared error for regression) and, for
// classification, val_accuracy of one validation batch.
void add_validation(MeanMetrics& metrics, const torch::Tensor& output, const torch::Tensor& labels, bool regression) {
  const auto n = static_cast<double>(output.size(0));
  metrics.add("val_loss", loss_sum(output, labels, regression), n);
  if (!regression) metrics.add("val_accuracy", output.argmax(1).eq(labels).sum().item<double>(), n);
}

}  // namespace

TrainValidation example_data(const std::string& trainable, const Json& c) {
  if (trainable == "taxi_tip") {
    const int64_t n = config_int(c, "samples", 4000), val = config_int(c, "val_size", 1000);
    if (n < 1 || val < 1) throw ConfigError("config 'samples' and 'val_size' must be >= 1");
    data::Dataset all = data::generate_taxi_trips(n + val, static_cast<uint64_t>(config_int(c, "data_seed", 0)));
    return {all.slice(0, n), all.slice(n, n + val)};
  }
  // Fashion-MNIST: validation is held out of the training set by a fixed
  // permutation; the test set stays untouched for `tune predict`.
  const data::Dataset& full = cached_fashion("train");
  const int64_t val = config_int(c, "val_size", 5000);
  int64_t subset = config_int(c, "subset", 0);
  if (val < 1 || val >= full.size()) throw ConfigError("config 'val_size' must be in [1, 60000)");
  if (subset <= 0 || subset > full.size() - val) subset = full.size() - val;
  // The split copies the images (172 MB for the full set, ~0.7 s on a busy
  // core: more than an epoch of the MLP): a reused worker group keeps the
  // last two splits, so a trial that starts or resumes there trains at once.
  // Training only reads them.
  static std::mutex mutex;
  static std::vector<std::pair<std::pair<int64_t, int64_t>, TrainValidation>> recent;  // most recent first
  std::lock_guard<std::mutex> lock(mutex);
  const std::pair<int64_t, int64_t> key{val, subset};
  for (size_t i = 0; i < recent.size(); ++i) {
    if (recent[i].first != key) continue;
    std::rotate(recent.begin(), recent.begin() + static_cast<std::ptrdiff_t>(i), recent.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    return recent.front().second;
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(12345);
  torch::Tensor order = torch::randperm(full.size(), gen, torch::kLong);
  TrainValidation split{full.select(order.slice(0, val, val + subset)), full.select(order.slice(0, 0, val))};
  recent.insert(recent.begin(), {key, split});
  if (recent.size() > 2) recent.pop_back();
  return split;
}

void train_classifier(Session& session, const std::string& trainable, const TrainValidation& data,
                      const TrainOptions& options) {
  const Json& c = session.config();
  const MPI_Comm comm = communicator(session);
  const int rank = session.rank(), size = session.world_size();
  const int64_t seed = config_int(c, "seed", 0), epochs = config_int(c, "epochs", 10),
                batch = config_int(c, "batch_size", 64), fail_rank = config_int(c, "fail_rank", -1),
                fail_epoch = config_int(c, "fail_epoch", -1);
  if (batch < 1) throw ConfigError("config 'batch_size' must be >= 1");

  torch::manual_seed(static_cast<uint64_t>(seed));
  std::shared_ptr<Classifier> model = options.model ? options.model : make_model(trainable, c);
  if (auto tabular = std::dynamic_pointer_cast<TabularNet>(model)) tabular->fit_normalization(data.train.features);
  // The model lives on the device; batches move there as they are drawn.
  const torch::Device device = training_device(c);
  model->to(device);
  auto optimizer = make_optimizer(c, model->parameters());
  int64_t start_epoch = 0;
  if (session.checkpoint()) {
    start_epoch =
        load_checkpoint(session.checkpoint()->path, *model, optimizer.get(), device).value("epoch", int64_t{0});
  }
  auto sync = prepare_model(*model, comm);
  DistributedSampler sampler(data.train.size(), comm, static_cast<uint64_t>(seed));
  // lr_schedule: constant (default) or cosine, annealed step by step from
  // `lr` to 0 over `epochs` epochs. A function of (epoch, step) only, so a
  // restored trial follows the same curve as an uninterrupted one.
  const std::string schedule = config_string(c, "lr_schedule", "constant");
  if (schedule != "constant" && schedule != "cosine")
    throw ConfigError("config 'lr_schedule' must be constant or cosine, got '" + schedule + "'");
  const bool cosine = schedule == "cosine";
  const double base_lr = optimizer->param_groups().front().options().get_lr();  // the config's, as built
  // augment: none (default) or flip: a random half of each image batch is
  // mirrored left-right (images only: N x C x H x W features).
  const std::string augment = config_string(c, "augment", "none");
  if (augment != "none" && augment != "flip")
    throw ConfigError("config 'augment' must be none or flip, got '" + augment + "'");
  const bool flip = augment == "flip";
  if (flip && data.train.features.dim() != 4)
    throw ConfigError("config 'augment: flip' needs image features (N x C x H x W)");

  for (int64_t epoch = start_epoch; epoch < epochs; ++epoch) {
    if (rank == fail_rank && epoch == fail_epoch && !session.checkpoint().has_value()) {
      throw Error("injected failure on rank " + std::to_string(rank) + " at epoch " +
                               std::to_string(epoch));
    }
    const auto started = std::chrono::steady_clock::now();
    const double comm_before = sync->communication_seconds();
    const int64_t steps_before = sync->steps();
    seed_epoch(seed, epoch, rank);
    sampler.set_epoch(epoch);
    model->train();
    MeanMetrics metrics;
    int64_t trained = 0;
    const std::vector<torch::Tensor> batches = sampler.batches(batch);
    for (size_t step = 0; step < batches.size(); ++step) {
      const torch::Tensor& rows = batches[step];
      if (cosine) {
        const double progress = (static_cast<double>(epoch) + static_cast<double>(step) / batches.size()) / epochs;
        for (auto& group : optimizer->param_groups()) group.options().set_lr(base_lr * 0.5 * (1 + std::cos(M_PI * progress)));
      }
      optimizer->zero_grad();
      torch::Tensor x = data.train.features.index_select(0, rows);
      if (flip) {
        const torch::Tensor mirrored = torch::rand({x.size(0), 1, 1, 1}) < 0.5;
        x = torch::where(mirrored, x.flip({3}), x);
      }
      torch::Tensor loss = training_loss(model->forward(x.to(device)),
                                         data.train.labels.index_select(0, rows).to(device), options.regression);
      loss.backward();
      sync->synchronize();
      optimizer->step();
      metrics.add("train_loss", loss.item<double>() * static_cast<double>(rows.size(0)), static_cast<double>(rows.size(0)));
      trained += rows.size(0);
    }
    const double train_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    // Validation: each rank scores a disjoint contiguous slice.
    model->eval();
    {
      torch::NoGradGuard no_grad;
      const int64_t n = data.validation.size(), begin = n * rank / size, end = n * (rank + 1) / size;
      for (int64_t b = begin; b < end; b += kInferenceBatch) {
        data::Dataset part = data.validation.slice(b, std::min(end, b + kInferenceBatch));
        add_validation(metrics, model->forward(part.features.to(device)), part.labels.to(device), options.regression);
      }
    }
    const int64_t steps = sync->steps() - steps_before;
    // Counts of 1/size make the "mean" the sum of the ranks' rates.
    metrics.add("samples_per_s", static_cast<double>(trained) / train_seconds, 1.0 / size);
    metrics.add("allreduce_ms", 1000 * (sync->communication_seconds() - comm_before), static_cast<double>(std::max<int64_t>(1, steps)));
    Json result = metrics.reduce(comm);
    if (options.regression) result["val_rmse"] = std::sqrt(result["val_loss"].get<double>());
    result["epoch"] = epoch + 1;
    result["world_size"] = size;
    result["lr"] = optimizer->param_groups().front().options().get_lr();  // at the epoch's last step
    const std::string dir = session.make_checkpoint_dir();
    Json state = options.state;
    state["trainable"] = trainable;
    state["config"] = c;
    save_checkpoint(dir, *model, optimizer.get(), epoch + 1, comm, state);
    session.report(result, dir);
  }
}

}  // namespace torch_dp

void register_torch_trainables() {
  // Every libtorch trainable starts with cpus_per_worker intra-op threads.
  auto add = [](const std::string& name, std::function<void(Session&)> body, const std::string& description) {
    register_trainable(
        name,
        [body](Session& session) {
          torch_dp::use_session_threads(session);
          body(session);
        },
        {false, description, {}});
  };
  for (std::string name : {"fashion_mlp", "fashion_cnn", "taxi_tip"}) {
    add(name,
        [name](Session& session) {
          torch_dp::train_classifier(session, name, torch_dp::example_data(name, session.config()));
        },
        name == "taxi_tip" ? "libtorch MLP on generated taxi trips (is_big_tip), data-parallel"
                           : "libtorch " + std::string(name == "fashion_mlp" ? "MLP" : "CNN") +
                                 " on Fashion-MNIST, data-parallel over the group's ranks");
  }
  register_mlp_trainable();
  register_tabular_mlp_trainable();
}

}  // namespace tune
