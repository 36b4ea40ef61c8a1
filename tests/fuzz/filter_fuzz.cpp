// Fuzz target: `tune trials --filter EXPR` (tuner/cli/trial_filter.h).
//
// Input: the expression, then optionally a newline and a JSON value for the
// row's cell (anything that is not JSON is used as a string cell). The
// expression is parsed and matched against the cell, a missing cell (null)
// and, as `tune trials` does, the cells of a row. Only tune::ConfigError
// (the one-line "bad --filter ..." / "... is not numeric", exit 2) is expected.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "tuner/cli/trial_filter.h"

using tune::Json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string expression = input.substr(0, newline);
  Json cell = "sgd";
  if (newline != std::string::npos) {
    const std::string text = input.substr(newline + 1);
    cell = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (cell.is_discarded()) {
      // Not JSON: a string cell, when it is valid UTF-8 (store values are).
      cell = Json::parse(Json(text).dump(0, ' ', false, Json::error_handler_t::ignore), nullptr, false);
      if (cell.is_discarded()) cell = nullptr;
    }
  }
  tune::fuzz::accept_errors([&] {
    const tune::internal::TrialFilter filter = tune::internal::parse_filter(expression);
    tune::fuzz::check(!filter.key.empty(), "empty key from '" + expression + "'");
    tune::fuzz::check(filter.key + filter.op + filter.value == expression, "split lost text of '" + expression + "'");
    tune::fuzz::check(tune::internal::matches(nullptr, filter) == (filter.op == "!="), "a missing cell");
    const Json row = {{"trial", "trial_00000"}, {"status", "TERMINATED"}, {"iter", 3}, {"loss", 0.25}, {"cell", cell}};
    for (const auto& [key, value] : row.items()) {
      try {
        (void)tune::internal::matches(value, filter);
      } catch (const tune::ConfigError&) {
        // only <, <=, > and >= refuse to compare: a cell or a VALUE that is not a number
        tune::fuzz::check(filter.op != "=" && filter.op != "!=", "ConfigError for " + filter.op);
      }
    }
  });
  return 0;
}
