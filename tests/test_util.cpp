#include "test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tune::testing {

TempDir::TempDir() {
  std::string pattern = "/tmp/tune_test_XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  std::string full = file(name);
  std::ofstream(full) << text;
  return full;
}

static std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CommandResult run_command(const std::string& command) {
  TempDir capture;
  std::string full = "(" + command + ") >" + capture.file("out") + " 2>" + capture.file("err") +
                     " </dev/null";
  int status = std::system(full.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(capture.file("out"));
  result.err = slurp(capture.file("err"));
  return result;
}

bool wait_gone(int pid, double seconds) {
  const int polls = std::max(1, static_cast<int>(seconds * 20));
  return run_command("for i in $(seq " + std::to_string(polls) + "); do kill -0 " + std::to_string(pid) +
                     " 2>/dev/null || exit 0; sleep 0.05; done; exit 1")
             .exit_code == 0;
}

CommandResult run_tune(const std::string& args) {
  return run_command(std::string(TUNE_BINARY) + " " + args);
}

}  // namespace tune::testing
