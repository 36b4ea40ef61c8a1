#include "trainer/torch/models.h"

#include <cmath>
#include <stdexcept>

#include "base/error.h"
#include "trainer/torch/datasets.h"

namespace tune::torch_dp {

MlpNet::MlpNet(int64_t in, std::vector<int64_t> hidden, int64_t out, double dropout) {
  int64_t previous = in;
  hidden.push_back(out);
  for (size_t i = 0; i < hidden.size(); ++i) {
    layers_.push_back(register_module("fc" + std::to_string(i + 1), torch::nn::Linear(previous, hidden[i])));
    previous = hidden[i];
  }
  dropout_ = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MlpNet::forward(torch::Tensor x) {
  x = x.flatten(1);
  for (size_t i = 0; i + 1 < layers_.size(); ++i) x = dropout_->forward(torch::relu(layers_[i]->forward(x)));
  return layers_.back()->forward(x);
}

ConvNet::ConvNet(int64_t channels1, int64_t channels2, int64_t width, double dropout, int64_t classes) {
  conv1_ = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, channels1, 3)));
  conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels1, channels2, 3)));
  fc1_ = register_module("fc1", torch::nn::Linear(channels2 * 12 * 12, width));
  fc2_ = register_module("fc2", torch::nn::Linear(width, classes));
  dropout_ = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor ConvNet::forward(torch::Tensor x) {
  x = torch::relu(conv1_->forward(x));
  x = torch::relu(conv2_->forward(x));
  x = dropout_->forward(torch::max_pool2d(x, 2).flatten(1));
  x = dropout_->forward(torch::relu(fc1_->forward(x)));
  return fc2_->forward(x);
}

TabularNet::TabularNet(int64_t features, std::vector<int64_t> hidden, int64_t classes, double dropout) {
  mean_ = register_buffer("feature_mean", torch::zeros({features}));
  std_ = register_buffer("feature_std", torch::ones({features}));
  mlp_ = register_module("mlp", std::make_shared<MlpNet>(features, std::move(hidden), classes, dropout));
}

void TabularNet::fit_normalization(const torch::Tensor& features) {
  torch::NoGradGuard no_grad;
  mean_.copy_(features.mean(0));
  std_.copy_(features.std(0).clamp_min(1e-6));
}

torch::Tensor TabularNet::forward(torch::Tensor x) { return mlp_->forward((x - mean_) / std_); }

double config_number(const Json& config, const char* key, double fallback) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_number()) throw ConfigError(std::string("config '") + key + "' must be a number, got " + it->dump());
  return it->get<double>();
}

int64_t config_int(const Json& config, const char* key, int64_t fallback) {
  const double v = config_number(config, key, static_cast<double>(fallback));
  if (v != std::floor(v)) throw ConfigError(std::string("config '") + key + "' must be an integer, got " + std::to_string(v));
  return static_cast<int64_t>(v);
}

std::string config_string(const Json& config, const char* key, const std::string& fallback) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_string()) throw ConfigError(std::string("config '") + key + "' must be a string, got " + it->dump());
  return it->get<std::string>();
}

namespace {
int64_t positive(const Json& config, const char* key, int64_t fallback) {
  const int64_t v = config_int(config, key, fallback);
  if (v < 1) throw ConfigError(std::string("config '") + key + "' must be >= 1, got " + std::to_string(v));
  return v;
}
double dropout_of(const Json& config, double fallback) {
  const double p = config_number(config, "dropout", fallback);
  if (p < 0 || p >= 1) throw ConfigError("config 'dropout' must be in [0, 1), got " + std::to_string(p));
  return p;
}
}  // namespace

std::shared_ptr<Classifier> make_model(const std::string& trainable, const Json& config) {
  if (trainable == "fashion_mlp") {
    const int64_t width = positive(config, "width", 256);
    return std::make_shared<MlpNet>(28 * 28, std::vector<int64_t>{width, std::max<int64_t>(1, width / 2)}, 10,
                                    dropout_of(config, 0.0));
  }
  if (trainable == "fashion_cnn") {
    return std::make_shared<ConvNet>(positive(config, "channels1", 32), positive(config, "channels2", 64),
                                     positive(config, "width", 128), dropout_of(config, 0.25));
  }
  if (trainable == "taxi_tip") {
    const int64_t width = positive(config, "width", 32);
    return std::make_shared<TabularNet>(static_cast<int64_t>(data::taxi_feature_names().size()),
                                        std::vector<int64_t>(static_cast<size_t>(positive(config, "layers", 2)), width), 2,
                                        dropout_of(config, 0.0));
  }
  throw ConfigError("no model for trainable '" + trainable + "' (known: fashion_mlp, fashion_cnn, taxi_tip)");
}

}  // namespace tune::torch_dp
