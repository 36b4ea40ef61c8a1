#include "tuner/exec/mpi_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
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

// Where OpenMPI's vader transport puts its shared-memory segments.
std::string vader_backing_directory() {
  const char* backing = std::getenv("OMPI_MCA_btl_vader_backing_directory");
  return backing && *backing ? backing : "/dev/shm";
}

}  // namespace

std::string bind_shim_path() {
  if (const char* path = std::getenv("TUNE_BIND_SHIM")) return path;
  for (const char* path : {TUNE_BIND_SHIM_BUILD, TUNE_BIND_SHIM_INSTALL}) {
    if (::access(path, R_OK) == 0) return path;
  }
  // An installed package moved to another prefix (a .deb built with a
  // /usr/local build, an install to a temporary prefix): beside bin/, or
  // seen from libexec/tune/ (tune-full).
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/') + 1);
    for (const char* relative : {TUNE_BIND_SHIM_RELATIVE, TUNE_BIND_SHIM_FROM_LIBEXEC}) {
      const std::string path = dir + relative;
      if (::access(path.c_str(), R_OK) == 0) return path;
    }
  }
  return "";
}

std::vector<std::string> mpirun_command(const MpiLaunch& launch) {
  std::vector<std::string> args = {"mpirun"};
  if (::geteuid() == 0) args.push_back("--allow-run-as-root");
  for (const char* word : {"--oversubscribe", "--bind-to", "none"}) args.push_back(word);
  args.insert(args.end(), {"-np", std::to_string(launch.ranks)});
  if (!launch.hosts.empty()) {
    std::string hosts;
    for (const auto& [host, ranks] : launch.hosts) hosts += (hosts.empty() ? "" : ",") + host + ":" + std::to_string(ranks);
    args.insert(args.end(), {"--host", hosts});
  }
  for (const auto& [name, value] : launch.env) args.insert(args.end(), {"-x", name});
  // Shared memory between ranks of a host (no single-copy CMA, which
  // containers often forbid); TCP on the cluster's network between hosts.
  if (launch.hosts.empty() || launch.network.empty()) {
    args.insert(args.end(), {"--mca", "btl", "self,vader"});
  } else {
    args.insert(args.end(), {"--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include", launch.network,
                             "--mca", "oob_tcp_if_include", launch.network});
  }
  args.insert(args.end(), {"--mca", "btl_vader_single_copy_mechanism", "none"});
  if (!launch.hosts.empty() && launch.liveness_s > 0) {
    const int idle = std::max(1, static_cast<int>(launch.liveness_s / 4));
    const int interval = std::max(1, static_cast<int>(launch.liveness_s / 8));
    args.insert(args.end(), {"--mca", "oob_tcp_keepalive_time", std::to_string(idle), "--mca", "oob_tcp_keepalive_intvl",
                             std::to_string(interval), "--mca", "oob_tcp_keepalive_probes", "4"});
  }
  const std::string shim = bind_shim_path();
  if (!shim.empty() && !launch.hosts.empty() && !launch.driver_address.empty()) {
    // Each host's orted binds the address it reaches the driver from.
    args.insert(args.end(), {"--mca", "orte_launch_agent",
                             "env LD_PRELOAD=" + shim + " TUNE_BIND_RANKS=1 TUNE_BIND_TOWARD=" +
                                 launch.driver_address + " orted"});
  }
  // Inside a Slurm allocation OpenMPI starts each host's orted with srun; a
  // step takes every CPU of its nodes unless it may overlap, so a second
  // concurrent group would wait for the first (Slurm >= 20.11).
  if (!launch.hosts.empty() && std::getenv("SLURM_JOB_ID")) {
    args.insert(args.end(), {"--mca", "plm_slurm_args", "--overlap"});
  }
  for (auto& word : words_of(std::getenv("TUNE_MPIRUN_ARGS"))) args.push_back(std::move(word));
  args.insert(args.end(), launch.program.begin(), launch.program.end());
  return args;
}

pid_t spawn_mpirun(const MpiLaunch& launch) {
  std::vector<std::string> args = mpirun_command(launch);
  std::set<std::string> replaced = {"LD_PRELOAD", "TUNE_BIND_ADDRESS", "TUNE_BIND_RANKS"};
  for (const auto& [name, value] : launch.env) replaced.insert(name);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq || !replaced.count(std::string(*e, static_cast<size_t>(eq - *e)))) env.push_back(*e);
  }
  for (const auto& [name, value] : launch.env) env.push_back(name + "=" + value);
  if (const std::string shim = bind_shim_path(); !shim.empty()) {
    const char* preloaded = std::getenv("LD_PRELOAD");  // the user's own preloads stay
    env.push_back("LD_PRELOAD=" + shim + (preloaded && *preloaded ? std::string(" ") + preloaded : ""));
    env.push_back("TUNE_BIND_ADDRESS=" + (launch.driver_address.empty() ? std::string("127.0.0.1") : launch.driver_address));
    // Ranks on the driver's host listen for ranks elsewhere only on that address.
    if (!launch.hosts.empty() && !launch.driver_address.empty()) env.push_back("TUNE_BIND_RANKS=1");
  }

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

