// A trial's cgroup, the record of its processes, and the sweep of what a
// dead driver's trials left running (tuner/exec/trial_processes.h).
#include "tuner/exec/trial_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include "tuner/exec/process_supervisor.h"

namespace tune::internal {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTrialDirVariable = "TUNE_TRIAL_DIR=";

// ---- cgroups ------------------------------------------------------------------


std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// This process's cgroup v2 folder ("" if there is none): the cgroup2 mount
// of /proc/self/mountinfo joined with the path of /proc/self/cgroup's
// "0::" line, relative to the mount's root.
std::string own_cgroup_dir() {
  std::string own;
  std::istringstream cgroups(read_file("/proc/self/cgroup"));
  for (std::string line; std::getline(cgroups, line);)
    if (line.rfind("0::", 0) == 0) own = line.substr(3);
  if (own.empty()) return "";
  std::istringstream mounts(read_file("/proc/self/mountinfo"));
  for (std::string line; std::getline(mounts, line);) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, device, root, mount_point;
    fields >> id >> parent >> device >> root >> mount_point;
    if (root != "/" && own.rfind(root, 0) != 0) continue;
    const std::string inside = root == "/" ? own : own.substr(root.size());
    const std::string dir = (fs::path(mount_point) / fs::path(inside).relative_path()).lexically_normal().string();
    std::string trimmed = dir.size() > 1 && dir.back() == '/' ? dir.substr(0, dir.size() - 1) : dir;
    if (::access(trimmed.c_str(), W_OK) == 0) return trimmed;
  }
  return "";
}

const std::string& cgroup_base() {
  static const std::string base = own_cgroup_dir();
  return base;
}

bool cgroups_disabled() {
  const char* off = std::getenv("TUNE_NO_CGROUP");
  return off && *off && std::strcmp(off, "0") != 0;
}

// A cgroup this driver (or an earlier one) made: under the base, "tune.*".
bool is_trial_cgroup(const std::string& path) {
  const std::string& base = cgroup_base();
  const fs::path p(path);
  return !base.empty() && p.parent_path() == fs::path(base) && p.filename().string().rfind("tune.", 0) == 0 &&
         p.filename().string().find('/') == std::string::npos && p.lexically_normal() == p;
}

}  // namespace

