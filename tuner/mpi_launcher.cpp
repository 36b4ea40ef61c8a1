#include "tuner/mpi_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>

#include "base/error.h"

extern char** environ;

namespace tune::internal {
namespace {

std::vector<std::string> words_of(const char* text) {
  std::vector<std::string> words;
  if (!text) return words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

}  // namespace

std::vector<std::string> mpirun_command(const MpiLaunch& launch) {
  std::vector<std::string> args = {"mpirun"};
  if (::geteuid() == 0) args.push_back("--allow-run-as-root");
  for (const char* word : {"--oversubscribe", "--bind-to", "none"}) args.push_back(word);
  args.insert(args.end(), {"-np", std::to_string(launch.ranks)});
  for (const auto& [name, value] : launch.env) args.insert(args.end(), {"-x", name});
  // One host: shared memory between ranks; no single-copy (CMA), which
  // containers often forbid.
  args.insert(args.end(), {"--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"});
  for (auto& word : words_of(std::getenv("TUNE_MPIRUN_ARGS"))) args.push_back(std::move(word));
  args.insert(args.end(), launch.program.begin(), launch.program.end());
  return args;
}

pid_t spawn_mpirun(const MpiLaunch& launch) {
  std::vector<std::string> args = mpirun_command(launch);
  std::set<std::string> replaced;
  for (const auto& [name, value] : launch.env) replaced.insert(name);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq || !replaced.count(std::string(*e, static_cast<size_t>(eq - *e)))) env.push_back(*e);
  }
  for (const auto& [name, value] : launch.env) env.push_back(name + "=" + value);

  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (launch.stdin_null) posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (!launch.log_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, launch.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "mpirun", &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) throw Error(std::string("cannot start mpirun (is openmpi-bin installed?): ") + std::strerror(rc));
  return pid;
}

int reap(pid_t pid, std::chrono::milliseconds grace) {
  auto deadline = std::chrono::steady_clock::now() + grace;
  int status = 0;
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(20)) pause *= 2;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string self_executable() {
  char buffer[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) throw Error("cannot find this program's path (/proc/self/exe)");
  return std::string(buffer, static_cast<size_t>(n));
}

}  // namespace tune::internal
