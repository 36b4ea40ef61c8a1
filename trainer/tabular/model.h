// A trained tabular model, loaded from a checkpoint, that predicts from raw
// rows: the fitted preprocessors saved with it run first, then the model.
// `tune predict` and `tune serve` use it for every tabular trainable
// (tabular_mlp, xgboost); each trainable registers how its model is loaded.
//
//   tune::tabular::LoadedModel model = tune::tabular::load_model("trial_00003/checkpoint_000010");
//   Table rows = tune::tabular::read_csv("new.csv");
//   Json predictions = tune::tabular::predict_json(model, rows);   // one per row
//
// A tabular checkpoint is a directory with state.json holding
// {"trainable", "config", "tabular": Prepared::schema()} and the model's own
// files. Thread safety: predict_json and Model::predict may be called from
// several threads on one LoadedModel.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "trainer/tabular/dataset.h"
#include "trainer/tabular/table.h"

namespace tune::tabular {

// The model part: rows already through the pipeline.
class Model {
 public:
  virtual ~Model() = default;
  // `x` is rows x features, row-major. Returns rows x outputs, row-major:
  // classification: each class's probability (outputs = classes, in the
  // schema's class order); regression: the value (outputs = 1). Thread safe.
  virtual std::vector<float> predict(const std::vector<float>& x, int64_t rows) const = 0;
};

// Builds the model of `checkpoint_dir` (state.json already read into `state`).
// Throws tune::Error naming the file when it is missing or unreadable.
using ModelLoader = std::function<std::unique_ptr<Model>(const std::string& checkpoint_dir, const Json& state)>;

// Registers the loader for checkpoints of `trainable`. Thread safe; a second
// registration of a name replaces the first.
void register_model_loader(const std::string& trainable, ModelLoader loader);

struct LoadedModel {
  std::string trainable;
  Json config;            // the trial's config
  std::string checkpoint; // its directory
  Json tabular;           // Prepared::schema() as saved
  ModelSchema schema;     // task, label, classes, the fitted pipeline
  std::shared_ptr<const Model> model;
};

// True when `checkpoint_dir`/state.json describes a tabular model.
bool is_tabular_checkpoint(const std::string& checkpoint_dir);

// Loads a tabular checkpoint. Throws tune::NotFoundError when there is no
// state.json, tune::Error when it is not a tabular checkpoint or no loader is
// registered for its trainable.
LoadedModel load_model(const std::string& checkpoint_dir);

// Predictions for raw rows (every input column of the pipeline; others
// ignored): classification -> {"label": <class as in the CSV: a number when
// the label column is numeric, else a string>, "probabilities": {class: p}},
// regression -> a number. Throws tune::ConfigError naming the row for rows
// the pipeline cannot take (missing column, text in a numeric column, a
// missing value no imputer fills).
Json predict_json(const LoadedModel& model, const Table& rows);

// The same as CSV: header "row,prediction" + for classification
// ",probability" (of the predicted class) + ",p_<class>" per class, then the
// label column's value when `rows` has it. Returns the accuracy
// (classification) or RMSE (regression) against that label, NaN without it.
double write_predictions_csv(const LoadedModel& model, const Table& rows, std::ostream& out);

}  // namespace tune::tabular
