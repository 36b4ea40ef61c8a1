#include "schedulers/params.h"

#include <cmath>

#include "base/error.h"
#include "base/names.h"

namespace tune::internal {
namespace {

OptionStyle scheduler_style(const std::string& type) {
  OptionStyle style;
  style.label = "scheduler " + type + ": ";
  style.choice_separator = "|";
  style.one_of_wording = false;
  return style;
}

Json checked(const std::string& type, const Json& params) {
  if (params.is_null()) return Json::object();
  if (!params.is_object())
    throw ConfigError::at("scheduler", "scheduler " + type + ": options must be a mapping, got " + params.dump());
  return params;
}

}  // namespace

SchedulerParams::SchedulerParams(std::string type, const Json& params, const std::vector<std::string>& keys)
    : OptionReader(checked(type, params), "scheduler", scheduler_style(type)), type_(std::move(type)) {
  if (auto key = unknown_key(keys)) {
    if (keys.empty()) throw ConfigError::at("scheduler", "scheduler " + type_ + " takes no options, got '" + *key + "'");
    throw ConfigError::at("scheduler", "scheduler " + type_ + " has no option '" + *key + "'" + did_you_mean(*key, keys) +
                                           "; options: " + join_names(keys));
  }
}

std::string SchedulerParams::metric(const std::string& experiment_metric) const {
  std::string m = string("metric", experiment_metric);
  if (m.empty()) throw ConfigError::at("scheduler", "scheduler " + type_ + " needs a metric (set the sweep's metric/mode)");
  return m;
}

std::string SchedulerParams::mode(const std::string& experiment_mode) const {
  std::string m = string("mode", experiment_mode, {"min", "max"});
  if (m != "min" && m != "max")
    throw ConfigError::at("scheduler", "scheduler " + type_ + " needs mode: min or max (set the sweep's metric/mode)");
  return m;
}

bool number_at(const Json& result, const std::string& key, double* value) {
  auto it = result.find(key);
  if (it == result.end() || !it->is_number()) return false;
  *value = it->get<double>();
  return std::isfinite(*value);
}

double percentile_of_sorted(const std::vector<double>& sorted, double q) {
  const double pos = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace tune::internal
