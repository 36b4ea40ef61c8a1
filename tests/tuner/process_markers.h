// Finding the processes a test started: each runs `sleep MARKER`, with a
// marker no other test (or run) uses, so pgrep -f finds exactly them.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace tune::testing {

// A fresh marker: `sleep MARKER` sleeps `seconds`.
inline std::string marker(int seconds) {
  static int counter = 0;
  return std::to_string(seconds) + "." + std::to_string(::getpid()) + std::to_string(++counter);
}

inline std::vector<pid_t> processes_with(const std::string& marker) {
  std::istringstream out(run_command("pgrep -f 'sleep " + marker + "$' || true").out);
  std::vector<pid_t> pids;
  for (long pid; out >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

// Polls (bounded) until no process carries the marker; kills what is left
// (by pid) so that a failing test leaves nothing behind.
inline bool gone(const std::string& marker, std::chrono::seconds bound = std::chrono::seconds(10)) {
  const auto start = std::chrono::steady_clock::now();
  while (!processes_with(marker).empty() && std::chrono::steady_clock::now() - start < bound)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto left = processes_with(marker);
  for (pid_t pid : left) ::kill(pid, SIGKILL);
  return left.empty();
}

// Polls (up to 10 s) until a process carries the marker.
inline bool appears(const std::string& marker) {
  for (int i = 0; i < 400 && processes_with(marker).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  return !processes_with(marker).empty();
}

}  // namespace tune::testing
