// A trial's status: the states of the trial lifecycle
// (schedulers/trial_state_machine.h) and the exact strings the store keeps
// and every query prints.
//
//   store.set_trial_status(row, tune::status_name(tune::TrialStatus::kPaused), now);
//   if (tune::parse_trial_status(record.status) == tune::TrialStatus::kError) ...
#pragma once

#include <optional>
#include <string_view>

namespace tune {

enum class TrialStatus { kPending, kRunning, kPaused, kTerminated, kError };

// The stored spellings.
inline constexpr const char* kPending = "PENDING";
inline constexpr const char* kRunning = "RUNNING";
inline constexpr const char* kPaused = "PAUSED";
inline constexpr const char* kTerminated = "TERMINATED";
inline constexpr const char* kError = "ERROR";

constexpr const char* status_name(TrialStatus status) {
  switch (status) {
    case TrialStatus::kPending: return kPending;
    case TrialStatus::kRunning: return kRunning;
    case TrialStatus::kPaused: return kPaused;
    case TrialStatus::kTerminated: return kTerminated;
    case TrialStatus::kError: return kError;
  }
  return "";
}

// nullopt for a string that is none of the five.
inline std::optional<TrialStatus> parse_trial_status(std::string_view name) {
  for (TrialStatus s : {TrialStatus::kPending, TrialStatus::kRunning, TrialStatus::kPaused, TrialStatus::kTerminated,
                        TrialStatus::kError}) {
    if (name == status_name(s)) return s;
  }
  return std::nullopt;
}

// TERMINATED or ERROR: the trial never runs again.
constexpr bool is_final(TrialStatus status) {
  return status == TrialStatus::kTerminated || status == TrialStatus::kError;
}

}  // namespace tune
