#include "trainer/tabular/model.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <map>
#include <mutex>
#include <ostream>

#include "base/error.h"

namespace tune::tabular {
namespace {

std::mutex& loaders_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::string, ModelLoader>& loaders() {
  static std::map<std::string, ModelLoader> table;
  return table;
}

Json read_state(const std::string& checkpoint_dir) {
  const std::string path = checkpoint_dir + "/state.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw NotFoundError("not a checkpoint directory (no state.json): " + checkpoint_dir);
  std::string why = "not an object";
  Json state = read_json_file(path, kMaxJsonFileBytes, kMaxJsonDepth, &why);
  if (state.is_discarded() || !state.is_object()) throw Error(path + " is not a JSON object (" + one_line(why) + ")");
  return state;
}

// A class name as the CSV wrote it: a number when it is one.
Json class_value(const std::string& name) {
  char* end = nullptr;
  const double value = std::strtod(name.c_str(), &end);
  if (!name.empty() && end == name.c_str() + name.size() && std::isfinite(value)) {
    if (value == std::floor(value) && std::fabs(value) < 9.0e15) return static_cast<int64_t>(value);
    return value;
  }
  return name;
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::vector<float> run_model(const LoadedModel& model, const Table& rows) {
  std::vector<float> x = model.schema.pipeline.transform(rows);
  return model.model->predict(x, rows.rows());
}

size_t outputs_of(const LoadedModel& model) {
  return model.schema.task == "regression" ? 1 : model.schema.classes.size();
}

size_t argmax(const float* p, size_t n) {
  size_t best = 0;
  for (size_t k = 1; k < n; ++k) best = p[k] > p[best] ? k : best;
  return best;
}

}  // namespace

void register_model_loader(const std::string& trainable, ModelLoader loader) {
  std::lock_guard<std::mutex> lock(loaders_mutex());
  loaders()[trainable] = std::move(loader);
}

bool is_tabular_checkpoint(const std::string& checkpoint_dir) {
  const Json state = read_json_file(checkpoint_dir + "/state.json");
  return !state.is_discarded() && state.is_object() && state.contains("tabular");
}

LoadedModel load_model(const std::string& checkpoint_dir) {
  Json state = read_state(checkpoint_dir);
  if (!state.contains("tabular") || !state["trainable"].is_string()) {
    throw Error(checkpoint_dir + "/state.json does not describe a tabular model (no 'tabular' entry)");
  }
  LoadedModel loaded;
  loaded.trainable = state["trainable"].get<std::string>();
  loaded.config = state.value("config", Json::object());
  loaded.checkpoint = checkpoint_dir;
  loaded.tabular = state["tabular"];
  loaded.schema = read_model_schema(loaded.tabular);
  ModelLoader loader;
  {
    std::lock_guard<std::mutex> lock(loaders_mutex());
    auto it = loaders().find(loaded.trainable);
    if (it == loaders().end()) {
      throw Error(checkpoint_dir + ": no model loader for trainable '" + loaded.trainable +
                  "' in this build of tune");
    }
    loader = it->second;
  }
  loaded.model = loader(checkpoint_dir, state);
  return loaded;
}

Json predict_json(const LoadedModel& model, const Table& rows) {
  const std::vector<float> out = run_model(model, rows);
  const size_t k = outputs_of(model);
  Json predictions = Json::array();
  for (int64_t r = 0; r < rows.rows(); ++r) {
    const float* p = out.data() + static_cast<size_t>(r) * k;
    if (model.schema.task == "regression") {
      predictions.push_back(static_cast<double>(p[0]));
      continue;
    }
    Json probabilities = Json::object();
    for (size_t c = 0; c < k; ++c) probabilities[model.schema.classes[c]] = static_cast<double>(p[c]);
    predictions.push_back(
        {{"label", class_value(model.schema.classes[argmax(p, k)])}, {"probabilities", std::move(probabilities)}});
  }
  return predictions;
}

double write_predictions_csv(const LoadedModel& model, const Table& rows, std::ostream& out) {
  const std::vector<float> values = run_model(model, rows);
  const size_t k = outputs_of(model);
  const bool regression = model.schema.task == "regression";
  const Column* label = rows.find(model.schema.label);
  out << "row,prediction";
  if (!regression) {
    out << ",probability";
    for (const auto& c : model.schema.classes) out << "," << csv_cell("p_" + c);
  }
  if (label) out << "," << csv_cell(model.schema.label);
  out << "\n" << std::setprecision(6);
  double hits = 0, squared = 0, counted = 0;
  for (int64_t r = 0; r < rows.rows(); ++r) {
    const float* p = values.data() + static_cast<size_t>(r) * k;
    const size_t best = regression ? 0 : argmax(p, k);
    out << r << ",";
    if (regression) {
      out << p[0];
    } else {
      out << csv_cell(model.schema.classes[best]) << "," << p[best];
      for (size_t c = 0; c < k; ++c) out << "," << p[c];
    }
    if (label) {
      const auto i = static_cast<size_t>(r);
      if (label->missing[i]) {
        out << ",";
      } else if (label->kind == Kind::kNumeric) {
        const double truth = label->numbers[i];
        out << "," << truth;
        counted += 1;
        if (regression) squared += (p[0] - truth) * (p[0] - truth);
        else hits += class_value(model.schema.classes[best]) == Json(truth);
      } else {
        out << "," << csv_cell(label->strings[i]);
        counted += 1;
        hits += model.schema.classes[best] == label->strings[i];
      }
    }
    out << "\n";
  }
  if (!label || counted == 0) return std::nan("");
  return regression ? std::sqrt(squared / counted) : hits / counted;
}

}  // namespace tune::tabular
