// Batch prediction with a trained checkpoint (Ray's "use the best checkpoint
// for batch inference"), from C++ or as `tune predict`.
//
//   auto best = tune::torch_dp::load_best_model("./tune_results", "fashion-cnn");
//   torch::Tensor logits = best.model->forward(images);     // eval mode, weights loaded
//
//   // Spread over the ranks of a communicator (rank 0 gets every row back):
//   auto predictions = tune::torch_dp::predict(*best.model, inputs.features, comm);
//
// A checkpoint written by the example trainables (save_checkpoint with
// {"trainable", "config"} in state.json) is self-describing: load_model
// rebuilds the model with make_model(trainable, config) and loads it.
// Failures throw tune::Error (tune::NotFoundError for an unknown
// experiment or one without checkpoints).
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include <mpi.h>
#include <torch/torch.h>

#include "trainer/torch/datasets.h"
#include "trainer/torch/entry.h"
#include "trainer/torch/models.h"

namespace tune::torch_dp {

struct LoadedModel {
  std::shared_ptr<Classifier> model;  // in eval mode
  std::string trainable;
  Json config;
  std::string checkpoint;  // its directory
  std::string trial_name;  // "" when loaded from a bare checkpoint
  std::string metric;      // the metric the trial was selected by, and its score
  double score = 0;
};

// Loads a checkpoint directory written by the example trainables.
LoadedModel load_model(const std::string& checkpoint_dir);

// The best trial of `experiment` by `metric`/`mode` (default: the
// experiment's), scope "last", and its best kept checkpoint.
LoadedModel load_best_model(const std::string& storage, const std::string& experiment, const std::string& metric = "",
                            const std::string& mode = "");

struct Predictions {
  torch::Tensor classes;     // int64, N
  torch::Tensor confidence;  // float32, N: softmax probability of the class
};

// Scores rows [N*r/size, N*(r+1)/size) of `features` on rank r in batches,
// then gathers them on rank 0 (other ranks get an empty result). Collective.
Predictions predict(Classifier& model, const torch::Tensor& features, MPI_Comm comm, int64_t batch_size = kInferenceBatch);

// Reads prediction input for a trainable's model:
//   fashion_*: "fashion-mnist:test" / "fashion-mnist:train", or an images IDX
//              file (labels read from the matching *-labels-idx1-ubyte* file if present)
//   taxi_tip:  a CSV file with the six feature columns (is_big_tip optional),
//              or "taxi-trips:N": N freshly generated trips (seed 2026)
data::Dataset read_prediction_input(const std::string& trainable, const std::string& input);

// PredictOptions, check_predict_options and the CLI's entry points: entry.h.

// `tune predict` on the ranks of `comm` (MPI_COMM_NULL: this process
// alone): scores the input, and rank 0 writes `output` as CSV
// (row,prediction,confidence[,label]) and prints one summary line (with the
// accuracy when the input has labels) to `out`. Returns the exit code.
int predict_to_csv(const LoadedModel& loaded, const PredictOptions& options, MPI_Comm comm, std::ostream& out);

}  // namespace tune::torch_dp
