// From a sweep's `data:` and `preprocess:` to the arrays a tabular trainable
// trains on: the CSV read, checked, split into training and validation rows,
// the preprocessing fitted on the training rows and applied to both.
//
//   data: {path: trips.csv, label: tip_paid, task: classification, valid_fraction: 0.2, seed: 1}
//   preprocess: [{one_hot: [payment_type]}, {standard_scaler: [fare_amount]}]
//
//   // in a trainable:
//   std::shared_ptr<const tune::tabular::Prepared> data = tune::tabular::prepare(session.setup());
//   train(data->x_train, data->y_train, data->n_train, data->n_features);
//   write_json(checkpoint_dir + "/tabular.json", data->schema());
//   // in tune predict / tune serve:
//   tune::tabular::ModelSchema model = tune::tabular::read_model_schema(read_json(".../tabular.json"));
//   std::vector<float> x = model.pipeline.transform(tune::tabular::table_from_json(instances,
//                                                       model.pipeline.input_schema()));
//
// prepare() is thread-safe and caches its result per process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "trainer/tabular/preprocess.h"
#include "trainer/tabular/table.h"

namespace tune::tabular {

// The sweep file's `data:` mapping:
//   data: {path: trips.csv, label: tip_paid, task: classification, valid_fraction: 0.2, seed: 1, features: [a, b]}
struct DataSpec {
  std::string path;                     // as given (the sweep reader makes it absolute). Required.
  std::string label;                    // the column to predict. Required.
  std::string task = "classification";  // or "regression". Default: classification
  std::vector<std::string> features;    // empty: every column but the label, in the CSV's order. Default: empty
  double valid_fraction = 0.2;          // in (0, 1). Default: 0.2
  uint64_t seed = 0;                    // the split's shuffle. Default: 0
};

// Reads and checks the `data:` mapping. Throws ConfigError::at("data.<key>",
// ...) for a missing path/label, unknown keys (did you mean), a bad task,
// valid_fraction outside (0,1), wrong types, a feature listed twice or equal
// to the label; ConfigError::at("data", ...) when `data` is not a mapping.
DataSpec read_data_spec(const Json& data);

// What a tabular trainable trains on.
struct Prepared {
  int64_t n_train = 0, n_valid = 0, n_features = 0;
  std::vector<float> x_train, x_valid;  // row-major, n x n_features, after the pipeline
  std::vector<float> y_train, y_valid;  // classification: class index as float; regression: the value
  // Classification: the label's distinct values, sorted (numerically if the
  // label column is numeric, then as number_text(), else as strings); empty
  // for regression.
  std::vector<std::string> classes;
  Pipeline pipeline;                       // fitted on the training rows only
  std::vector<std::string> feature_names;  // pipeline.output_names()
  DataSpec spec;                           // the data: mapping it came from
  int64_t rows = 0;                        // data rows in the CSV
  // The CSV data rows (0-based, header excluded) of each training /
  // validation row, in the order of x_train / x_valid.
  std::vector<int64_t> train_rows, valid_rows;

  // {"task","label","classes","features": [input column names],"input_schema":
  // [{"name","kind"}],"pipeline": pipeline.to_json(),"data": {"path","rows",
  // "train_rows","valid_rows"}} (the last two are counts). Trainables write it
  // as tabular.json into every checkpoint; read_model_schema() reads it back.
  Json schema() const;
};

// `setup` is Session::setup(): {"data": {...}, "preprocess": [...] or null, ...}.
// Reads the CSV and drops nothing silently: a row whose label is missing is
// an error naming its line. Splits the rows into train/valid by a seeded
// shuffle (std::mt19937_64 seeded with spec.seed): regression takes
// round(rows * valid_fraction) validation rows; classification splits each
// class on its own (round(class rows * valid_fraction), at least 1 and at
// most all but 1 for a class of >= 2 rows, none for a class of one row), so
// both parts see each class that has >= 2 rows. Fits the pipeline on the
// training rows, transforms both.
//
// Throws ConfigError (file:line where it applies) for: no data: mapping, the
// errors of read_data_spec() and Pipeline::from_spec()/fit(), the CSV's
// errors (read_csv), a label column absent (did you mean), a feature that is
// not a column, a missing label, regression with a non-numeric label,
// classification with fewer than 2 classes ("trips.csv: label 'tip_paid' has
// one class (1): classification needs at least 2"), fewer than 2 rows in
// either split.
//
// Cached per process (a few setups): a second call with an equal `setup`
// (and the CSV's size and mtime unchanged) returns the same shared object
// without reading again (worker processes run many trials of a sweep).
// Thread-safe: concurrent calls for one setup read the CSV once.
std::shared_ptr<const Prepared> prepare(const Json& setup);

// Everything prepare() checks, run once before any trial starts
// (TrainableInfo::check_setup): calls prepare() and keeps the result cached.
void check_setup(const Json& setup);

// The parts of a checkpoint's tabular.json that predict/serve need.
struct ModelSchema {
  std::string task, label;
  std::vector<std::string> classes;
  Pipeline pipeline;  // fitted; pipeline.input_schema() is what a request must give
};

// Reads Prepared::schema()'s JSON. Throws tune::Error for malformed JSON
// (a missing key, a wrong type, an unknown task, a malformed pipeline).
ModelSchema read_model_schema(const Json& tabular_json);

}  // namespace tune::tabular
