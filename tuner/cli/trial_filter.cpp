#include "tuner/cli/trial_filter.h"

#include <cstdlib>

#include "base/error.h"

namespace tune::internal {

TrialFilter parse_filter(const std::string& text) {
  static const char* ops[] = {"!=", ">=", "<=", "=", "<", ">"};
  for (const char* op : ops) {
    auto at = text.find(op);
    if (at != std::string::npos && at > 0) return {text.substr(0, at), op, text.substr(at + std::string(op).size())};
  }
  throw ConfigError("bad --filter '" + text + "' (expected KEY=VALUE, KEY!=VALUE, KEY<NUMBER, KEY>=NUMBER...)");
}

bool matches(const Json& cell, const TrialFilter& filter) {
  if (cell.is_null()) return filter.op == "!=";
  char* end = nullptr;
  double wanted = std::strtod(filter.value.c_str(), &end);
  bool numeric = end && *end == '\0' && !filter.value.empty() && cell.is_number();
  if (numeric) {
    double v = cell.get<double>();
    if (filter.op == "=") return v == wanted;
    if (filter.op == "!=") return v != wanted;
    if (filter.op == "<") return v < wanted;
    if (filter.op == ">") return v > wanted;
    if (filter.op == "<=") return v <= wanted;
    return v >= wanted;
  }
  std::string text = cell.is_string() ? cell.get<std::string>() : cell.dump();
  if (filter.op == "=") return text == filter.value;
  if (filter.op == "!=") return text != filter.value;
  if (cell.is_number())
    throw ConfigError("--filter " + filter.key + filter.op + filter.value + ": '" + filter.value + "' is not a number");
  throw ConfigError("--filter " + filter.key + filter.op + filter.value + ": '" + filter.key + "' is not numeric");
}

}  // namespace tune::internal
