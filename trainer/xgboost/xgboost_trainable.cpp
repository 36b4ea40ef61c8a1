#include "trainer/xgboost/xgboost_trainable.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/names.h"
#include "trainer/session.h"
#include "trainer/tabular/dataset.h"
#include "trainer/tabular/model.h"

namespace tune {
namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw Error(std::string("xgboost: ") + what + ": " + XGBGetLastError());
}

struct Matrix {
  DMatrixHandle handle = nullptr;
  Matrix() = default;
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  ~Matrix() {
    if (handle) XGDMatrixFree(handle);
  }
};

struct Booster {
  BoosterHandle handle = nullptr;
  Booster() = default;
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  ~Booster() {
    if (handle) XGBoosterFree(handle);
  }
};

// Fills `matrix` with `rows` x `columns` features (NaN is XGBoost's missing).
void fill(Matrix& matrix, const std::vector<float>& x, int64_t rows, int64_t columns,
          const std::vector<float>* labels = nullptr) {
  check(XGDMatrixCreateFromMat(x.data(), static_cast<bst_ulong>(rows), static_cast<bst_ulong>(columns), std::nanf(""),
                               &matrix.handle),
        "building the data matrix");
  if (labels) {
    check(XGDMatrixSetFloatInfo(matrix.handle, "label", labels->data(), static_cast<bst_ulong>(labels->size())),
          "setting labels");
  }
}

// Keys of the trial config that are tune's, not XGBoost's.
const std::vector<std::string>& own_keys() {
  static const std::vector<std::string> keys = {"num_boost_round", "checkpoint_interval", "seed"};
  return keys;
}

// XGBoost's tree-booster parameters a sweep may set (docs: "XGBoost Parameters").
const std::vector<std::string>& booster_keys() {
  static const std::vector<std::string> keys = {
      "eta", "learning_rate", "gamma", "min_split_loss", "max_depth", "min_child_weight", "max_delta_step",
      "subsample", "sampling_method", "colsample_bytree", "colsample_bylevel", "colsample_bynode", "lambda",
      "reg_lambda", "alpha", "reg_alpha", "tree_method", "scale_pos_weight", "max_leaves", "max_bin",
      "grow_policy", "num_parallel_tree", "max_cat_to_onehot", "base_score", "verbosity"};
  return keys;
}

std::string param_text(const std::string& key, const Json& value) {
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value.get<double>());
    return text;
  }
  if (value.is_string()) return value.get<std::string>();
  throw ConfigError("xgboost: config '" + key + "' must be a number, string or bool, got " + value.dump());
}

int64_t config_int(const Json& config, const char* key, int64_t fallback, int64_t minimum) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_number() || it->get<double>() != std::floor(it->get<double>())) {
    throw ConfigError(std::string("xgboost: config '") + key + "' must be an integer, got " + it->dump());
  }
  const auto value = it->get<int64_t>();
  if (value < minimum) {
    throw ConfigError(std::string("xgboost: config '") + key + "' must be >= " + std::to_string(minimum));
  }
  return value;
}

std::vector<std::pair<std::string, std::string>> booster_params(const Json& config, const tabular::Prepared& data,
                                                                int threads) {
  std::vector<std::pair<std::string, std::string>> params = {{"tree_method", "hist"}, {"verbosity", "1"}};
  if (data.classes.empty()) {
    params.emplace_back("objective", "reg:squarederror");
  } else if (data.classes.size() == 2) {
    params.emplace_back("objective", "binary:logistic");
  } else {
    params.emplace_back("objective", "multi:softprob");
    params.emplace_back("num_class", std::to_string(data.classes.size()));
  }
  params.emplace_back("nthread", std::to_string(std::max(1, threads)));
  params.emplace_back("seed", std::to_string(config_int(config, "seed", 0, 0)));
  std::vector<std::string> known = booster_keys();
  known.insert(known.end(), own_keys().begin(), own_keys().end());
  for (const auto& [key, value] : config.items()) {
    if (std::find(own_keys().begin(), own_keys().end(), key) != own_keys().end()) continue;
    if (std::find(booster_keys().begin(), booster_keys().end(), key) == booster_keys().end()) {
      throw ConfigError("xgboost: unknown config key '" + key + "'" + did_you_mean_or_list(key, known, "known keys"));
    }
    params.emplace_back(key, param_text(key, value));
  }
  return params;
}

// Probabilities per class (classification) or values, rows x outputs.
std::vector<float> predict_rows(BoosterHandle booster, DMatrixHandle matrix, int64_t rows, size_t classes) {
  bst_ulong length = 0;
  const float* result = nullptr;
  check(XGBoosterPredict(booster, matrix, 0, 0, 0, &length, &result), "predicting");
  if (classes == 2) {  // binary:logistic gives P(class 1)
    std::vector<float> out(static_cast<size_t>(rows) * 2);
    for (int64_t r = 0; r < rows; ++r) {
      out[static_cast<size_t>(r) * 2] = 1.0f - result[r];
      out[static_cast<size_t>(r) * 2 + 1] = result[r];
    }
    return out;
  }
  return std::vector<float>(result, result + length);
}

