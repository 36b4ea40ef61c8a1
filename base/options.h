// OptionReader: typed, checked reads of an options object: a scheduler's or a
// search algorithm's keys, a section of a sweep file. Each error is one
// ConfigError naming the key and the bad value, located at the key's path
// (ConfigError::at), so the sweep loader reports the file:line of the value.
//
//   tune::OptionReader options(params, "scheduler", {"scheduler asha: "});
//   if (auto bad = options.unknown_key({"max_t", "grace_period"})) ...;
//   double max_t = options.number("max_t", 100, tune::Bound::above(0));
//   bool promotion = options.boolean("promotion", false);
//
// Absent keys and null values give the fallback. The reader keeps a copy of
// the (small) options object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"

namespace tune {

// How messages look. Each component keeps the wording its users know.
struct OptionStyle {
  // Put before the key in messages: "search." -> "search.gamma must be ...",
  // "scheduler asha: " -> "scheduler asha: max_t must be ...".
  std::string label;
  // Show a bad value as a sweep file spells it ('5', 'abc', a list, a
  // mapping) instead of as JSON ('abc' quoted, numbers and lists as JSON).
  bool values_as_written = false;
  // Show range bounds as JSON numbers (1.0, 1e-09) instead of short ones (1).
  bool bounds_as_json = false;
  // Between the allowed values in "must be one of ..." / "must be a|b".
  std::string choice_separator = ", ";
  // "must be one of a, b" (true) or "must be a|b" (false).
  bool one_of_wording = true;
};

// A lower bound for number(): above(x) is > x, at_least(x) is >= x.
struct Bound {
  double value = 0;
  bool inclusive = false;
  static Bound above(double x) { return {x, false}; }
  static Bound at_least(double x) { return {x, true}; }
};

class OptionReader {
 public:
  // `path`: the key path of the object ("search", "scheduler", "resources").
  OptionReader(Json options, std::string path, OptionStyle style);

  const Json& options() const { return options_; }
  bool has(const std::string& key) const;
  const Json& raw(const std::string& key) const { return options_.at(key); }
  // "path.key": where an error about `key` points.
  std::string path_of(const std::string& key) const;

  // The first key (in key order) not in `allowed`, if any.
  std::optional<std::string> unknown_key(const std::vector<std::string>& allowed) const;

  // A JSON integer in [min, max]: "must be an integer in [min, max]", or
  // "must be <what>" when `what` is given ("a positive integer").
  int64_t integer_in(const std::string& key, int64_t fallback, int64_t min, int64_t max,
                     const std::string& what = "") const;
  // An integer-valued number (2 or 2.0) >= min: "must be an integer >= min".
  int64_t whole_number(const std::string& key, int64_t fallback, int64_t min) const;
  // A finite number above / at least `bound` ("must be a positive number",
  // "must be a number > 1").
  double number(const std::string& key, double fallback, Bound bound) const;
  // Any finite number: "must be a number".
  double finite_number(const std::string& key, double fallback) const;
  // A finite number in [low, high].
  double number_in(const std::string& key, double fallback, double low, double high) const;
  bool boolean(const std::string& key, bool fallback) const;
  // A non-empty string; one of `allowed` when that is not empty.
  std::string string(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& allowed = {}) const;
  // Any scalar as text ("" for null): "must be a string" for lists and mappings.
  std::string text(const std::string& key, const std::string& fallback) const;

  // Throws ConfigError::at(path_of(key), "<label><key> <what>, got <value>").
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

  // How the style shows a value / a bound in messages.
  std::string show(const Json& value) const;
  std::string bound(double value) const;

 private:
  Json options_;
  std::string path_;
  OptionStyle style_;
};

// 100 -> "100", 0.5 -> "0.5", 1e-9 -> "1e-09": a number for messages.
std::string short_number(double x);

}  // namespace tune
