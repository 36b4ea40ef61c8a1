// What the tune-full program (tuner/cli/main.cpp) calls of trainer/torch,
// without libtorch's headers: including <torch/torch.h> made main.cpp a 40 s
// compile, this a few seconds. The functions are defined in trainables.cpp and
// predict.cpp; predict.h has the rest of batch prediction.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace tune {

// Registers the libtorch trainables (trainables.h lists them). Idempotent.
void register_torch_trainables();

}  // namespace tune

namespace tune::torch_dp {

// Rows per forward pass when scoring without gradients (validation, predict).
// Small batches keep activations in cache and in the heap: 1,000 CNN images
// per pass (~150 MB a layer, mapped and faulted in per pass) were ~10x slower.
inline constexpr int64_t kInferenceBatch = 64;

struct PredictOptions {
  std::string storage = "./tune_results";
  std::string experiment;  // or:
  std::string checkpoint;  // a checkpoint directory (skips selecting the best trial)
  std::string input, output;
  std::string metric, mode;
  int workers = 1;  // ranks; > 1 runs the command under mpirun
  int64_t batch_size = kInferenceBatch;
};

// Throws ConfigError for a missing input/output, workers or batch size < 1,
// or neither an experiment nor a checkpoint.
void check_predict_options(const PredictOptions& options);

// `tune predict` in this process alone: loads the checkpoint directory
// (load_model), scores the input and writes the CSV (predict_to_csv with
// MPI_COMM_NULL). Returns the exit code.
int predict_checkpoint_to_csv(const std::string& checkpoint_dir, const PredictOptions& options, std::ostream& out);

// Loads the checkpoint directory (throwing as load_model does) and returns the
// directory it was loaded from: checked once before N ranks are started.
std::string loadable_checkpoint(const std::string& checkpoint_dir);

// One rank of `tune predict --workers N` (the CLI starts N under mpirun,
// with options.checkpoint set): MPI_Init, predict_to_csv on
// MPI_COMM_WORLD, MPI_Finalize. Returns the exit code.
int predict_as_rank(const PredictOptions& options, std::ostream& out);

}  // namespace tune::torch_dp
