// Internal: one program a trial runs (the command trainable's child) and
// every process it starts. The program runs under a supervisor process, in
// a cgroup of its own where cgroup v2 allows (tuner/exec/trial_processes.h),
// so that ending the trial ends all of them: background children, and
// grandchildren that double-forked or called setsid(), included. Its stdout
// is read line by line into stdout.log (lines with a prefix handed back),
// stderr into stderr.log with its end kept for the failure message.
//
// The program's exit is watched, not only its stdout: a program that exits
// while something it started still holds its stdout (`tensorboard &`) ends
// the trial all the same. Its output is read for a short bounded time after
// the exit (what it wrote before exiting is all there), then everything left
// is killed.
//
// Not thread-safe: one thread (the trial's) uses it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tuner/exec/rotating_log.h"

namespace tune::internal {

class ChildProcess {
 public:
  // Starts argv in cwd with env; logs go to LOG_PREFIX{stdout,stderr}.log
  // (each rotated to .1 past log_max_bytes, 0: no limit) and
  // LOG_PREFIX"processes" records the processes while they run. Throws Error
  // if the folder cannot be entered or the program not run.
  ChildProcess(const std::vector<std::string>& argv, const std::string& cwd, const std::vector<std::string>& env,
               const std::string& log_prefix, std::string line_prefix, uint64_t log_max_bytes = 0);
  ~ChildProcess();  // ends every process of the program
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Reads what the program wrote, waiting up to timeout_ms; complete stdout
  // lines starting with the line prefix are appended to `results` (without
  // it). False once the program has exited and what it left on stdout is
  // read (its end, or nothing more for kDrainQuiet, at most kDrainLimit after
  // the exit). Throws Error for a stdout line over 16 MiB.
  bool pump(int timeout_ms, std::vector<std::string>* results);
  // The program's wait status once it exited (non-blocking unless `block`,
  // which waits while reading its output); everything it left running is
  // killed then.
  std::optional<int> reap(bool block);
  // SIGTERM to the program's process group, SIGKILL to everything after
  // `grace` s; reads on while it stops (a program flushing its last lines
  // must not block on a pipe).
  void stop(double grace);
  // "exited with status 3: <end of stderr>" / "was killed by signal 9 (...)",
  // on one line (control bytes escaped).
  std::string describe(int status) const;

  static constexpr std::chrono::milliseconds kDrainQuiet{100};
  static constexpr std::chrono::milliseconds kDrainLimit{2000};

 private:
  void read_control();
  void take_line(std::vector<std::string>* results);
  // Ends every process left (the supervisor ends them, then itself) and
  // waits for the supervisor; idempotent.
  void finish();

  std::string line_prefix_;
  std::string record_path_;
  pid_t supervisor_ = -1;
  pid_t program_ = -1;
  int out_ = -1, err_ = -1, control_ = -1;
  std::optional<int> status_;  // the program's, once it exited
  std::chrono::steady_clock::time_point exited_at_;
  std::chrono::steady_clock::time_point last_output_;
  bool finished_ = false;
  std::string control_buffer_;
  std::string line_, tail_;
  RotatingLog stdout_log_, stderr_log_;
};

}  // namespace tune::internal
