#include "base/options.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/names.h"

namespace tune {

std::string short_number(double x) {
  if (std::floor(x) == x && std::fabs(x) < 1e15) return std::to_string(static_cast<long long>(x));
  return Json(x).dump();
}

OptionReader::OptionReader(Json options, std::string path, OptionStyle style)
    : options_(std::move(options)), path_(std::move(path)), style_(std::move(style)) {}

bool OptionReader::has(const std::string& key) const {
  if (!options_.is_object()) return false;
  auto it = options_.find(key);
  return it != options_.end() && !it->is_null();
}

std::string OptionReader::path_of(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

std::optional<std::string> OptionReader::unknown_key(const std::vector<std::string>& allowed) const {
  if (!options_.is_object()) return std::nullopt;
  for (const auto& item : options_.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) return item.key();
  }
  return std::nullopt;
}

std::string OptionReader::show(const Json& value) const {
  if (style_.values_as_written) {
    if (value.is_object()) return "a mapping";
    if (value.is_array()) return "a list";
    if (value.is_null()) return "nothing";
    return "'" + (value.is_string() ? value.get<std::string>() : value.dump()) + "'";
  }
  return value.is_string() ? "'" + value.get<std::string>() + "'" : value.dump();
}

std::string OptionReader::bound(double value) const {
  return style_.bounds_as_json ? Json(value).dump() : short_number(value);
}

void OptionReader::fail(const std::string& key, const std::string& what) const {
  throw ConfigError::at(path_of(key), style_.label + key + " " + what + ", got " + show(options_.at(key)));
}

int64_t OptionReader::integer_in(const std::string& key, int64_t fallback, int64_t min, int64_t max,
                                 const std::string& what) const {
  if (!has(key)) return fallback;
  const Json& v = options_.at(key);
  const bool too_big = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max);
  if (!v.is_number_integer() || too_big || v.get<int64_t>() < min || v.get<int64_t>() > max)
    fail(key, what.empty() ? "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]"
                           : "must be " + what);
  return v.get<int64_t>();
}

int64_t OptionReader::whole_number(const std::string& key, int64_t fallback, int64_t min) const {
  if (!has(key)) return fallback;
  const Json& v = options_.at(key);
  const bool ok = v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
                                            std::fabs(v.get<double>()) < 9e15);
  if (!ok || v.get<double>() < static_cast<double>(min)) fail(key, "must be an integer >= " + std::to_string(min));
  return static_cast<int64_t>(v.get<double>());
}

double OptionReader::number(const std::string& key, double fallback, Bound b) const {
  if (!has(key)) return fallback;
  const Json& v = options_.at(key);
  const bool ok = v.is_number() && std::isfinite(v.get<double>()) &&
                  (b.inclusive ? v.get<double>() >= b.value : v.get<double>() > b.value);
  if (ok) return v.get<double>();
  if (b.value == 0 && !b.inclusive) fail(key, "must be a positive number");
  fail(key, std::string("must be a number ") + (b.inclusive ? ">= " : "> ") + bound(b.value));
}

double OptionReader::finite_number(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  const Json& v = options_.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>())) fail(key, "must be a number");
  return v.get<double>();
}

double OptionReader::number_in(const std::string& key, double fallback, double low, double high) const {
  if (!has(key)) return fallback;
  const Json& v = options_.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < low || v.get<double>() > high)
    fail(key, "must be a number in [" + bound(low) + ", " + bound(high) + "]");
  return v.get<double>();
}

bool OptionReader::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!options_.at(key).is_boolean()) fail(key, "must be true or false");
  return options_.at(key).get<bool>();
}

std::string OptionReader::string(const std::string& key, const std::string& fallback,
                                 const std::vector<std::string>& allowed) const {
  if (!has(key)) return fallback;
  const Json& v = options_.at(key);
  const bool ok = v.is_string() && !v.get<std::string>().empty() &&
                  (allowed.empty() || std::find(allowed.begin(), allowed.end(), v.get<std::string>()) != allowed.end());
  if (ok) return v.get<std::string>();
  if (allowed.empty()) fail(key, "must be a non-empty string");
  fail(key, std::string(style_.one_of_wording ? "must be one of " : "must be ") +
                join_names(allowed, style_.choice_separator));
}

std::string OptionReader::text(const std::string& key, const std::string& fallback) const {
  if (!options_.is_object() || !options_.contains(key)) return fallback;
  const Json& v = options_.at(key);
  if (v.is_null()) return "";
  if (v.is_structured()) fail(key, "must be a string");
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace tune
