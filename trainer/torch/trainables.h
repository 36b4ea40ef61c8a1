// The libtorch example trainables and the training loop they share.
//
// Registered by tune::register_torch_trainables() (entry.h):
//   fashion_mlp  Fashion-MNIST, MLP 784-width-width/2-10
//   fashion_cnn  Fashion-MNIST, CNN conv(channels1)-conv(channels2)-fc(width)
//   taxi_tip     generated taxi trips (6 numeric features, binary is_big_tip)
//   mlp          synthetic teacher/student data (small, for tests)
//   tabular_mlp  the sweep's own CSV (data:, preprocess:), classification or
//                regression (tabular_mlp.cpp)
// Config keys and defaults: docs/TRAINER.md. Each epoch reports
// val_loss, val_accuracy, train_loss, epoch, world_size, samples_per_s and
// allreduce_ms (per step) with a checkpoint (model + optimizer + epoch).
#pragma once

#include <string>

#include "trainer/session.h"
#include "trainer/torch/datasets.h"
#include "trainer/torch/entry.h"  // register_torch_trainables
#include "trainer/torch/models.h"

namespace tune::torch_dp {

struct TrainValidation {
  data::Dataset train, validation;
};

// The data a trainable trains on, from its config (subset, val_size, ...).
TrainValidation example_data(const std::string& trainable, const Json& config);

struct TrainOptions {
  // The model to train. Default (null): make_model(trainable, config).
  std::shared_ptr<Classifier> model;
  // Mean squared error on the model's single output against float labels
  // (reports val_rmse) instead of cross-entropy on int64 class labels
  // (reports val_accuracy). Default: false.
  bool regression = false;
  // Extra keys for every checkpoint's state.json (trainable and config are
  // always there).
  Json state = Json::object();
};

// The shared data-parallel training loop: builds the model, an optimizer
// from config (optimizer: sgd|adam|adamw, lr, momentum, weight_decay),
// restores session.checkpoint() if any, and trains config.epochs epochs on
// `data` with per-rank batch_size.
void train_classifier(Session& session, const std::string& trainable, const TrainValidation& data,
                      const TrainOptions& options = {});

}  // namespace tune::torch_dp