TrialCgroup make_trial_cgroup() {
  TrialCgroup cgroup;
  if (cgroups_disabled() || cgroup_base().empty()) return cgroup;
  static std::atomic<int> counter{0};
  const std::string path = cgroup_base() + "/tune." + std::to_string(::getpid()) + "." + std::to_string(++counter);
  if (::mkdir(path.c_str(), 0755) != 0) return cgroup;
  cgroup.procs_fd = ::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  cgroup.kill_fd = ::open((path + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);  // Linux >= 5.14
  if (cgroup.procs_fd < 0) {
    close_trial_cgroup(cgroup);
    ::rmdir(path.c_str());
    return cgroup;
  }
  cgroup.path = path;
  return cgroup;
}

void close_trial_cgroup(TrialCgroup& cgroup) {
  if (cgroup.procs_fd >= 0) ::close(cgroup.procs_fd);
  if (cgroup.kill_fd >= 0) ::close(cgroup.kill_fd);
  cgroup.procs_fd = cgroup.kill_fd = -1;
}

// ---- records and the sweep on resume ---------------------------------------------

namespace {

std::string host_name() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return host;
}

// Field 22 of /proc/PID/stat (clock ticks after boot); "" if it is gone.
std::string start_time(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  return field;
}

std::vector<pid_t> cgroup_members(const std::string& path) {
  std::vector<pid_t> pids;
  std::istringstream in(read_file(path + "/cgroup.procs"));
  for (long pid; in >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

int end_cgroup(const std::string& path) {
  std::error_code ec;
  if (!is_trial_cgroup(path) || !fs::is_directory(path, ec)) return 0;
  int signalled = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (true) {
    const std::vector<pid_t> members = cgroup_members(path);
    if (members.empty() || std::chrono::steady_clock::now() > deadline) break;
    std::ofstream(path + "/cgroup.kill") << "1";
    for (const pid_t pid : members) signalled += ::kill(pid, SIGKILL) == 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::rmdir(path.c_str());
  return signalled;
}

// A recorded supervisor, if that very process still runs.
int end_supervisor(pid_t pid, const std::string& started) {
  if (pid <= 1 || started.empty() || start_time(pid) != started) return 0;
  std::string comm = read_file("/proc/" + std::to_string(pid) + "/comm");
  if (comm != std::string(kSupervisorName) + "\n") return 0;
  ::kill(pid, SIGTERM);  // it ends its descendants, then itself
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (start_time(pid) == started && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (start_time(pid) == started) ::kill(pid, SIGKILL);
  return 1;
}

// TUNE_TRIAL_DIR in a process's environment; "" if unreadable or unset.
std::string trial_dir_of(const std::string& pid) {
  const std::string environ = read_file("/proc/" + pid + "/environ");
  const std::string key = kTrialDirVariable;
  for (size_t start = 0; start < environ.size();) {
    size_t end = environ.find('\0', start);
    if (end == std::string::npos) end = environ.size();
    if (environ.compare(start, key.size(), key) == 0) return environ.substr(start + key.size(), end - start - key.size());
    start = end + 1;
  }
  return "";
}

// SIGKILL to every process (but this one) whose TUNE_TRIAL_DIR is one of
// `trial_dirs`: a trial's programs and whatever they started that kept the
// environment, wherever it was reparented.
int end_marked(const std::set<std::string>& trial_dirs) {
  if (trial_dirs.empty()) return 0;
  int signalled = 0;
  const std::string self = std::to_string(::getpid());
  for (int round = 0; round < 20; ++round) {
    int found = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      const std::string pid = entry.path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos || pid == self) continue;
      const std::string dir = trial_dir_of(pid);
      if (dir.empty() || !trial_dirs.count(fs::path(dir).lexically_normal().string())) continue;
      found += ::kill(static_cast<pid_t>(std::stol(pid)), SIGKILL) == 0;
    }
    signalled += found;
    if (found == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return signalled;
}

int end_recorded(const fs::path& record) {
  std::istringstream in(read_file(record.string()));
  std::string host, cgroup, supervisor_start;
  long supervisor = 0;
  for (std::string key; in >> key;) {
    if (key == "host") {
      in >> host;
    } else if (key == "supervisor") {
      in >> supervisor >> supervisor_start;
    } else if (key == "cgroup") {
      std::getline(in >> std::ws, cgroup);
    } else {
      std::string rest;
      std::getline(in, rest);
    }
  }
  if (host != host_name()) return 0;  // another host's: not ours to end
  int signalled = 0;
  if (!cgroup.empty()) signalled += end_cgroup(cgroup);
  signalled += end_supervisor(static_cast<pid_t>(supervisor), supervisor_start);
  std::error_code ec;
  fs::remove(record, ec);
  return signalled;
}

bool is_record(const fs::path& path) {
  const std::string name = path.filename().string();
  return name == "processes" || (name.size() > 10 && name.compare(name.size() - 10, 10, ".processes") == 0);
}

int end_records_in(const fs::path& trial_dir) {
  int signalled = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(trial_dir, ec))
    if (is_record(entry.path()) && entry.is_regular_file(ec)) signalled += end_recorded(entry.path());
  return signalled;
}

}  // namespace

void record_trial_processes(const std::string& path, pid_t supervisor, pid_t program, const std::string& cgroup) {
  std::ofstream out(path, std::ios::trunc);
  out << "host " << host_name() << "\nsupervisor " << supervisor << " " << start_time(supervisor) << "\nprogram "
      << program << " " << start_time(program) << "\n";
  if (!cgroup.empty()) out << "cgroup " << cgroup << "\n";
}

int end_leftover_processes(const std::string& trial_dir) {
  try {
    const fs::path dir = fs::absolute(trial_dir).lexically_normal();
    return end_records_in(dir) + end_marked({dir.string()});
  } catch (const std::exception&) {
    return 0;
  }
}

int end_leftover_processes_of_experiment(const std::string& experiment_dir) {
  try {
    int signalled = 0;
    std::set<std::string> trial_dirs;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::absolute(experiment_dir), ec)) {
      if (!entry.is_directory(ec) || entry.path().filename().string().rfind("trial_", 0) != 0) continue;
      const fs::path dir = entry.path().lexically_normal();
      signalled += end_records_in(dir);
      trial_dirs.insert(dir.string());
    }
    return signalled + end_marked(trial_dirs);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace tune::internal
