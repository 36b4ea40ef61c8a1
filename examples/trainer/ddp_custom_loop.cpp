// A plain libtorch training loop made data-parallel with trainer/torch, tuned
// by tune with 2 MPI ranks per trial, then the best checkpoint loaded back.
//
//   ./ddp_custom_loop [STORAGE_DIR]
// The lines marked "DDP" are all that make the loop distributed.
#include <iostream>

#include "trainer/communicator.h"
#include "trainer/torch/distributed.h"
#include "trainer/torch/models.h"
#include "tuner/tuner.h"

namespace dp = tune::torch_dp;

void train(tune::Session& session) {
  dp::use_session_threads(session);                            // DDP: cpus_per_worker threads
  const MPI_Comm comm = tune::communicator(session);                // DDP
  const double lr = session.config()["lr"];
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({512, 8}), y = (x.sum(1) > 0).to(torch::kLong);  // toy data, same on every rank
  dp::MlpNet model(8, {32}, 2, 0.0);
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
  int64_t start = 0;
  if (session.checkpoint()) start = dp::load_checkpoint(session.checkpoint()->path, model, &optimizer)["epoch"];
  auto sync = dp::prepare_model(model, comm);                  // DDP: same weights, gradient averaging
  dp::DistributedSampler sampler(x.size(0), comm, /*seed=*/0);  // DDP: this rank's shard
  for (int64_t epoch = start; epoch < 5; ++epoch) {
    sampler.set_epoch(epoch);
    dp::MeanMetrics metrics;
    for (const auto& rows : sampler.batches(32)) {
      optimizer.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(model.forward(x.index_select(0, rows)),
                                                                y.index_select(0, rows));
      loss.backward();
      sync->synchronize();                                     // DDP: averaged gradients
      optimizer.step();
      metrics.add("loss", loss.item<double>() * rows.size(0), rows.size(0));
    }
    std::string dir = session.make_checkpoint_dir();
    dp::save_checkpoint(dir, model, &optimizer, epoch + 1, comm);  // DDP: rank 0 writes
    session.report(metrics.reduce(comm), dir);                 // DDP: mean over ranks
  }
}

int main(int argc, char** argv) {
  tune::register_trainable("ddp_custom_loop", train, {/*in_process=*/false, "example"});
  tune::init(argc, argv);  // in an MPI rank, runs trials and never returns

  tune::SweepSpec spec;
  spec.name = "ddp-custom-loop";
  spec.trainable = "ddp_custom_loop";
  spec.metric = "loss";
  spec.mode = "min";
  spec.num_samples = 3;
  spec.resources.workers = 2;
  spec.param_space.add("lr", tune::loguniform(1e-3, 1e-1));
  tune::RunConfig run;
  run.storage_path = argc > 1 ? argv[1] : "./tune_results";
  run.verbose = false;
  tune::Tuner tuner(spec, run);
  tune::Result best = tuner.fit().best();

  dp::MlpNet model(8, {32}, 2, 0.0);
  dp::load_checkpoint(best.checkpoint, model);  // the best trial's best checkpoint
  std::cout << "best " << best.trial_name << " loss " << best.metrics["loss"] << " lr " << best.config["lr"]
            << ", checkpoint " << best.checkpoint << "\n";
  return 0;
}
