// Preprocessing of tabular features: a pipeline of preprocessors configured
// by the sweep file's `preprocess:` list, fitted on the training rows only,
// then applied identically at training, `tune predict` and `tune serve`.
//
//   preprocess:
//     - {simple_imputer: {columns: [fare_amount], strategy: median}}   # mean|median|most_frequent|constant (+ value:)
//     - {standard_scaler: [trip_distance, fare_amount]}
//     - {min_max_scaler: [passenger_count]}
//     - {max_abs_scaler: [tip]}
//     - {normalizer: [a, b, c]}      # each row's listed columns to unit L2 norm ({columns: [...], norm: l1|l2|max})
//     - {one_hot: [payment_type]}    # one output column per category seen in training ("payment_type=cash")
//     - {ordinal: [vendor]}          # categories sorted, index 0..k-1; unknown -> -1
//
//   Pipeline pipeline = Pipeline::from_spec(setup["preprocess"]);  // checks the spec
//   pipeline.fit(train, {"trip_distance", "fare_amount", "payment_type"});
//   std::vector<float> x = pipeline.transform(valid);   // valid.rows() x output_names().size()
//   Json saved = pipeline.to_json();                      // into the checkpoint
//   std::vector<float> same = Pipeline::from_json(saved).transform(valid);
//
// Each entry is a one-key mapping; the value is either a list of column
// names or a mapping {columns: [...], <options>}. The preprocessors:
//
//   simple_imputer  fills missing cells. strategy: mean (default), median
//                   (the middle value, or the mean of the two middle ones),
//                   most_frequent (ties: the smallest value), constant (needs
//                   value:, a number for a numeric column, text or a number
//                   for a categorical one). mean/median need numeric columns.
//                   A column without any value in the training rows cannot be
//                   filled by mean/median/most_frequent (ConfigError).
//   standard_scaler (x - mean) / std, population std (ddof 0, as scikit-learn); std 0 -> 1.
//   min_max_scaler  (x - min) / (max - min); max == min -> divides by 1 (training values map to 0).
//   max_abs_scaler  x / max|x|; max|x| == 0 -> divides by 1.
//   normalizer      per row, the listed columns divided by their l2 (default),
//                   l1 or max norm; a row whose norm is 0 stays as it is.
//                   Missing cells count as absent and stay missing. No fitted state.
//   one_hot         replaces a column by one 0/1 column per category seen in
//                   training, sorted (numerically for a numeric column), at its
//                   position, named "column=category"; an unknown category gives
//                   all zeros.
//   ordinal         replaces a column's categories by their index in the
//                   sorted list seen in training; unknown -> -1.
//
// Semantics:
//   - Steps run in order, each on the output of the previous one: a column
//     is replaced in place; one_hot replaces a column by k columns at its
//     position. A step names columns of its input, so a column one_hot has
//     replaced no longer exists for later steps. Columns no step mentions
//     pass through unchanged.
//   - Scalers and the normalizer need numeric columns and ignore missing
//     cells when fitting (they stay missing: put an imputer first to fill
//     them). one_hot and ordinal take numeric or categorical columns; a
//     missing cell in them is an error (put an imputer first).
//   - After the pipeline every output column must be numeric with no missing
//     cell. fit() raises ConfigError for a categorical column nobody encoded
//     ("column 'payment_type' is categorical: add it to one_hot or ordinal")
//     and for a missing cell no imputer fills ("trips.csv:42: column
//     'fare_amount' has a missing value: add a simple_imputer for it").
//     transform() raises ConfigError naming the row (Table::where) for a
//     missing cell the pipeline does not fill.
//
// Adding a preprocessor is one class in preprocess.cpp and one line in its
// table of names -> factories.
//
// A Pipeline is a value: copies are independent. const methods may be
// called from several threads at once; fit() needs exclusive access.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "trainer/tabular/table.h"

namespace tune::tabular {

namespace internal {
class Step;
}

class Pipeline {
 public:
  Pipeline();
  ~Pipeline();
  Pipeline(const Pipeline& other);
  Pipeline& operator=(const Pipeline& other);
  Pipeline(Pipeline&& other) noexcept;
  Pipeline& operator=(Pipeline&& other) noexcept;

  // Checks and records the steps (no data needed); null -> an empty
  // pipeline (every feature passes through; all must be numeric).
  // Throws tune::ConfigError::at(key path, "<key path>: message") with key
  // paths like "preprocess[1]", "preprocess[2].standard_scaler" or
  // "preprocess[0].simple_imputer.strategy" for: not a list, an entry that is
  // not a one-key mapping, an unknown preprocessor (with did-you-mean), empty
  // or non-string column lists, a column named twice in one step, unknown or
  // bad options (strategy not in the list, constant without value, norm not
  // l1/l2/max).
  static Pipeline from_spec(const Json& preprocess);

  // The known preprocessor names ("simple_imputer", "standard_scaler", ...).
  static std::vector<std::string> preprocessor_names();

  // Column names the steps mention, each once, in the order first mentioned
  // (to check against the CSV before training).
  std::vector<std::string> mentioned_columns() const;

  // Fits every step on `train` restricted to `features` (the input columns,
  // in this order; each must be a column of `train`). Refitting replaces the
  // earlier fit. Throws ConfigError::at(the step's key path, ...) for a
  // mentioned column that is not in the step's input ("preprocess[0].
  // standard_scaler: no column 'fare' in trips.csv (did you mean
  // 'fare_amount'?)", or "... column 'x' is not one of the features"), a
  // scaler on a categorical column, an imputer that cannot fill; and plain
  // ConfigErrors for a feature missing from `train`, and for the output
  // checks described above. On a throw the pipeline is left unfitted.
  void fit(const Table& train, const std::vector<std::string>& features);
  bool fitted() const;

  // The input columns (name + kind) the fitted pipeline expects, in order.
  // Empty before fit().
  const std::vector<ColumnSchema>& input_schema() const;

  // Names of the output columns, in order (e.g. "trip_distance",
  // "payment_type=cash"). Empty before fit().
  std::vector<std::string> output_names() const;

  // Rows of `table` -> row-major float32, rows() x output_names().size().
  // `table` needs every input column (ConfigError naming it otherwise);
  // extra columns are ignored. A numeric column given as categorical text is
  // an error naming the first row whose text is not a number; a categorical
  // column given as numbers uses their number_text(). A missing cell the
  // pipeline does not fill is an error naming its row. Throws tune::Error if
  // the pipeline is not fitted.
  std::vector<float> transform(const Table& table) const;

  // The fitted state as JSON and back (saved in every checkpoint as part of
  // tabular.json); from_json(to_json()) transforms identically. to_json()
  // throws tune::Error if not fitted; from_json throws tune::Error for
  // malformed state.
  Json to_json() const;
  static Pipeline from_json(const Json& state);

 private:
  std::vector<std::unique_ptr<internal::Step>> steps_;
  std::vector<ColumnSchema> input_schema_;
  std::vector<std::string> output_names_;
  bool fitted_ = false;
};

}  // namespace tune::tabular
