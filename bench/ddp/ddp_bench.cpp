// ddp_bench: data-parallel training throughput of tune's trainer on
// Fashion-MNIST, run under `mpirun -np N`. One intra-op thread per rank,
// SGD(lr 0.01, momentum 0.9), batch 64 per rank, in-memory data.
//   ddp_bench --model mlp|cnn --steps S --warmup W [--no-overlap] [--mpi-allreduce] [--bucket-bytes B]
// Prints one JSON line on rank 0: samples_per_s (all ranks), step_ms,
// allreduce_ms (MPI time per step) and exposed_ms (in synchronize()).
#include <mpi.h>

#include <chrono>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "trainer/torch/datasets.h"
#include "trainer/torch/distributed.h"
#include "trainer/torch/models.h"

using namespace tune::torch_dp;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::string model_name = "mlp";
  int64_t steps = 200, warmup = 20, batch = 64;
  GradientSyncOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() { return std::string(i + 1 < argc ? argv[++i] : ""); };
    if (a == "--model") model_name = next();
    else if (a == "--steps") steps = std::stoll(next());
    else if (a == "--warmup") warmup = std::stoll(next());
    else if (a == "--batch") batch = std::stoll(next());
    else if (a == "--no-overlap") options.overlap = false;
    else if (a == "--mpi-allreduce") options.shared_memory = false;
    else if (a == "--bucket-bytes") options.bucket_bytes = std::stoll(next());
    else {
      std::cerr << "ddp_bench: unknown option " << a << "\n";
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  torch::set_num_threads(1);
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), size = size_of(comm);
  tune::data::Dataset train = tune::data::load_fashion_mnist("train");
  torch::manual_seed(0);
  auto model = make_model(model_name == "cnn" ? "fashion_cnn" : "fashion_mlp",
                          {{"dropout", 0.0}, {"width", model_name == "cnn" ? 128 : 256}});
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  auto sync = prepare_model(*model, comm, options);
  DistributedSampler sampler(train.size(), comm, 0);
  auto batches = sampler.batches(batch);
  model->train();
  double comm_start = 0, exposed_start = 0;
  auto start = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < warmup + steps; ++s) {
    if (s == warmup) {
      MPI_Barrier(comm);
      start = std::chrono::steady_clock::now();
      comm_start = sync->communication_seconds();
      exposed_start = sync->exposed_seconds();
    }
    const auto& rows = batches[static_cast<size_t>(s) % batches.size()];
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(train.features.index_select(0, rows)),
                                         train.labels.index_select(0, rows))
        .backward();
    sync->synchronize();
    optimizer.step();
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, comm);
  if (rank == 0) {
    nlohmann::json out = {{"impl", "tune"},
                          {"model", model_name},
                          {"ranks", size},
                          {"batch_per_rank", batch},
                          {"steps", steps},
                          {"buckets", sync->num_buckets()},
                          {"overlap", options.overlap},
                          {"shared_memory", sync->uses_shared_memory()},
                          {"blas", blas_library()},
                          {"samples_per_s", static_cast<double>(steps * batch * size) / elapsed},
                          {"step_ms", 1000 * elapsed / static_cast<double>(steps)},
                          {"allreduce_ms", 1000 * (sync->communication_seconds() - comm_start) / static_cast<double>(steps)},
                          {"exposed_ms", 1000 * (sync->exposed_seconds() - exposed_start) / static_cast<double>(steps)}};
    std::cout << out.dump() << std::endl;
  }
  sync.reset();  // collective: frees the shared memory window
  MPI_Finalize();
  return 0;
}
