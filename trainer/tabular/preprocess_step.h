// Internal to the preprocessing pipeline (preprocess.h): the frame of columns
// a pipeline works on, the Step each preprocessor implements, and the table
// of preprocessors by name. The steps themselves are in preprocess_steps.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/json.h"
#include "base/options.h"
#include "trainer/tabular/table.h"

namespace tune::tabular::internal {

// The columns while the pipeline runs: the input columns, replaced step by
// step. Rows stay those of `table`, so table->where(row) names a row.
struct Frame {
  std::vector<Column> columns;
  const Table* table = nullptr;
  const std::vector<std::string>* features = nullptr;  // fit only: the input columns asked for
  bool fitting = false;

  int64_t rows() const { return columns.empty() ? 0 : columns.front().size(); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Column& column : columns) out.push_back(column.name);
    return out;
  }
  // Why a step finds no column `name` (fit: the table or the features lack it).
  std::string absent(const std::string& name) const {
    if (!table->find(name))
      return "no column '" + name + "' in " + table->source + did_you_mean_column(name, table->names());
    if (features && std::find(features->begin(), features->end(), name) == features->end())
      return "column '" + name + "' is not one of the features";
    return "no column '" + name + "' here: an earlier step replaced it";
  }
};

// Throws the one-line error for a missing cell the pipeline cannot fill.
[[noreturn]] void missing_value_error(const Frame& frame, const std::string& column, int64_t row);
// Throws tune::Error for a saved state that cannot be loaded.
[[noreturn]] void bad_state(const std::string& message);
// A saved list of `size` numbers (bad_state otherwise).
std::vector<double> numbers_of(const Json& list, size_t size, const std::string& what);

// One preprocessor. The base holds what every step has: its name, key path,
// the columns it names; subclasses read their options, fit and apply.
class Step {
 public:
  virtual ~Step() = default;
  virtual std::unique_ptr<Step> clone() const = 0;
  // Option keys besides `columns`, read by configure() (also for the list form, with none given).
  virtual std::vector<std::string> option_keys() const { return {}; }
  virtual void configure(const OptionReader& options) { (void)options; }
  // Learns from the frame (the training rows); apply() runs next on the same frame.
  virtual void fit(const Frame& frame) = 0;
  virtual void apply(Frame& frame) const = 0;
  virtual Json state() const = 0;
  // The inverse of state(); tune::Error for a malformed one.
  virtual void load(const Json& state) = 0;

  std::string path;  // "preprocess[1].standard_scaler"
  Json spec;         // the entry as written: {"standard_scaler": [...]}
  std::vector<std::string> columns;

 protected:
  [[noreturn]] void fail(const std::string& message) const { throw ConfigError::at(path, path + ": " + message); }

  size_t locate(const Frame& frame, const std::string& name) const {
    for (size_t i = 0; i < frame.columns.size(); ++i)
      if (frame.columns[i].name == name) return i;
    fail(frame.absent(name));
  }
  // A column that must be numeric (scalers, the normalizer).
  size_t locate_numeric(const Frame& frame, const std::string& name) const {
    const size_t i = locate(frame, name);
    if (frame.columns[i].kind != Kind::kNumeric)
      fail("column '" + name + "' is categorical: " + path.substr(path.rfind('.') + 1) +
           " needs numbers (encode it with one_hot or ordinal first)");
    return i;
  }
};

// Step::clone() for a final class T deriving from Base.
template <class T, class Base = Step>
class Cloneable : public Base {
 public:
  std::unique_ptr<Step> clone() const override { return std::make_unique<T>(static_cast<const T&>(*this)); }
};

struct StepType {
  std::string name;
  std::unique_ptr<Step> (*make)();
};

// Every preprocessor, by the name a sweep file gives it.
const std::vector<StepType>& step_types();

}  // namespace tune::tabular::internal
