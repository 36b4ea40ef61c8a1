// Internal: reading and checking a scheduler's `params` (the sweep file's
// scheduler block without `type`). Every error is one line naming the
// scheduler, the key and the bad value; unknown keys get a "did you mean".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tune::internal {

using Json = nlohmann::json;

class SchedulerParams {
 public:
  // Throws ConfigError if `params` is not an object or has a key not in `keys`.
  SchedulerParams(std::string type, const Json& params, const std::vector<std::string>& keys);

  bool has(const std::string& key) const { return params_.contains(key) && !params_[key].is_null(); }
  const Json& raw(const std::string& key) const { return params_.at(key); }

  // A number > min (or >= min when `inclusive`), default `fallback`.
  double number(const std::string& key, double fallback, double min, bool inclusive) const;
  // A number in [low, high].
  double number_in(const std::string& key, double fallback, double low, double high) const;
  // An integer >= min.
  int64_t integer(const std::string& key, int64_t fallback, int64_t min) const;
  bool boolean(const std::string& key, bool fallback) const;
  // A string, one of `allowed` when not empty.
  std::string string(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& allowed = {}) const;

  // The experiment's metric/mode unless the block sets its own; checks that
  // both are there and mode is min|max.
  std::string metric(const std::string& experiment_metric) const;
  std::string mode(const std::string& experiment_mode) const;

  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

 private:
  std::string type_;
  Json params_;
};

// 100 -> "100", 0.5 -> "0.5" (for messages).
std::string num(double x);

// result[key] as a double when it is a number.
bool number_at(const Json& result, const std::string& key, double* value);

// The q-th percentile (0..100) of ascending `sorted` values with linear
// interpolation (numpy's default, which Ray's ASHA uses). Not empty.
double percentile_of_sorted(const std::vector<double>& sorted, double q);

}  // namespace tune::internal
