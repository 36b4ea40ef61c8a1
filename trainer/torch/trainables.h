// The libtorch example trainables and the training loop they share.
//
// Registered by tune::register_torch_trainables():
//   fashion_mlp  Fashion-MNIST, MLP 784-width-width/2-10
//   fashion_cnn  Fashion-MNIST, CNN conv(channels1)-conv(channels2)-fc(width)
//   taxi_tip     generated taxi trips (6 numeric features, binary is_big_tip)
//   mlp          synthetic teacher/student data (small, for tests)
// Config keys and defaults: docs/TRAINER.md. Each epoch reports
// val_loss, val_accuracy, train_loss, epoch, world_size, samples_per_s and
// allreduce_ms (per step) with a checkpoint (model + optimizer + epoch).
#pragma once

#include <string>

#include "trainer/session.h"
#include "trainer/torch/datasets.h"

namespace tune {

// Registers the libtorch trainables above. Idempotent.
void register_torch_trainables();

}  // namespace tune

namespace tune::torch_dp {

struct TrainValidation {
  data::Dataset train, validation;
};

// The data a trainable trains on, from its config (subset, val_size, ...).
TrainValidation example_data(const std::string& trainable, const Json& config);

// The shared data-parallel training loop: builds make_model(trainable,
// config), an optimizer from config (optimizer: sgd|adam|adamw, lr,
// momentum, weight_decay), restores session.checkpoint() if any, and trains
// config.epochs epochs on `data` with per-rank batch_size.
void train_classifier(Session& session, const std::string& trainable, const TrainValidation& data);

}  // namespace tune::torch_dp
