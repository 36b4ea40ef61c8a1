#include "trainer/tabular/preprocess.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "base/error.h"
#include "base/names.h"
#include "base/options.h"
#include "trainer/tabular/preprocess_step.h"

namespace tune::tabular {

namespace {

using internal::Frame;
using internal::Step;

[[noreturn]] void spec_error(const std::string& path, const std::string& message) {
  throw ConfigError::at(path, path + ": " + message);
}

std::vector<std::string> read_columns(const Json& list, const std::string& path) {
  if (!list.is_array()) spec_error(path, "must be a list of column names, got " + json_kind(list));
  if (list.empty()) spec_error(path, "must name at least one column");
  std::vector<std::string> columns;
  for (size_t j = 0; j < list.size(); ++j) {
    const std::string at = path + "[" + std::to_string(j) + "]";
    if (!list[j].is_string() || list[j].get<std::string>().empty())
      spec_error(at, "a column name must be a non-empty string, got " + list[j].dump());
    const std::string name = list[j].get<std::string>();
    if (std::find(columns.begin(), columns.end(), name) != columns.end())
      spec_error(at, "column '" + name + "' is listed twice");
    columns.push_back(name);
  }
  return columns;
}

// The step's columns and options from its value: a list, or {columns: [...], <options>}.
void read_step_value(Step& step, const Json& value) {
  Json options = Json::object();
  if (value.is_array()) {
    step.columns = read_columns(value, step.path);
  } else if (value.is_object()) {
    if (!value.contains("columns")) spec_error(step.path, "missing columns: (the list of columns it applies to)");
    step.columns = read_columns(value.at("columns"), step.path + ".columns");
    options = value;
    options.erase("columns");
    std::vector<std::string> keys = step.option_keys();
    for (const auto& item : options.items()) {
      if (std::find(keys.begin(), keys.end(), item.key()) != keys.end()) continue;
      keys.insert(keys.begin(), "columns");
      const std::string at = step.path + "." + item.key();
      throw ConfigError::at_key(at, step.path + ": unknown option '" + item.key() + "'" +
                                        did_you_mean_or_list(item.key(), keys, "valid keys"));
    }
  } else {
    spec_error(step.path, "must be a list of column names or a mapping {columns: [...], ...}, got " + json_kind(value));
  }
  OptionStyle style;
  style.label = step.path + ".";
  step.configure(OptionReader(options, step.path, style));
}

std::unique_ptr<Step> parse_step(const Json& entry, size_t index) {
  const std::string at = "preprocess[" + std::to_string(index) + "]";
  if (!entry.is_object() || entry.size() != 1)
    spec_error(at,
               "must be a one-key mapping like {standard_scaler: [x, y]}, got " +
                   (entry.is_object() ? "a mapping with " + std::to_string(entry.size()) + " keys" : json_kind(entry)));
  const std::string name = entry.begin().key();
  const auto& types = internal::step_types();
  auto type = std::find_if(types.begin(), types.end(), [&](const internal::StepType& t) { return t.name == name; });
  if (type == types.end())
    throw ConfigError::at_key(at + "." + name, at + ": unknown preprocessor '" + name + "'" +
                                                   did_you_mean_or_list(name, Pipeline::preprocessor_names(), "known"));
  std::unique_ptr<Step> step = type->make();
  step->path = at + "." + name;
  step->spec = entry;
  read_step_value(*step, entry.begin().value());
  return step;
}

// After the pipeline: every column numeric, no missing cell, names unique.
void check_output(const Frame& frame) {
  std::set<std::string> names;
  for (const Column& column : frame.columns) {
    if (column.kind != Kind::kNumeric)
      throw ConfigError("column '" + column.name + "' is categorical: add it to one_hot or ordinal");
    auto missing = std::find(column.missing.begin(), column.missing.end(), 1);
    if (missing != column.missing.end())
      internal::missing_value_error(frame, column.name, missing - column.missing.begin());
    if (!names.insert(column.name).second)
      throw ConfigError("two output columns are named '" + column.name + "': rename the input column");
  }
}

// A copy of `column` as `kind` (a predict CSV may read a column differently
// from the training one): numbers become their text, text must be numbers.
Column as_kind(const Column& column, Kind kind, const Table& table) {
  if (column.kind == kind) return column;
  Column out;
  out.name = column.name;
  out.kind = kind;
  out.missing = column.missing;
  for (int64_t i = 0; i < column.size(); ++i) {
    if (kind == Kind::kCategorical) {
      out.strings.push_back(column.missing[i] ? "" : number_text(column.numbers[i]));
      continue;
    }
    double x = std::nan("");
    if (!column.missing[i] && !parse_number(column.strings[i], &x))
      throw ConfigError(table.where(i) + ": column '" + column.name + "' must be a number, got '" + column.strings[i] +
                        "'");
    out.numbers.push_back(x);
  }
  return out;
}

std::vector<ColumnSchema> read_schema(const Json& list) {
  if (!list.is_array()) internal::bad_state("input_schema must be a list");
  std::vector<ColumnSchema> schema;
  for (const Json& item : list)
    schema.push_back({item.at("name").get<std::string>(), kind_from_name(item.at("kind").get<std::string>())});
  return schema;
}

}  // namespace

Pipeline::Pipeline() = default;
Pipeline::~Pipeline() = default;
Pipeline::Pipeline(Pipeline&& other) noexcept = default;
Pipeline& Pipeline::operator=(Pipeline&& other) noexcept = default;

Pipeline::Pipeline(const Pipeline& other)
    : input_schema_(other.input_schema_), output_names_(other.output_names_), fitted_(other.fitted_) {
  for (const auto& step : other.steps_) steps_.push_back(step->clone());
}

Pipeline& Pipeline::operator=(const Pipeline& other) {
  if (this != &other) *this = Pipeline(other);
  return *this;
}

Pipeline Pipeline::from_spec(const Json& preprocess) {
  Pipeline pipeline;
  if (preprocess.is_null()) return pipeline;
  if (!preprocess.is_array())
    throw ConfigError::at("preprocess", "preprocess must be a list of preprocessors, got " + json_kind(preprocess));
  for (size_t i = 0; i < preprocess.size(); ++i) pipeline.steps_.push_back(parse_step(preprocess[i], i));
  return pipeline;
}

std::vector<std::string> Pipeline::preprocessor_names() {
  std::vector<std::string> names;
  for (const auto& type : internal::step_types()) names.push_back(type.name);
  return names;
}

std::vector<std::string> Pipeline::mentioned_columns() const {
  std::vector<std::string> names;
  for (const auto& step : steps_)
    for (const std::string& name : step->columns)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  return names;
}

void Pipeline::fit(const Table& train, const std::vector<std::string>& features) {
  fitted_ = false;
  input_schema_.clear();
  output_names_.clear();
  Frame frame;
  frame.table = &train;
  frame.features = &features;
  frame.fitting = true;
  for (const std::string& name : features) {
    const Column* column = train.find(name);
    if (!column)
      throw ConfigError("no column '" + name + "' in " + train.source + did_you_mean_column(name, train.names()));
    if (std::any_of(input_schema_.begin(), input_schema_.end(), [&](const ColumnSchema& s) { return s.name == name; }))
      throw ConfigError("feature '" + name + "' is listed twice");
    input_schema_.push_back({name, column->kind});
    frame.columns.push_back(*column);
  }
  for (const auto& step : steps_) {
    step->fit(frame);
    step->apply(frame);
  }
  check_output(frame);
  output_names_ = frame.names();
  fitted_ = true;
}

bool Pipeline::fitted() const { return fitted_; }

const std::vector<ColumnSchema>& Pipeline::input_schema() const { return input_schema_; }

std::vector<std::string> Pipeline::output_names() const { return output_names_; }

std::vector<float> Pipeline::transform(const Table& table) const {
  if (!fitted_) throw Error("Pipeline::transform: the pipeline is not fitted");
  Frame frame;
  frame.table = &table;
  for (const ColumnSchema& schema : input_schema_) {
    const Column* column = table.find(schema.name);
    if (!column)
      throw ConfigError(table.source + ": no column '" + schema.name + "', which the model needs" +
                        did_you_mean_column(schema.name, table.names()));
    frame.columns.push_back(as_kind(*column, schema.kind, table));
  }
  for (const auto& step : steps_) step->apply(frame);
  check_output(frame);
  const size_t rows = static_cast<size_t>(table.rows()), width = frame.columns.size();
  std::vector<float> out(rows * width);
  for (size_t j = 0; j < width; ++j) {
    const std::vector<double>& numbers = frame.columns[j].numbers;
    for (size_t i = 0; i < rows; ++i) {
      const double value = numbers[i];
      if (std::fabs(value) > std::numeric_limits<float>::max()) {
        throw ConfigError(table.where(static_cast<int64_t>(i)) + ": column '" + output_names_[j] + "' is " +
                          number_text(value) + " after preprocessing, beyond float32: scale it (e.g. standard_scaler)");
      }
      out[i * width + j] = static_cast<float>(value);
    }
  }
  return out;
}

Json Pipeline::to_json() const {
  if (!fitted_) throw Error("Pipeline::to_json: the pipeline is not fitted");
  Json schema = Json::array(), steps = Json::array();
  for (const ColumnSchema& column : input_schema_)
    schema.push_back({{"name", column.name}, {"kind", kind_name(column.kind)}});
  for (const auto& step : steps_) steps.push_back({{"spec", step->spec}, {"state", step->state()}});
  return {{"version", 1}, {"input_schema", schema}, {"steps", steps}, {"outputs", output_names_}};
}

Pipeline Pipeline::from_json(const Json& state) {
  try {
    if (!state.is_object() || state.value("version", Json()) != Json(1))
      internal::bad_state("expected an object with version 1");
    Pipeline pipeline;
    const Json& steps = state.at("steps");
    if (!steps.is_array()) internal::bad_state("steps must be a list");
    for (size_t i = 0; i < steps.size(); ++i) {
      pipeline.steps_.push_back(parse_step(steps[i].at("spec"), i));
      pipeline.steps_.back()->load(steps[i].at("state"));
    }
    pipeline.input_schema_ = read_schema(state.at("input_schema"));
    // The output names follow from the steps: run them on no rows.
    Table empty;
    empty.source = "state";
    Frame frame;
    frame.table = &empty;
    for (const ColumnSchema& column : pipeline.input_schema_)
      frame.columns.push_back({column.name, column.kind, {}, {}, {}});
    for (const auto& step : pipeline.steps_) step->apply(frame);
    pipeline.output_names_ = frame.names();
    if (Json(pipeline.output_names_) != state.at("outputs")) internal::bad_state("outputs do not match the steps");
    pipeline.fitted_ = true;
    return pipeline;
  } catch (const Json::exception& e) {
    throw Error(std::string("malformed preprocessing state: ") + e.what());
  } catch (const ConfigError& e) {
    throw Error(std::string("malformed preprocessing state: ") + e.what());
  }
}

}  // namespace tune::tabular
