// Models of the example trainables, and the interface batch prediction uses.
//
// Every model is a tune::torch_dp::Classifier: a torch::nn::Module whose
// forward maps a batch of inputs to class logits. Models are built from a
// trial's config (the same keys as the trainable's), so a checkpoint plus the
// trial's config is enough to rebuild and load the model.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "trainer/session.h"
#include "trainer/torch/entry.h"  // kInferenceBatch

namespace tune::torch_dp {

class Classifier : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};

// Fully connected net: in -> hidden[0] -> ... -> out, ReLU and dropout
// between layers. 784-256-128-10 for Fashion-MNIST by default.
class MlpNet : public Classifier {
 public:
  MlpNet(int64_t in, std::vector<int64_t> hidden, int64_t out, double dropout);
  torch::Tensor forward(torch::Tensor x) override;

 private:
  std::vector<torch::nn::Linear> layers_;
  torch::nn::Dropout dropout_{nullptr};
};

// Small CNN for 1 x 28 x 28 images (the PyTorch MNIST example):
// conv(1, c1, 3) - ReLU - conv(c1, c2, 3) - ReLU - maxpool 2 - dropout -
// fc(c2 * 12 * 12, width) - ReLU - dropout - fc(width, 10).
class ConvNet : public Classifier {
 public:
  ConvNet(int64_t channels1, int64_t channels2, int64_t width, double dropout, int64_t classes = 10);
  torch::Tensor forward(torch::Tensor x) override;

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
};

// MLP on standardized tabular features: the per-feature mean and std are
// buffers (saved in checkpoints), so raw features go in at prediction time.
class TabularNet : public Classifier {
 public:
  TabularNet(int64_t features, std::vector<int64_t> hidden, int64_t classes, double dropout);
  // Sets the standardization from training features (N x features).
  void fit_normalization(const torch::Tensor& features);
  torch::Tensor forward(torch::Tensor x) override;

 private:
  torch::Tensor mean_, std_;
  std::shared_ptr<MlpNet> mlp_;
};

// The model of a registered example trainable, built from a trial config:
// "fashion_mlp", "fashion_cnn", "taxi_tip". Throws tune::ConfigError for
// another name or a bad config value.
std::shared_ptr<Classifier> make_model(const std::string& trainable, const Json& config);

// Config helpers shared by the trainables: the value of `key`, or `fallback`
// when absent/null; tune::ConfigError naming the key for a wrong type.
double config_number(const Json& config, const char* key, double fallback);
int64_t config_int(const Json& config, const char* key, int64_t fallback);
std::string config_string(const Json& config, const char* key, const std::string& fallback);

}  // namespace tune::torch_dp
