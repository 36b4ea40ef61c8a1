#include "trainer/tabular/dataset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <mutex>
#include <random>

#include "base/error.h"
#include "base/names.h"
#include "base/options.h"

namespace tune::tabular {
namespace {

const std::vector<std::string> kDataKeys = {"path", "label", "task", "features", "valid_fraction", "seed"};

std::string required_string(const OptionReader& data, const std::string& key, const std::string& what) {
  if (!data.has(key)) throw ConfigError::at(data.path_of(key), "data." + key + " is missing (" + what + ")");
  return data.string(key, "");
}

std::vector<std::string> read_features(const OptionReader& data, const std::string& label) {
  std::vector<std::string> features;
  if (!data.has("features")) return features;
  const Json& list = data.raw("features");
  if (!list.is_array() || list.empty()) data.fail("features", "must be a non-empty list of column names");
  for (size_t j = 0; j < list.size(); ++j) {
    const std::string at = "data.features[" + std::to_string(j) + "]";
    if (!list[j].is_string() || list[j].get<std::string>().empty())
      throw ConfigError::at(at, at + " must be a column name, got " + list[j].dump());
    const std::string name = list[j].get<std::string>();
    if (name == label) throw ConfigError::at(at, at + ": '" + name + "' is the label; it cannot be a feature");
    if (std::find(features.begin(), features.end(), name) != features.end())
      throw ConfigError::at(at, at + ": '" + name + "' is listed twice");
    features.push_back(name);
  }
  return features;
}

// The rows `rows` of `table`'s columns `names` (lines kept, for messages).
Table take(const Table& table, const std::vector<std::string>& names, const std::vector<int64_t>& rows) {
  Table out;
  out.source = table.source;
  for (int64_t r : rows) out.lines.push_back(table.lines[static_cast<size_t>(r)]);
  for (const std::string& name : names) {
    const Column& column = *table.find(name);
    Column part{column.name, column.kind, {}, {}, {}};
    for (int64_t r : rows) {
      part.missing.push_back(column.missing[static_cast<size_t>(r)]);
      if (column.kind == Kind::kNumeric)
        part.numbers.push_back(column.numbers[static_cast<size_t>(r)]);
      else
        part.strings.push_back(column.strings[static_cast<size_t>(r)]);
    }
    out.columns.push_back(std::move(part));
  }
  return out;
}

// The label as targets: class indices (classification) or values (regression).
std::vector<float> read_targets(const Table& table, const Column& label, const DataSpec& spec,
                                std::vector<std::string>* classes) {
  auto missing = std::find(label.missing.begin(), label.missing.end(), 1);
  if (missing != label.missing.end())
    throw ConfigError(table.where(missing - label.missing.begin()) + ": the label '" + spec.label + "' is missing");
  const size_t n = label.missing.size();
  std::vector<float> y(n);
  if (spec.task == "regression") {
    if (label.kind != Kind::kNumeric) {
      size_t r = 0;
      double ignored = 0;
      while (r < n && parse_number(label.strings[r], &ignored)) ++r;
      throw ConfigError(table.where(static_cast<int64_t>(r)) + ": label '" + spec.label +
                        "' must be a number for task regression, got '" + label.strings[r] + "'");
    }
    for (size_t r = 0; r < n; ++r) y[r] = static_cast<float>(label.numbers[r]);
    return y;
  }
  if (label.kind == Kind::kNumeric) {
    std::vector<double> values(label.numbers);
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    for (double v : values) classes->push_back(number_text(v));
    for (size_t r = 0; r < n; ++r)
      y[r] = static_cast<float>(std::lower_bound(values.begin(), values.end(), label.numbers[r]) - values.begin());
  } else {
    std::vector<std::string> values(label.strings);
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    *classes = values;
    for (size_t r = 0; r < n; ++r)
      y[r] = static_cast<float>(std::lower_bound(values.begin(), values.end(), label.strings[r]) - values.begin());
  }
  if (classes->size() < 2)
    throw ConfigError(table.source + ": label '" + spec.label + "' has one class (" + classes->front() +
                      "): classification needs at least 2");
  return y;
}

// Validation rows out of `group` (shuffled in place): round(size * fraction),
// clamped to [1, size - 1] when `keep_both` and the group has >= 2 rows.
size_t valid_count(size_t size, double fraction, bool keep_both) {
  auto count = static_cast<size_t>(std::llround(static_cast<double>(size) * fraction));
  if (keep_both) count = size < 2 ? 0 : std::clamp<size_t>(count, 1, size - 1);
  return count;
}

// Splits row indices 0..n-1 into train and valid by a seeded shuffle;
// classification splits each class on its own (stratified).
void split_rows(const std::vector<float>& y, const DataSpec& spec, std::vector<int64_t>* train,
                std::vector<int64_t>* valid) {
  std::mt19937_64 rng(spec.seed);
  const bool stratified = spec.task == "classification";
  std::vector<std::vector<int64_t>> groups(1);
  if (stratified) groups.assign(static_cast<size_t>(*std::max_element(y.begin(), y.end())) + 1, {});
  for (size_t r = 0; r < y.size(); ++r)
    groups[stratified ? static_cast<size_t>(y[r]) : 0].push_back(static_cast<int64_t>(r));
  for (std::vector<int64_t>& group : groups) {
    std::shuffle(group.begin(), group.end(), rng);
    const size_t n_valid = valid_count(group.size(), spec.valid_fraction, stratified);
    valid->insert(valid->end(), group.begin(), group.begin() + static_cast<std::ptrdiff_t>(n_valid));
    train->insert(train->end(), group.begin() + static_cast<std::ptrdiff_t>(n_valid), group.end());
  }
  std::shuffle(train->begin(), train->end(), rng);
  std::shuffle(valid->begin(), valid->end(), rng);
}

// The feature columns: spec.features, or every column but the label; each a column of the table.
std::vector<std::string> feature_columns(const Table& table, const DataSpec& spec) {
  if (spec.features.empty()) {
    std::vector<std::string> names;
    for (const Column& column : table.columns)
      if (column.name != spec.label) names.push_back(column.name);
    if (names.empty()) throw ConfigError(table.source + ": no feature columns: the only column is the label");
    return names;
  }
  for (size_t j = 0; j < spec.features.size(); ++j) {
    if (table.find(spec.features[j])) continue;
    const std::string at = "data.features[" + std::to_string(j) + "]";
    throw ConfigError::at(at, table.source + ": no column '" + spec.features[j] + "' for " + at +
                                  did_you_mean_column(spec.features[j], table.names()));
  }
  return spec.features;
}

std::shared_ptr<const Prepared> prepare_uncached(const Json& setup) {
  if (!setup.is_object() || !setup.contains("data") || setup.at("data").is_null())
    throw ConfigError::at("data", "data: is missing: a tabular trainable needs data: {path: ..., label: ...}");
  auto prepared = std::make_shared<Prepared>();
  prepared->spec = read_data_spec(setup.at("data"));
  const DataSpec& spec = prepared->spec;
  prepared->pipeline = Pipeline::from_spec(setup.value("preprocess", Json()));
  const Table table = [&] {
    try {
      return read_csv(spec.path);
    } catch (const ConfigError& e) {
      if (!e.key_path().empty()) throw;
      throw ConfigError::at("data.path", e.what());  // a sweep file's error names the line of data.path
    }
  }();
  const Column* label = table.find(spec.label);
  if (!label)
    throw ConfigError::at("data.label", table.source + ": no label column '" + spec.label + "'" +
                                            did_you_mean_column(spec.label, table.names()));
  const std::vector<std::string> features = feature_columns(table, spec);
  const std::vector<float> y = read_targets(table, *label, spec, &prepared->classes);
  split_rows(y, spec, &prepared->train_rows, &prepared->valid_rows);
  prepared->rows = table.rows();
  prepared->n_train = static_cast<int64_t>(prepared->train_rows.size());
  prepared->n_valid = static_cast<int64_t>(prepared->valid_rows.size());
  if (prepared->n_train < 2 || prepared->n_valid < 2)
    throw ConfigError(table.source + ": " + std::to_string(table.rows()) + " rows split into " +
                      std::to_string(prepared->n_train) + " training and " + std::to_string(prepared->n_valid) +
                      " validation rows: each part needs at least 2 (more rows, or another data.valid_fraction)");
  const Table train = take(table, features, prepared->train_rows);
  const Table valid = take(table, features, prepared->valid_rows);
  prepared->pipeline.fit(train, features);
  prepared->x_train = prepared->pipeline.transform(train);
  prepared->x_valid = prepared->pipeline.transform(valid);
  for (int64_t r : prepared->train_rows) prepared->y_train.push_back(y[static_cast<size_t>(r)]);
  for (int64_t r : prepared->valid_rows) prepared->y_valid.push_back(y[static_cast<size_t>(r)]);
  prepared->feature_names = prepared->pipeline.output_names();
  prepared->n_features = static_cast<int64_t>(prepared->feature_names.size());
  return prepared;
}

// The CSV's identity for the cache: size and modification time.
struct FileStamp {
  uintmax_t size = 0;
  std::filesystem::file_time_type mtime;
  bool operator==(const FileStamp& other) const { return size == other.size && mtime == other.mtime; }
};

FileStamp stamp_of(const Json& setup) {
  FileStamp stamp;
  const Json* data = setup.is_object() && setup.contains("data") ? &setup.at("data") : nullptr;
  if (!data || !data->is_object() || !data->contains("path") || !data->at("path").is_string()) return stamp;
  std::error_code ec;
  const std::string path = data->at("path").get<std::string>();
  stamp.size = std::filesystem::file_size(path, ec);
  stamp.mtime = std::filesystem::last_write_time(path, ec);
  return stamp;
}

struct CacheEntry {
  Json setup;
  FileStamp stamp;
  std::shared_ptr<const Prepared> prepared;
};

constexpr size_t kCacheSize = 4;

}  // namespace

DataSpec read_data_spec(const Json& data) {
  if (!data.is_object())
    throw ConfigError::at("data", "data must be a mapping (path, label, ...), got " + json_kind(data));
  OptionStyle style;
  style.label = "data.";
  style.values_as_written = true;
  const OptionReader reader(data, "data", style);
  if (auto key = reader.unknown_key(kDataKeys))
    throw ConfigError::at_key("data." + *key,
                              "data: unknown key '" + *key + "'" + did_you_mean_or_list(*key, kDataKeys, "valid keys"));
  DataSpec spec;
  spec.path = required_string(reader, "path", "the CSV file to train on");
  spec.label = required_string(reader, "label", "the column to predict");
  spec.task = reader.string("task", spec.task, {"classification", "regression"});
  spec.features = read_features(reader, spec.label);
  if (reader.has("valid_fraction")) {
    const Json& v = reader.raw("valid_fraction");
    if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() < 1))
      reader.fail("valid_fraction", "must be a number in (0, 1)");
    spec.valid_fraction = v.get<double>();
  }
  spec.seed = static_cast<uint64_t>(
      reader.integer_in("seed", 0, 0, std::numeric_limits<int64_t>::max(), "a non-negative integer"));
  return spec;
}

