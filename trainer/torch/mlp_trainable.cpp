// "mlp": a small libtorch MLP trained data-parallel on synthetic data (a
// random linear teacher labelling Gaussian inputs). Config keys (defaults):
//   lr (0.05), momentum (0.9), batch_size (32, per rank), width (32),
//   layers (1), epochs (5), samples (512), features (16), classes (4),
//   data_seed (0).
// Each epoch reports validation loss/accuracy averaged over ranks and a
// checkpoint (model + optimizer + epoch, written by rank 0).
#include <cmath>
#include <filesystem>

#include "trainer/communicator.h"
#include "trainer/session.h"
#include "trainer/torch/distributed.h"

namespace tune {
namespace {

struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t in, int64_t width, int64_t layers, int64_t out) {
    int64_t previous = in;
    for (int64_t i = 0; i < layers; ++i) {
      hidden.push_back(register_module("hidden" + std::to_string(i), torch::nn::Linear(previous, width)));
      previous = width;
    }
    head = register_module("head", torch::nn::Linear(previous, out));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (auto& layer : hidden) x = torch::relu(layer->forward(x));
    return head->forward(x);
  }
  std::vector<torch::nn::Linear> hidden;
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Mlp);

struct Dataset {
  torch::Tensor x, y;
};

Dataset make_data(int64_t samples, int64_t features, int64_t classes, uint64_t seed) {
  torch::manual_seed(static_cast<int64_t>(seed) + 12345);
  torch::Tensor teacher = torch::randn({features, classes});
  torch::Tensor x = torch::randn({samples, features});
  torch::Tensor y = (x.matmul(teacher) + 0.5 * torch::randn({samples, classes})).argmax(1);
  return {x, y};
}

template <typename T>
T get(const Json& config, const char* key, T fallback) {
  auto it = config.find(key);
  return it == config.end() || it->is_null() ? fallback : it->get<T>();
}

void mlp_trainable(Session& session) {
  const Json& c = session.config();
  torch::set_num_threads(session.cpus());
  const MPI_Comm comm = communicator(session);
  const int rank = session.rank(), size = session.world_size();
  const int64_t samples = get<int64_t>(c, "samples", 512), features = get<int64_t>(c, "features", 16),
                classes = get<int64_t>(c, "classes", 4), batch = get<int64_t>(c, "batch_size", 32),
                epochs = get<int64_t>(c, "epochs", 5);
  const uint64_t data_seed = get<uint64_t>(c, "data_seed", 0);

  Dataset all = make_data(samples + samples / 4, features, classes, data_seed);
  Dataset train{all.x.slice(0, 0, samples), all.y.slice(0, 0, samples)};
  Dataset valid{all.x.slice(0, samples), all.y.slice(0, samples)};

  torch::manual_seed(static_cast<int64_t>(session.trial_index()) + 1);
  Mlp model(features, get<int64_t>(c, "width", 32), get<int64_t>(c, "layers", 1), classes);
  const torch::Device device = torch_dp::training_device(c);
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(get<double>(c, "lr", 0.05)).momentum(get<double>(c, "momentum", 0.9)));
  if (session.checkpoint()) {
    torch::load(model, session.checkpoint()->path + "/model.pt", device);
    torch::load(optimizer, session.checkpoint()->path + "/optimizer.pt", device);
  }
  torch_dp::broadcast_parameters(*model, comm);

  for (int64_t epoch = session.iteration(); epoch < epochs; ++epoch) {
    model->train();
    auto shard = torch_dp::shard_indices(samples, rank, size, epoch, data_seed);
    torch::Tensor index = torch::tensor(shard, torch::kLong);
    for (int64_t start = 0; start < index.size(0); start += batch) {
      torch::Tensor rows = index.slice(0, start, std::min<int64_t>(start + batch, index.size(0)));
      optimizer.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(train.x.index_select(0, rows).to(device)),
                                                                train.y.index_select(0, rows).to(device));
      loss.backward();
      torch_dp::allreduce_gradients(*model, comm);
      optimizer.step();
    }
    // Validation: each rank scores a disjoint slice; sums are reduced.
    model->eval();
    torch::NoGradGuard no_grad;
    const int64_t n = valid.x.size(0), begin = n * rank / size, end = n * (rank + 1) / size;
    torch::Tensor logits = model->forward(valid.x.slice(0, begin, end).to(device));
    torch::Tensor target = valid.y.slice(0, begin, end).to(device);
    double loss_sum = torch::nn::functional::cross_entropy(
                          logits, target, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                          .item<double>();
    double correct = logits.argmax(1).eq(target).sum().item<double>();
    auto totals = torch_dp::allreduce_sum({loss_sum, correct, static_cast<double>(end - begin)}, comm);
    std::string dir = session.make_checkpoint_dir();
    if (rank == 0) {
      torch::save(model, dir + "/model.pt");
      torch::save(optimizer, dir + "/optimizer.pt");
    }
    session.report({{"loss", totals[0] / totals[2]}, {"accuracy", totals[1] / totals[2]}, {"epoch", epoch + 1},
                    {"world_size", size}},
                   dir);
  }
}

}  // namespace

void register_mlp_trainable() {
  register_trainable("mlp", mlp_trainable,
                     {false, "libtorch MLP on synthetic data, data-parallel over the group's ranks", {}});
}

}  // namespace tune
