// The preprocessors of a tabular pipeline (preprocess.h lists them and their
// options): each is a Step (preprocess_step.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "base/error.h"
#include "base/names.h"
#include "base/options.h"
#include "trainer/tabular/preprocess_step.h"

namespace tune::tabular::internal {

[[noreturn]] void missing_value_error(const Frame& frame, const std::string& column, int64_t row) {
  const std::string where = frame.table->where(row) + ": column '" + column + "' has a missing value";
  if (frame.fitting) throw ConfigError(where + ": add a simple_imputer for it");
  throw ConfigError(where + " and the preprocessing has no simple_imputer for it");
}

[[noreturn]] void bad_state(const std::string& message) { throw Error("malformed preprocessing state: " + message); }

std::vector<double> numbers_of(const Json& list, size_t size, const std::string& what) {
  if (!list.is_array() || list.size() != size)
    bad_state(what + " must be a list of " + std::to_string(size) + " numbers");
  std::vector<double> out;
  for (const Json& x : list) {
    if (!x.is_number()) bad_state(what + " must hold numbers");
    out.push_back(x.get<double>());
  }
  return out;
}

namespace {

// ---- simple_imputer -------------------------------------------------------

// The most frequent of sorted values; ties go to the smallest.
template <class T>
T most_frequent(const std::vector<T>& sorted) {
  T best = sorted.front();
  size_t best_count = 0;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    if (j - i > best_count) best = sorted[i], best_count = j - i;
    i = j;
  }
  return best;
}

double median(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

class SimpleImputer : public Cloneable<SimpleImputer> {
 public:
  std::vector<std::string> option_keys() const override { return {"strategy", "value"}; }

  void configure(const OptionReader& options) override {
    strategy_ = options.string("strategy", "mean", {"mean", "median", "most_frequent", "constant"});
    if (strategy_ == "constant" && !options.has("value"))
      throw ConfigError::at(options.path_of("strategy"), path + ": strategy constant needs value: (the fill value)");
    if (strategy_ != "constant" && options.has("value"))
      throw ConfigError::at(options.path_of("value"), path + ": value: is only used with strategy: constant");
    if (options.has("value")) {
      const Json& value = options.raw("value");
      if (!value.is_number() && !value.is_string()) options.fail("value", "must be a number or a text");
      value_ = value;
    }
  }

  void fit(const Frame& frame) override {
    fill_.clear();
    for (const std::string& name : columns) fill_.push_back(fill_for(frame.columns[locate(frame, name)]));
  }

  void apply(Frame& frame) const override {
    for (size_t j = 0; j < columns.size(); ++j) {
      Column& column = frame.columns[locate(frame, columns[j])];
      const bool numeric = column.kind == Kind::kNumeric;
      if (numeric != fill_[j].is_number()) bad_state(path + ": the fill value's kind differs from the column's");
      for (int64_t i = 0; i < column.size(); ++i) {
        if (!column.missing[i]) continue;
        column.missing[i] = 0;
        if (numeric)
          column.numbers[i] = fill_[j].get<double>();
        else
          column.strings[i] = fill_[j].get<std::string>();
      }
    }
  }

  Json state() const override { return {{"fill", fill_}}; }

  void load(const Json& state) override {
    const Json& fill = state.at("fill");
    if (!fill.is_array() || fill.size() != columns.size()) bad_state(path + ": fill must have one value per column");
    fill_.clear();
    for (const Json& value : fill) {
      if (!value.is_number() && !value.is_string()) bad_state(path + ": a fill value must be a number or a string");
      fill_.push_back(value);
    }
  }

 private:
  Json fill_for(const Column& column) const {
    const bool numeric = column.kind == Kind::kNumeric;
    if (strategy_ == "constant") return constant_for(column);
    if (!numeric && strategy_ != "most_frequent")
      fail("strategy " + strategy_ + " needs numbers; column '" + column.name +
           "' is categorical (use most_frequent or constant)");
    std::vector<double> numbers;
    std::vector<std::string> strings;
    for (int64_t i = 0; i < column.size(); ++i) {
      if (column.missing[i]) continue;
      if (numeric)
        numbers.push_back(column.numbers[i]);
      else
        strings.push_back(column.strings[i]);
    }
    if (numbers.empty() && strings.empty())
      fail("column '" + column.name + "' has no value in the training rows to compute the " + strategy_ +
           " from (use strategy constant)");
    if (!numeric) {
      std::sort(strings.begin(), strings.end());
      return most_frequent(strings);
    }
    std::sort(numbers.begin(), numbers.end());
    if (strategy_ == "median") return median(numbers);
    if (strategy_ == "most_frequent") return most_frequent(numbers);
    double sum = 0;
    for (double x : numbers) sum += x;
    return sum / static_cast<double>(numbers.size());
  }

  Json constant_for(const Column& column) const {
    if (column.kind == Kind::kCategorical) return value_.is_string() ? value_ : Json(number_text(value_.get<double>()));
    double number = 0;
    if (value_.is_number()) return value_.get<double>();
    if (!parse_number(value_.get<std::string>(), &number))
      fail("value '" + value_.get<std::string>() + "' is not a number, but column '" + column.name + "' is numeric");
    return number;
  }

  std::string strategy_;
  Json value_;
  std::vector<Json> fill_;  // per column: a number (numeric column) or a string
};

// ---- scalers ----------------------------------------------------------------

// x -> (x - offset) / scale per column; subclasses say how offset and scale
// come from a column's present training values.
class Scaler : public Step {
 public:
  void fit(const Frame& frame) override {
    offset_.clear();
    scale_.clear();
    unit_.clear();
    for (const std::string& name : columns) {
      const Column& column = frame.columns[locate_numeric(frame, name)];
      std::vector<double> values;
      for (int64_t i = 0; i < column.size(); ++i)
        if (!column.missing[i]) values.push_back(column.numbers[i]);
      double offset = 0, scale = 1, unit = 1;
      if (!values.empty()) fit_values(values, &offset, &scale);
      if (!std::isfinite(scale) || !std::isfinite(offset)) {
        // Sums (or the range) of values near DBL_MAX overflow. Every scaler's
        // offset and scale grow linearly with the data: fit it in units of
        // its largest magnitude, and apply it in those units.
        for (double x : values) unit = std::max(unit, std::fabs(x));
        for (double& x : values) x /= unit;
        fit_values(values, &offset, &scale);
      }
      offset_.push_back(offset);
      unit_.push_back(unit);
      scale_.push_back(scale == 0 || !std::isfinite(scale) ? 1 : scale);  // a constant column
    }
  }

  void apply(Frame& frame) const override {
    for (size_t j = 0; j < columns.size(); ++j) {
      Column& column = frame.columns[locate_numeric(frame, columns[j])];
      for (double& x : column.numbers) x = (x / unit_[j] - offset_[j]) / scale_[j];  // NaN (missing) stays NaN
    }
  }

  Json state() const override { return {{"offset", offset_}, {"scale", scale_}, {"unit", unit_}}; }

  void load(const Json& state) override {
    offset_ = numbers_of(state.at("offset"), columns.size(), path + ": offset");
    scale_ = numbers_of(state.at("scale"), columns.size(), path + ": scale");
    unit_ = state.contains("unit") ? numbers_of(state.at("unit"), columns.size(), path + ": unit")
                                   : std::vector<double>(columns.size(), 1.0);
  }

 protected:
  virtual void fit_values(const std::vector<double>& values, double* offset, double* scale) const = 0;

 private:
  // The fit's unit per column: 1, or the largest magnitude when the values
  // were too large to fit directly; applied as (x / unit - offset) / scale.
  std::vector<double> offset_, scale_, unit_;
};

class StandardScaler : public Cloneable<StandardScaler, Scaler> {
 protected:
  void fit_values(const std::vector<double>& values, double* offset, double* scale) const override {
    const double n = static_cast<double>(values.size());
    double mean = 0, squares = 0;
    for (double x : values) mean += x;
    mean /= n;
    for (double x : values) squares += (x - mean) * (x - mean);
    *offset = mean;
    *scale = std::sqrt(squares / n);  // the population std (ddof 0), as scikit-learn
  }
};

class MinMaxScaler : public Cloneable<MinMaxScaler, Scaler> {
 protected:
  void fit_values(const std::vector<double>& values, double* offset, double* scale) const override {
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    *offset = *low;
    *scale = *high - *low;
  }
};

class MaxAbsScaler : public Cloneable<MaxAbsScaler, Scaler> {
 protected:
  void fit_values(const std::vector<double>& values, double* offset, double* scale) const override {
    *offset = 0;
    *scale = 0;
    for (double x : values) *scale = std::max(*scale, std::fabs(x));
  }
};

// ---- normalizer -----------------------------------------------------------

class Normalizer : public Cloneable<Normalizer> {
 public:
  std::vector<std::string> option_keys() const override { return {"norm"}; }
  void configure(const OptionReader& options) override { norm_ = options.string("norm", "l2", {"l1", "l2", "max"}); }

  void fit(const Frame& frame) override {
    for (const std::string& name : columns) locate_numeric(frame, name);
  }

  void apply(Frame& frame) const override {
    std::vector<Column*> listed;
    for (const std::string& name : columns) listed.push_back(&frame.columns[locate_numeric(frame, name)]);
    for (int64_t i = 0; i < frame.rows(); ++i) {
      double norm = 0;
      for (const Column* column : listed) {
        if (column->missing[i]) continue;
        const double x = std::fabs(column->numbers[i]);
        if (norm_ == "l1")
          norm += x;
        else if (norm_ == "l2")
          norm += x * x;
        else
          norm = std::max(norm, x);
      }
      if (norm_ == "l2") norm = std::sqrt(norm);
      if (norm == 0) continue;
      for (Column* column : listed) column->numbers[i] /= norm;
    }
  }

  Json state() const override { return Json::object(); }
  void load(const Json&) override {}

 private:
  std::string norm_ = "l2";
};

// ---- encoders ----------------------------------------------------------------

// The sorted categories of one column as seen in training.
struct Categories {
  Kind kind = Kind::kCategorical;
  std::vector<double> numbers;
  std::vector<std::string> strings;

  size_t size() const { return kind == Kind::kNumeric ? numbers.size() : strings.size(); }
  std::string text(size_t k) const { return kind == Kind::kNumeric ? number_text(numbers[k]) : strings[k]; }

  // The category index of a (present) cell, or -1 if unseen.
  int64_t index(const Column& column, int64_t row) const {
    if (kind == Kind::kNumeric) {
      const double x = column.numbers[row];
      auto it = std::lower_bound(numbers.begin(), numbers.end(), x);
      return it != numbers.end() && *it == x ? it - numbers.begin() : -1;
    }
    const std::string& s = column.strings[row];
    auto it = std::lower_bound(strings.begin(), strings.end(), s);
    return it != strings.end() && *it == s ? it - strings.begin() : -1;
  }

  static Categories of(const Column& column) {
    Categories out;
    out.kind = column.kind;
    for (int64_t i = 0; i < column.size(); ++i) {
      if (column.missing[i]) continue;
      if (column.kind == Kind::kNumeric)
        out.numbers.push_back(column.numbers[i]);
      else
        out.strings.push_back(column.strings[i]);
    }
    std::sort(out.numbers.begin(), out.numbers.end());
    out.numbers.erase(std::unique(out.numbers.begin(), out.numbers.end()), out.numbers.end());
    std::sort(out.strings.begin(), out.strings.end());
    out.strings.erase(std::unique(out.strings.begin(), out.strings.end()), out.strings.end());
    return out;
  }

  Json to_json() const {
    return {{"kind", kind_name(kind)}, {"values", kind == Kind::kNumeric ? Json(numbers) : Json(strings)}};
  }

  static Categories from_json(const Json& json) {
    Categories out;
    out.kind = kind_from_name(json.at("kind").get<std::string>());
    const Json& values = json.at("values");
    if (!values.is_array()) bad_state("categories must be a list");
    if (out.kind == Kind::kNumeric)
      out.numbers = numbers_of(values, values.size(), "categories");
    else
      out.strings = values.get<std::vector<std::string>>();
    const bool sorted = std::is_sorted(out.numbers.begin(), out.numbers.end()) &&
                        std::is_sorted(out.strings.begin(), out.strings.end());
    if (!sorted) bad_state("categories must be sorted");
    return out;
  }
};

// one_hot and ordinal: categories per column; subclasses say what replaces
// the column.
class Encoder : public Step {
 public:
  void fit(const Frame& frame) override {
    categories_.clear();
    for (const std::string& name : columns) categories_.push_back(Categories::of(frame.columns[locate(frame, name)]));
  }

  void apply(Frame& frame) const override {
    for (size_t j = 0; j < columns.size(); ++j) {
      const size_t at = locate(frame, columns[j]);
      const Column& column = frame.columns[at];
      if (column.kind != categories_[j].kind) bad_state(path + ": the categories' kind differs from the column's");
      auto missing = std::find(column.missing.begin(), column.missing.end(), 1);
      if (missing != column.missing.end()) missing_value_error(frame, column.name, missing - column.missing.begin());
      std::vector<Column> encoded = encode(column, categories_[j]);
      frame.columns.erase(frame.columns.begin() + static_cast<std::ptrdiff_t>(at));
      frame.columns.insert(frame.columns.begin() + static_cast<std::ptrdiff_t>(at),
                           std::make_move_iterator(encoded.begin()), std::make_move_iterator(encoded.end()));
    }
  }

  Json state() const override {
    Json list = Json::array();
    for (const Categories& categories : categories_) list.push_back(categories.to_json());
    return {{"categories", list}};
  }

  void load(const Json& state) override {
    const Json& list = state.at("categories");
    if (!list.is_array() || list.size() != columns.size()) bad_state(path + ": one category list per column");
    categories_.clear();
    for (const Json& categories : list) categories_.push_back(Categories::from_json(categories));
  }

 protected:
  virtual std::vector<Column> encode(const Column& column, const Categories& categories) const = 0;

  static Column numeric_column(std::string name, int64_t rows, double fill) {
    Column out;
    out.name = std::move(name);
    out.numbers.assign(static_cast<size_t>(rows), fill);
    out.missing.assign(static_cast<size_t>(rows), 0);
    return out;
  }

 private:
  std::vector<Categories> categories_;
};

class OneHot : public Cloneable<OneHot, Encoder> {
 protected:
  std::vector<Column> encode(const Column& column, const Categories& categories) const override {
    std::vector<Column> out;
    for (size_t k = 0; k < categories.size(); ++k)
      out.push_back(numeric_column(column.name + "=" + categories.text(k), column.size(), 0));
    for (int64_t i = 0; i < column.size(); ++i) {
      const int64_t k = categories.index(column, i);
      if (k >= 0) out[static_cast<size_t>(k)].numbers[i] = 1;
    }
    return out;
  }
};

class Ordinal : public Cloneable<Ordinal, Encoder> {
 protected:
  std::vector<Column> encode(const Column& column, const Categories& categories) const override {
    Column out = numeric_column(column.name, column.size(), 0);
    for (int64_t i = 0; i < column.size(); ++i) out.numbers[i] = static_cast<double>(categories.index(column, i));
    return {out};
  }
};

// ---- the table of preprocessors -------------------------------------------------

template <class T>
std::unique_ptr<Step> make_step() {
  return std::make_unique<T>();
}

}  // namespace

const std::vector<StepType>& step_types() {
  static const std::vector<StepType> types = {
      {"simple_imputer", make_step<SimpleImputer>},
      {"standard_scaler", make_step<StandardScaler>},
      {"min_max_scaler", make_step<MinMaxScaler>},
      {"max_abs_scaler", make_step<MaxAbsScaler>},
      {"normalizer", make_step<Normalizer>},
      {"one_hot", make_step<OneHot>},
      {"ordinal", make_step<Ordinal>},
  };
  return types;
}

}  // namespace tune::tabular::internal