Json Prepared::schema() const {
  Json features = Json::array(), input_schema = Json::array();
  for (const ColumnSchema& column : pipeline.input_schema()) {
    features.push_back(column.name);
    input_schema.push_back({{"name", column.name}, {"kind", kind_name(column.kind)}});
  }
  return {{"task", spec.task},
          {"label", spec.label},
          {"classes", classes},
          {"features", features},
          {"input_schema", input_schema},
          {"pipeline", pipeline.to_json()},
          {"data", {{"path", spec.path}, {"rows", rows}, {"train_rows", n_train}, {"valid_rows", n_valid}}}};
}

std::shared_ptr<const Prepared> prepare(const Json& setup) {
  static std::mutex mutex;
  static std::vector<CacheEntry> cache;
  // One lock over the read too: trials starting together read the CSV once.
  std::lock_guard<std::mutex> lock(mutex);
  const FileStamp stamp = stamp_of(setup);
  for (const CacheEntry& entry : cache)
    if (entry.setup == setup && entry.stamp == stamp) return entry.prepared;
  std::shared_ptr<const Prepared> prepared = prepare_uncached(setup);
  cache.erase(std::remove_if(cache.begin(), cache.end(), [&](const CacheEntry& e) { return e.setup == setup; }),
              cache.end());
  if (cache.size() >= kCacheSize) cache.erase(cache.begin());
  cache.push_back({setup, stamp, prepared});
  return prepared;
}

void check_setup(const Json& setup) { prepare(setup); }

ModelSchema read_model_schema(const Json& tabular_json) {
  try {
    if (!tabular_json.is_object()) throw Error("malformed tabular.json: expected an object");
    ModelSchema schema;
    schema.task = tabular_json.at("task").get<std::string>();
    if (schema.task != "classification" && schema.task != "regression")
      throw Error("malformed tabular.json: unknown task '" + schema.task + "'");
    schema.label = tabular_json.at("label").get<std::string>();
    schema.classes = tabular_json.at("classes").get<std::vector<std::string>>();
    if (schema.task == "classification" && schema.classes.size() < 2)
      throw Error("malformed tabular.json: a classification model needs at least 2 classes");
    schema.pipeline = Pipeline::from_json(tabular_json.at("pipeline"));
    return schema;
  } catch (const Json::exception& e) {
    throw Error(std::string("malformed tabular.json: ") + e.what());
  }
}

}  // namespace tune::tabular
