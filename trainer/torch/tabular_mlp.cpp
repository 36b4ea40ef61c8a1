// "tabular_mlp": a libtorch MLP on the sweep's own CSV (`data:` and
// `preprocess:`, trainer/tabular/dataset.h), data-parallel over the group's
// ranks with the training rows sharded (DistributedSampler).
//
// Config keys (defaults): width (64), layers (2), dropout (0), optimizer
// (adam: sgd|adam|adamw), lr (0.001), momentum (0.9, sgd), weight_decay (0),
// batch_size (64, per rank), epochs (10), seed (0). Classification reports
// val_loss (cross-entropy) and val_accuracy, regression val_loss (mean
// squared error) and val_rmse, each epoch with a checkpoint holding the
// model, the optimizer and the fitted preprocessors (state.json "tabular").
#include <mutex>

#include "base/error.h"
#include "trainer/session.h"
#include "trainer/tabular/dataset.h"
#include "trainer/tabular/model.h"
#include "trainer/torch/distributed.h"
#include "trainer/torch/models.h"
#include "trainer/torch/trainables.h"

namespace tune {
namespace {

std::shared_ptr<torch_dp::MlpNet> make_net(const Json& config, int64_t features, int64_t outputs) {
  const int64_t width = torch_dp::config_int(config, "width", 64), layers = torch_dp::config_int(config, "layers", 2);
  const double dropout = torch_dp::config_number(config, "dropout", 0.0);
  if (width < 1 || layers < 0) throw ConfigError("config 'width' must be >= 1 and 'layers' >= 0");
  if (!(dropout >= 0 && dropout < 1)) throw ConfigError("config 'dropout' must be in [0, 1)");
  return std::make_shared<torch_dp::MlpNet>(features, std::vector<int64_t>(static_cast<size_t>(layers), width), outputs,
                                            dropout);
}

torch::Tensor matrix(const std::vector<float>& values, int64_t rows, int64_t columns) {
  return torch::from_blob(const_cast<float*>(values.data()), {rows, columns}, torch::kFloat32).clone();
}

torch::Tensor labels(const std::vector<float>& values, bool regression) {
  torch::Tensor y = torch::from_blob(const_cast<float*>(values.data()), {static_cast<int64_t>(values.size())},
                                     torch::kFloat32)
                        .clone();
  return regression ? y : y.to(torch::kLong);
}

void tabular_mlp(Session& session) {
  torch_dp::use_session_threads(session);
  const std::shared_ptr<const tabular::Prepared> d = tabular::prepare(session.setup());
  const bool regression = d->classes.empty();
  torch_dp::TrainValidation data{{matrix(d->x_train, d->n_train, d->n_features), labels(d->y_train, regression)},
                                 {matrix(d->x_valid, d->n_valid, d->n_features), labels(d->y_valid, regression)}};
  Json config = session.config();
  if (!config.contains("optimizer")) config["optimizer"] = "adam";
  if (!config.contains("lr")) config["lr"] = 0.001;
  torch::manual_seed(static_cast<uint64_t>(torch_dp::config_int(config, "seed", 0)));
  torch_dp::TrainOptions options;
  options.model = make_net(config, d->n_features, regression ? 1 : static_cast<int64_t>(d->classes.size()));
  options.regression = regression;
  options.state = {{"tabular", d->schema()}};
  torch_dp::train_classifier(session, "tabular_mlp", data, options);
}

// The trained net for predict/serve: forward without gradients is safe from
// several threads at once.
class TabularMlpModel : public tabular::Model {
 public:
  TabularMlpModel(const std::string& dir, const Json& state) {
    const tabular::ModelSchema schema = tabular::read_model_schema(state.at("tabular"));
    regression_ = schema.task == "regression";
    features_ = static_cast<int64_t>(schema.pipeline.output_names().size());
    Json config = state.value("config", Json::object());
    net_ = make_net(config, features_, regression_ ? 1 : static_cast<int64_t>(schema.classes.size()));
    torch_dp::load_checkpoint(dir, *net_);
    net_->eval();
  }
  std::vector<float> predict(const std::vector<float>& x, int64_t rows) const override {
    if (rows == 0) return {};
    torch::NoGradGuard no_grad;
    torch::Tensor out = net_->forward(torch::from_blob(const_cast<float*>(x.data()), {rows, features_}, torch::kFloat32));
    if (!regression_) out = torch::softmax(out, 1);
    out = out.contiguous();
    return std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
  }

 private:
  std::shared_ptr<torch_dp::MlpNet> net_;
  bool regression_ = false;
  int64_t features_ = 0;
};

}  // namespace

void register_tabular_mlp_trainable() {
  TrainableInfo info;
  info.in_process = false;
  info.description = "libtorch MLP on the sweep's CSV (data:, preprocess:), data-parallel over the group's ranks";
  info.check_setup = tabular::check_setup;
  register_trainable("tabular_mlp", tabular_mlp, info);
  tabular::register_model_loader("tabular_mlp", [](const std::string& dir, const Json& state) {
    return std::make_unique<TabularMlpModel>(dir, state);
  });
}

}  // namespace tune
