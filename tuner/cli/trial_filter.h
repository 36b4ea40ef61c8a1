// Internal: the `--filter` expressions of `tune trials` ("status=ERROR",
// "loss<0.5", "opt!=sgd"), parsed once and matched against each row's cells.
// On its own so that tests and the fuzz target (tests/fuzz/) reach it.
//
//   TrialFilter f = parse_filter("loss<0.5");        // throws ConfigError
//   bool keep = matches(row.contains(f.key) ? row[f.key] : Json(nullptr), f);
#pragma once

#include <string>

#include "base/json.h"

namespace tune::internal {

struct TrialFilter {
  std::string key, op;  // op: one of = != < <= > >=
  std::string value;
};

// KEY OP VALUE, split at the first operator found (two-character ones
// first); an empty KEY or no operator throws ConfigError.
TrialFilter parse_filter(const std::string& text);

// Whether a row's cell (null when the row has no such key) passes. Numbers
// compare numerically when VALUE is a number; other cells compare as text
// (a string's contents, else its JSON) with = and != only: <, <=, >, >= on
// them throw ConfigError.
bool matches(const Json& cell, const TrialFilter& filter);

}  // namespace tune::internal
