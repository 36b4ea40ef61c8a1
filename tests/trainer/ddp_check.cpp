// ddp_check: a small data-parallel training run for trainer/ddp_mpi_test.cpp,
// started under mpirun. Writes rank 0's final parameters (raw float32) to OUT.
//   ddp_check equivalence OUT BATCH STEPS OVERLAP BUCKET_BYTES SHARED_MEMORY
//   ddp_check train OUT EPOCHS [SAVE_DIR|-] [RESTORE_DIR|-]
#include <mpi.h>

#include <fstream>
#include <iostream>
#include <string>

#include <ATen/CPUGeneratorImpl.h>

#include "trainer/torch/distributed.h"
#include "trainer/torch/models.h"

using namespace tune::torch_dp;

namespace {

void write_parameters(const std::string& path, torch::nn::Module& model) {
  std::vector<torch::Tensor> flat;
  for (auto& p : model.parameters()) flat.push_back(p.detach().reshape(-1));
  torch::Tensor all = torch::cat(flat).contiguous();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(all.data_ptr<float>()), static_cast<std::streamsize>(all.numel() * 4));
}

struct Data {
  torch::Tensor x, y;
};

Data make_data() {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  torch::Tensor x = torch::randn({300, 12}, gen);
  torch::Tensor w = torch::randn({12, 3}, gen);
  return {x, x.matmul(w).argmax(1)};
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  torch::set_num_threads(1);
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm);
  const std::string mode = argc > 1 ? argv[1] : "", out = argc > 2 ? argv[2] : "";
  Data data = make_data();
  if (mode == "equivalence" && argc == 8) {
    const int64_t batch = std::stoll(argv[3]), steps = std::stoll(argv[4]);
    GradientSyncOptions options;
    options.overlap = std::string(argv[5]) == "1";
    options.bucket_bytes = std::stoll(argv[6]);
    options.shared_memory = std::string(argv[7]) == "1";
    torch::manual_seed(1 + rank);  // different on purpose: prepare_model must broadcast rank 0's
    MlpNet model(12, {32, 16}, 3, 0.0);
    torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    auto sync = prepare_model(model, comm, options);
    if (rank == 0) write_parameters(out + ".initial", model);
    DistributedSampler sampler(data.x.size(0), comm, /*seed=*/3);
    auto batches = sampler.batches(batch);
    for (int64_t s = 0; s < steps; ++s) {
      const auto& rows = batches.at(static_cast<size_t>(s));
      // Both ways of clearing gradients: zeroed in place (on the shared
      // window they stay views of it) or set to none (backward makes new
      // ones, which synchronize() copies in).
      if (s % 3 == 2) model.zero_grad(/*set_to_none=*/true);
      else optimizer.zero_grad();
      torch::nn::functional::cross_entropy(model.forward(data.x.index_select(0, rows)), data.y.index_select(0, rows))
          .backward();
      sync->synchronize();
      optimizer.step();
    }
    const int buckets = sync->num_buckets(), shared = sync->uses_shared_memory();
    // The gradients outlive the GradientSync unchanged, even when a second one
    // (which reuses the first one's shared memory window) trains another model.
    std::vector<torch::Tensor> grads;
    for (auto& p : model.parameters()) grads.push_back(p.grad().clone());
    sync.reset();
    MlpNet other(12, {32, 16}, 3, 0.0);
    auto other_sync = prepare_model(other, comm, options);
    torch::nn::functional::cross_entropy(other.forward(data.x.slice(0, 0, 10)), data.y.slice(0, 0, 10)).backward();
    other_sync->synchronize();
    bool kept = true;
    for (size_t i = 0; i < grads.size(); ++i) kept = kept && torch::equal(grads[i], model.parameters()[i].grad());
    if (rank == 0) {
      write_parameters(out, model);
      std::ofstream(out + ".buckets") << buckets << " " << shared << " " << kept << "\n";
    }
  } else if (mode == "train" && argc == 6) {
    const int64_t epochs = std::stoll(argv[3]);
    const std::string save = argv[4], restore = argv[5];
    torch::manual_seed(7);
    MlpNet model(12, {24}, 3, 0.2);
    torch::optim::Adam optimizer(model.parameters(), torch::optim::AdamOptions(0.01));
    int64_t start = 0;
    if (restore != "-") start = load_checkpoint(restore, model, &optimizer).at("epoch").get<int64_t>();
    auto sync = prepare_model(model, comm);
    DistributedSampler sampler(data.x.size(0), comm, /*seed=*/11);
    for (int64_t epoch = start; epoch < epochs; ++epoch) {
      torch::manual_seed(1000 + epoch * 10 + rank);  // dropout masks per (epoch, rank)
      sampler.set_epoch(epoch);
      model.train();
      for (const auto& rows : sampler.batches(16)) {
        optimizer.zero_grad();
        torch::nn::functional::cross_entropy(model.forward(data.x.index_select(0, rows)), data.y.index_select(0, rows))
            .backward();
        sync->synchronize();
        optimizer.step();
      }
    }
    if (save != "-") save_checkpoint(save, model, &optimizer, epochs, comm);
    if (rank == 0) write_parameters(out, model);
  } else {
    if (rank == 0) std::cerr << "usage: ddp_check equivalence|train OUT ...\n";
    MPI_Abort(comm, 2);
  }
  MPI_Finalize();
  return 0;
}