void kill_mpirun(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGSTOP);  // no new children while they are listed
  std::vector<pid_t> children;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream file(it->path() / "stat");
    std::string stat;
    std::getline(file, stat);
    const size_t close = stat.rfind(')');  // the command may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    std::string state;
    long parent = 0;
    if (fields >> state >> parent && parent == pid) children.push_back(static_cast<pid_t>(std::stol(name)));
  }
  const pid_t own = ::getpgrp();
  for (pid_t child : children) {
    const pid_t group = ::getpgid(child);
    if (group > 1 && group != pid && group != own) ::kill(-group, SIGKILL);
    ::kill(child, SIGKILL);
  }
  ::kill(-pid, SIGKILL);
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
  return reaped_mpirun(pid, status);
}

int reaped_mpirun(pid_t pid, int wait_status) {
  if (WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGKILL) remove_killed_mpirun_leftovers(pid);
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

int remove_killed_mpirun_leftovers(pid_t pid) {
  namespace fs = std::filesystem;
  const std::string uid = std::to_string(::geteuid());
  // Where OpenMPI 4's mpirun puts its session folder: the tmpdir base MCA
  // parameters, else TMPDIR, TEMP, TMP, else /tmp (opal_tmp_directory).
  std::string base = "/tmp";
  for (const char* name : {"OMPI_MCA_orte_local_tmpdir_base", "OMPI_MCA_orte_tmpdir_base", "TMPDIR", "TEMP", "TMP"}) {
    const char* value = std::getenv(name);
    if (value && *value) {
      base = value;
      break;
    }
  }
  // <base>/ompi.<node>.<uid>/pid.<pid>: the node as OpenMPI names it is
  // not recomputed; any ompi.*.<uid> folder holding pid.<pid> is looked at.
  fs::path session;
  std::error_code ec;
  const std::string suffix = "." + uid;
  for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("ompi.", 0) != 0 || name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const fs::path candidate = it->path() / ("pid." + std::to_string(pid));
    std::error_code type_ec;
    if (fs::is_directory(fs::symlink_status(candidate, type_ec))) {
      session = candidate;
      break;
    }
  }
  if (session.empty()) return 0;
  // contact.txt: "<daemon job id>.<vpid>;<uri>" then mpirun's pid. Its job
  // family (the id's upper 16 bits) names its ranks' segments.
  std::ifstream contact(session / "contact.txt");
  std::string uri, written_pid;
  const bool has_contact = static_cast<bool>(std::getline(contact, uri));
  if (has_contact && (!std::getline(contact, written_pid) || written_pid != std::to_string(pid))) return 0;  // another's
  int removed = 0;
  const unsigned long long daemon_job = has_contact ? std::strtoull(uri.c_str(), nullptr, 10) : 0;
  if (daemon_job > 0) {
    const unsigned long long family = daemon_job >> 16;
    const std::string shm = vader_backing_directory();
    for (fs::directory_iterator it(shm, ec), end; !ec && it != end; it.increment(ec)) {
      // vader_segment.<node>.<uid>.<job id, hex>.<local rank>: the node
      // may hold dots, so the last three fields are read from the end.
      const std::string name = it->path().filename().string();
      if (name.rfind("vader_segment.", 0) != 0) continue;
      const size_t rank_dot = name.rfind('.');
      const size_t job_dot = rank_dot == std::string::npos || rank_dot == 0 ? std::string::npos : name.rfind('.', rank_dot - 1);
      const size_t uid_dot = job_dot == std::string::npos || job_dot == 0 ? std::string::npos : name.rfind('.', job_dot - 1);
      if (uid_dot == std::string::npos || uid_dot < std::strlen("vader_segment")) continue;
      if (name.substr(uid_dot + 1, job_dot - uid_dot - 1) != uid) continue;
      const std::string job_hex = name.substr(job_dot + 1, rank_dot - job_dot - 1);
      if (job_hex.empty() || job_hex.size() > 8 || job_hex.find_first_not_of("0123456789abcdef") != std::string::npos) continue;
      const unsigned long long job = std::strtoull(job_hex.c_str(), nullptr, 16);
      if (job >> 16 != family || (job & 0xffff) == 0) continue;
      struct stat info {};
      if (::lstat(it->path().c_str(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != ::geteuid()) continue;
      removed += ::unlink(it->path().c_str()) == 0;
    }
  }
  std::error_code remove_ec;
  if (fs::remove_all(session, remove_ec) > 0 && !remove_ec) ++removed;
  return removed;
}

int remove_orphaned_segments(const std::string& directory, double min_age_s) {
  namespace fs = std::filesystem;
  const std::string dir = directory.empty() ? vader_backing_directory() : directory;
  std::vector<std::string> candidates;
  std::error_code ec;
  const auto now = std::chrono::system_clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("vader_segment.", 0) != 0) continue;
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != ::geteuid()) continue;
    const auto modified = std::chrono::system_clock::from_time_t(info.st_mtime);
    if (std::chrono::duration<double>(now - modified).count() < min_age_s) continue;
    candidates.push_back(it->path().string());
  }
  if (candidates.empty()) return 0;
  // Whatever any process maps (a mapping's path is the line's last field).
  std::set<std::string> mapped;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream maps(it->path() / "maps");
    for (std::string line; std::getline(maps, line);) {
      const size_t at = line.find(dir);
      if (at != std::string::npos) mapped.insert(line.substr(at));
    }
  }
  int removed = 0;
  for (const std::string& path : candidates) {
    if (mapped.count(path) || mapped.count(path + " (deleted)")) continue;
    removed += ::unlink(path.c_str()) == 0;
  }
  return removed;
}

std::string self_executable() {
  char buffer[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) throw Error("cannot find this program's path (/proc/self/exe)");
  return std::string(buffer, static_cast<size_t>(n));
}

}  // namespace tune::internal
