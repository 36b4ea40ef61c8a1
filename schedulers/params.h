// Internal: a scheduler's options (the sweep file's scheduler block without
// `type`), read with the ground layer's OptionReader in the schedulers'
// wording: "scheduler asha: max_t must be a positive number, got -3". Unknown
// keys get a "did you mean". Errors point at the `scheduler` block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/options.h"

namespace tune::internal {

class SchedulerParams : public OptionReader {
 public:
  // Throws ConfigError if `params` is not an object or has a key not in `keys`.
  SchedulerParams(std::string type, const Json& params, const std::vector<std::string>& keys);

  // The experiment's metric/mode unless the block sets its own; checks that
  // both are there and mode is min|max.
  std::string metric(const std::string& experiment_metric) const;
  std::string mode(const std::string& experiment_mode) const;

 private:
  std::string type_;
};

// result[key] as a double when it is a finite number.
bool number_at(const Json& result, const std::string& key, double* value);

// The q-th percentile (0..100) of ascending `sorted` values with linear
// interpolation (numpy's default, which Ray's ASHA uses). Not empty.
double percentile_of_sorted(const std::vector<double>& sorted, double q);

}  // namespace tune::internal
