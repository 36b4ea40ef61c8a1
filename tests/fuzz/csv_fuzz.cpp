// Fuzz target: a user's CSV (trainer/tabular/table.h) and the preprocessors
// fitted on it (trainer/tabular/preprocess.h).
//
// Input: CSV text. It is parsed; when it parses, every column must have one
// cell per row and ascending source lines, and a pipeline (an imputer and a
// standard scaler on the numeric columns, one-hot on the categorical ones)
// is fitted on it and must transform it into rows x outputs finite floats,
// also after a round trip of its fitted state through JSON. Only tune::Error
// (one-line messages: ragged rows, quotes, empty files...) is expected.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainer/tabular/preprocess.h"
#include "trainer/tabular/table.h"

using tune::Json;
using tune::tabular::Kind;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tune::fuzz::accept_errors([&] {
    const tune::tabular::Table table = tune::tabular::parse_csv(text, "fuzz.csv");
    const int64_t rows = table.rows();
    tune::fuzz::check(rows > 0 && static_cast<int64_t>(table.lines.size()) == rows, "row count");
    for (size_t i = 1; i < table.lines.size(); ++i) tune::fuzz::check(table.lines[i] > table.lines[i - 1], "lines");
    Json numeric = Json::array(), categorical = Json::array();
    std::vector<std::string> features;
    for (const auto& column : table.columns) {
      tune::fuzz::check(column.size() == rows, "column '" + column.name + "' size");
      const size_t cells = column.kind == Kind::kNumeric ? column.numbers.size() : column.strings.size();
      tune::fuzz::check(static_cast<int64_t>(cells) == rows, "column '" + column.name + "' cells");
      (column.kind == Kind::kNumeric ? numeric : categorical).push_back(column.name);
      features.push_back(column.name);
    }
    Json spec = Json::array();
    if (!numeric.empty()) {
      spec.push_back({{"simple_imputer", {{"columns", numeric}, {"strategy", "constant"}, {"value", 0}}}});
      spec.push_back({{"standard_scaler", numeric}});
    }
    if (!categorical.empty()) {
      spec.push_back({{"simple_imputer", {{"columns", categorical}, {"strategy", "constant"}, {"value", "?"}}}});
      spec.push_back({{"one_hot", categorical}});
    }
    tune::tabular::Pipeline pipeline = tune::tabular::Pipeline::from_spec(spec);
    pipeline.fit(table, features);
    const std::vector<float> x = pipeline.transform(table);
    const size_t outputs = pipeline.output_names().size();
    tune::fuzz::check(x.size() == static_cast<size_t>(rows) * outputs, "transform size");
    for (float v : x) tune::fuzz::check(std::isfinite(v), "a non-finite output");
    const tune::tabular::Pipeline copy = tune::tabular::Pipeline::from_json(pipeline.to_json());
    tune::fuzz::check(copy.transform(table) == x, "the JSON round trip changed the transform");
  });
  return 0;
}