Json evaluate(BoosterHandle booster, DMatrixHandle valid, const tabular::Prepared& data) {
  const size_t k = data.classes.size();
  const std::vector<float> out = predict_rows(booster, valid, data.n_valid, k);
  const auto n = static_cast<double>(data.n_valid);
  double loss = 0, hits = 0;
  for (int64_t r = 0; r < data.n_valid; ++r) {
    const float truth = data.y_valid[static_cast<size_t>(r)];
    if (k == 0) {
      loss += (out[static_cast<size_t>(r)] - truth) * (out[static_cast<size_t>(r)] - truth);
      continue;
    }
    const float* p = out.data() + static_cast<size_t>(r) * k;
    const auto label = static_cast<size_t>(truth);
    loss -= std::log(std::clamp(static_cast<double>(p[label]), 1e-15, 1.0 - 1e-15));
    hits += static_cast<size_t>(std::max_element(p, p + k) - p) == label;
  }
  if (k == 0) return {{"val_loss", loss / n}, {"val_rmse", std::sqrt(loss / n)}};
  return {{"val_loss", loss / n}, {"val_accuracy", hits / n}};
}

void save(BoosterHandle booster, const std::string& dir, const Json& config, const tabular::Prepared& data,
          int64_t rounds) {
  check(XGBoosterSaveModel(booster, (dir + "/model.ubj").c_str()), "saving the model");
  std::ofstream state(dir + "/state.json");
  state << Json{{"trainable", "xgboost"}, {"config", config}, {"round", rounds}, {"tabular", data.schema()}}.dump();
  if (!state.flush()) throw Error("xgboost: cannot write " + dir + "/state.json");
}

void xgboost_trainable(Session& session) {
  if (session.world_size() > 1) {
    throw ConfigError("xgboost trains on one rank: set resources.workers: 1 (cpus_per_worker gives it threads)");
  }
  const Json& config = session.config();
  const std::shared_ptr<const tabular::Prepared> data = tabular::prepare(session.setup());
  const int64_t rounds = config_int(config, "num_boost_round", 100, 1);
  const int64_t interval = config_int(config, "checkpoint_interval", 1, 1);
  Matrix train, valid;
  fill(train, data->x_train, data->n_train, data->n_features, &data->y_train);
  fill(valid, data->x_valid, data->n_valid, data->n_features, &data->y_valid);
  Booster booster;
  DMatrixHandle cached[2] = {train.handle, valid.handle};
  check(XGBoosterCreate(cached, 2, &booster.handle), "creating the booster");
  for (const auto& [key, value] : booster_params(config, *data, session.cpus())) {
    check(XGBoosterSetParam(booster.handle, key.c_str(), value.c_str()), ("parameter " + key).c_str());
  }
  int start = 0;
  if (session.checkpoint()) {
    check(XGBoosterLoadModel(booster.handle, (session.checkpoint()->path + "/model.ubj").c_str()),
          "loading the checkpoint");
    check(XGBoosterBoostedRounds(booster.handle, &start), "counting rounds");
  }
  for (int64_t round = start; round < rounds; ++round) {
    if (session.stop_requested()) throw TrialStopped{};
    check(XGBoosterUpdateOneIter(booster.handle, static_cast<int>(round), train.handle), "boosting");
    Json metrics = evaluate(booster.handle, valid.handle, *data);
    metrics["round"] = round + 1;
    std::string dir;
    if ((round + 1) % interval == 0 || round + 1 == rounds) {
      dir = session.make_checkpoint_dir();
      save(booster.handle, dir, config, *data, round + 1);
    }
    session.report(metrics, dir);
  }
}

// A booster loaded for predict/serve. XGBoost's C prediction buffer belongs
// to the booster, so calls are serialised.
class XgboostModel : public tabular::Model {
 public:
  XgboostModel(const std::string& dir, size_t classes) : classes_(classes) {
    check(XGBoosterCreate(nullptr, 0, &booster_.handle), "creating the booster");
    check(XGBoosterLoadModel(booster_.handle, (dir + "/model.ubj").c_str()), ("loading " + dir + "/model.ubj").c_str());
    check(XGBoosterSetParam(booster_.handle, "nthread", "1"), "parameter nthread");
  }
  std::vector<float> predict(const std::vector<float>& x, int64_t rows) const override {
    if (rows == 0) return {};
    Matrix matrix;
    fill(matrix, x, rows, static_cast<int64_t>(x.size()) / rows);
    std::lock_guard<std::mutex> lock(mutex_);
    return predict_rows(booster_.handle, matrix.handle, rows, classes_);
  }

 private:
  Booster booster_;
  size_t classes_;
  mutable std::mutex mutex_;
};

}  // namespace

void register_xgboost_trainable() {
  TrainableInfo info;
  info.in_process = true;
  info.description = "XGBoost gradient-boosted trees on the sweep's CSV (data:, preprocess:), one result per round";
  info.check_setup = tabular::check_setup;
  register_trainable("xgboost", xgboost_trainable, info);
  tabular::register_model_loader("xgboost", [](const std::string& dir, const Json& state) {
    const tabular::ModelSchema schema = tabular::read_model_schema(state.at("tabular"));
    return std::make_unique<XgboostModel>(dir, schema.task == "regression" ? 0 : schema.classes.size());
  });
}

}  // namespace tune
