// Internal: the driver's time, behind an interface so tests run the driver
// on a fake clock (no sleeping, deterministic).
//
//   SystemClock clock;
//   double started = clock.now();              // durations: steady seconds
//   store.add_result(..., clock.unix_time());  // timestamps: wall seconds
#pragma once

#include <chrono>

namespace tune::internal {

// Seconds on the steady clock, for deadlines outside the driver's Clock
// (executors, the transport).
inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds on a steady clock: durations, timeouts, intervals.
  virtual double now() const = 0;
  // Seconds since the Unix epoch: what the store records.
  virtual double unix_time() const = 0;
};

class SystemClock : public Clock {
 public:
  double now() const override { return steady_seconds(); }
  double unix_time() const override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
};

}  // namespace tune::internal
