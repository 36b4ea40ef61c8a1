// Helpers shared by tests: temporary directories and running the tune CLI.
#pragma once

#include <string>

namespace tune::testing {

// A fresh directory under /tmp, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `text` to path()/name and returns the full path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `tune ARGS` (the built CLI) through /bin/sh; ARGS is appended verbatim.
CommandResult run_tune(const std::string& args);
// Runs an arbitrary shell command.
CommandResult run_command(const std::string& command);
// Polls (every 50 ms, at most `seconds`) until process `pid` is gone; false
// if it is still there then. For a process a test killed or signalled.
bool wait_gone(int pid, double seconds = 30);

}  // namespace tune::testing
