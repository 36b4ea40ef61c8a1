// Internal: one program a trial runs (the command trainable's child): its
// own process group, killed with SIGKILL if the thread that started it dies
// (PR_SET_PDEATHSIG); stdout read line by line into stdout.log (lines with
// a prefix handed back), stderr into stderr.log with its end kept for the
// failure message.
#pragma once

#include <sys/types.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace tune::internal {

class ChildProcess {
 public:
  // Starts argv in cwd with env; logs go to LOG_PREFIX{stdout,stderr}.log.
  // Throws Error if the folder cannot be entered or the program not run.
  ChildProcess(const std::vector<std::string>& argv, const std::string& cwd, const std::vector<std::string>& env,
               const std::string& log_prefix, std::string line_prefix);
  ~ChildProcess();  // kills the group if the program still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Reads what the program wrote, waiting up to timeout_ms; complete stdout
  // lines starting with the line prefix are appended to `results` (without
  // it). False once both pipes are closed.
  bool pump(int timeout_ms, std::vector<std::string>* results);
  // The wait status once it exited (non-blocking unless `block`); what it
  // left running in its process group is killed then.
  std::optional<int> reap(bool block);
  // SIGTERM to the process group, SIGKILL after `grace` s; reads on while
  // it stops (a program flushing its last lines must not block on a pipe).
  void stop(double grace);
  // "exited with status 3: <end of stderr>" / "was killed by signal 9 (...)".
  std::string describe(int status) const;

 private:
  void take_line(std::vector<std::string>* results);

  std::string line_prefix_;
  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  bool exited_ = false;
  int status_ = 0;
  std::string line_, tail_;
  std::ofstream stdout_log_, stderr_log_;
};

}  // namespace tune::internal
