// Scheduler: decides, after each result, whether a trial continues.
//
// Pure logic: no I/O, no threads, no clock of its own (times come in results).
// The driver calls it from its event-loop thread only.
//
//   auto scheduler = tune::make_scheduler({"fifo"}, "loss", "min");
//   if (scheduler->on_result(trial, result) == tune::TrialAction::kStop) ...
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tune {

using Json = nlohmann::json;

enum class TrialAction { kContinue, kStop };

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual void on_trial_add(int64_t /*trial_index*/, const Json& /*config*/) {}
  // `result` holds the trial's metrics plus training_iteration and time_total_s.
  virtual TrialAction on_result(int64_t trial_index, const Json& result) = 0;
  virtual void on_trial_complete(int64_t /*trial_index*/, const Json& /*last_result*/) {}
  virtual void on_trial_error(int64_t /*trial_index*/) {}
  // State to persist for `tune resume` (null if stateless) and its restore.
  virtual Json save_state() const { return nullptr; }
  virtual void restore_state(const Json& /*state*/) {}
};

// type: "fifo". params: the type's keys. Throws tune::ConfigError for an
// unknown type or key.
std::unique_ptr<Scheduler> make_scheduler(const std::string& type, const Json& params,
                                          const std::string& metric, const std::string& mode);

const std::vector<std::string>& scheduler_names();

}  // namespace tune
