#include "schedulers/params.h"

#include <algorithm>
#include <cmath>

#include "search/edit_distance.h"
#include "tuner/error.h"

namespace tune::internal {

std::string num(double x) {
  if (std::floor(x) == x && std::fabs(x) < 1e15) return std::to_string(static_cast<long long>(x));
  return Json(x).dump();
}

namespace {
std::string show(const Json& value) { return value.is_string() ? "'" + value.get<std::string>() + "'" : value.dump(); }
}  // namespace

SchedulerParams::SchedulerParams(std::string type, const Json& params, const std::vector<std::string>& keys)
    : type_(std::move(type)), params_(params.is_null() ? Json::object() : params) {
  if (!params_.is_object()) throw ConfigError("scheduler " + type_ + ": options must be a mapping, got " + params_.dump());
  for (const auto& item : params_.items()) {
    if (std::find(keys.begin(), keys.end(), item.key()) != keys.end()) continue;
    if (keys.empty()) throw ConfigError("scheduler " + type_ + " takes no options, got '" + item.key() + "'");
    std::string message = "scheduler " + type_ + " has no option '" + item.key() + "'";
    std::string hint = closest_match_impl(item.key(), keys);
    if (!hint.empty()) message += " (did you mean '" + hint + "'?)";
    std::string list;
    for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
    throw ConfigError(message + "; options: " + list);
  }
}

void SchedulerParams::fail(const std::string& key, const std::string& what) const {
  throw ConfigError("scheduler " + type_ + ": " + key + " " + what + ", got " + show(params_.at(key)));
}

double SchedulerParams::number(const std::string& key, double fallback, double min, bool inclusive) const {
  if (!has(key)) return fallback;
  const Json& v = params_.at(key);
  const char* what = inclusive ? (min == 0 ? "must be a number >= 0" : "must be a number >= the minimum")
                               : (min == 0 ? "must be a positive number" : "must be a number above the minimum");
  if (!v.is_number()) fail(key, what);
  double x = v.get<double>();
  if (!std::isfinite(x) || (inclusive ? x < min : x <= min)) {
    if (min != 0) fail(key, std::string("must be a number ") + (inclusive ? ">= " : "> ") + num(min));
    fail(key, what);
  }
  return x;
}

double SchedulerParams::number_in(const std::string& key, double fallback, double low, double high) const {
  if (!has(key)) return fallback;
  const Json& v = params_.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < low || v.get<double>() > high)
    fail(key, "must be a number in [" + num(low) + ", " + num(high) + "]");
  return v.get<double>();
}

int64_t SchedulerParams::integer(const std::string& key, int64_t fallback, int64_t min) const {
  if (!has(key)) return fallback;
  const Json& v = params_.at(key);
  bool ok = v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (!ok || v.get<double>() < static_cast<double>(min)) fail(key, "must be an integer >= " + std::to_string(min));
  return static_cast<int64_t>(v.get<double>());
}

bool SchedulerParams::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!params_.at(key).is_boolean()) fail(key, "must be true or false");
  return params_.at(key).get<bool>();
}

std::string SchedulerParams::string(const std::string& key, const std::string& fallback,
                                    const std::vector<std::string>& allowed) const {
  if (!has(key)) return fallback;
  const Json& v = params_.at(key);
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : "|") + a;
  if (!v.is_string() || v.get<std::string>().empty()) fail(key, allowed.empty() ? "must be a non-empty string" : "must be " + list);
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), v.get<std::string>()) == allowed.end())
    fail(key, "must be " + list);
  return v.get<std::string>();
}

std::string SchedulerParams::metric(const std::string& experiment_metric) const {
  std::string m = string("metric", experiment_metric);
  if (m.empty()) throw ConfigError("scheduler " + type_ + " needs a metric (set the sweep's metric/mode)");
  return m;
}

std::string SchedulerParams::mode(const std::string& experiment_mode) const {
  std::string m = string("mode", experiment_mode, {"min", "max"});
  if (m != "min" && m != "max") throw ConfigError("scheduler " + type_ + " needs mode: min or max (set the sweep's metric/mode)");
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
