// The supervisor of a trial's program, its cgroup, and the sweep of what a
// dead driver's trials left running (tuner/exec/trial_processes.h).
#include "tuner/exec/trial_processes.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

namespace tune::internal {
namespace {

namespace fs = std::filesystem;

// The supervisor's name in /proc/PID/comm: the resume sweep signals a
// recorded supervisor only if it still has this name and its start time.
constexpr char kSupervisorName[] = "tune-supervise";
constexpr const char* kTrialDirVariable = "TUNE_TRIAL_DIR=";

// ---- the supervisor (after fork: async-signal-safe calls only) -------------

void send_message(int fd, char kind, int32_t value) {
  char message[5] = {kind};
  std::memcpy(message + 1, &value, sizeof value);
  while (::send(fd, message, sizeof message, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

// Closes every descriptor from 3 up except those in `keep` (sorted here).
void close_all_but(int* keep, int count) {
  for (int i = 1; i < count; ++i)
    for (int j = i; j > 0 && keep[j - 1] > keep[j]; --j) std::swap(keep[j - 1], keep[j]);
  unsigned next = 3;
  for (int i = 0; i < count; ++i) {
    if (keep[i] < 0 || static_cast<unsigned>(keep[i]) < next) continue;
    if (static_cast<unsigned>(keep[i]) > next) ::syscall(SYS_close_range, next, keep[i] - 1, 0);
    next = static_cast<unsigned>(keep[i]) + 1;
  }
  if (::syscall(SYS_close_range, next, ~0U, 0) != 0) {  // before Linux 5.9
    for (unsigned fd = next; fd < 65536; ++fd) ::close(static_cast<int>(fd));
  }
}

// SIGKILL to every direct child (read from /proc); false if none is listed.
bool kill_children() {
  const int fd = ::open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buffer[4096];
  bool any = false;
  long pid = 0;
  bool in_number = false;
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] >= '0' && buffer[i] <= '9') {
        pid = pid * 10 + (buffer[i] - '0');
        in_number = true;
      } else if (in_number) {
        ::kill(static_cast<pid_t>(pid), SIGKILL);
        any = true;
        pid = 0;
        in_number = false;
      }
    }
  }
  if (in_number) {
    ::kill(static_cast<pid_t>(pid), SIGKILL);
    any = true;
  }
  ::close(fd);
  return any;
}

// Ends the program and every descendant: the cgroup at once where there is
// one; then, as their subreaper, every child until none is left (a killed
// process's children become ours, and are killed in the next round).
void end_everything(const SupervisorPlan& plan, pid_t program, bool* program_done, int control) {
  if (plan.cgroup.kill_fd >= 0) (void)!::write(plan.cgroup.kill_fd, "1", 1);
  if (!*program_done) ::kill(-program, SIGKILL);  // the group: its leader not reaped, the id is its own
  for (int round = 0; round < 100000; ++round) {
    kill_children();
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;  // ECHILD: no descendant is left
    if (pid == program && !*program_done) {
      *program_done = true;
      send_message(control, kProgramExited, status);
    }
  }
  if (!plan.cgroup.path.empty()) {
    // Empty once every member is reaped; a member of a killed cgroup may take
    // a moment to leave it.
    for (int i = 0; i < 200 && ::rmdir(plan.cgroup.path.c_str()) != 0 && errno == EBUSY; ++i) {
      const timespec pause{0, 5 * 1000 * 1000};
      ::nanosleep(&pause, nullptr);
    }
  }
}

[[noreturn]] void start_program(const SupervisorPlan& plan, pid_t supervisor) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &default_action, nullptr);
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != supervisor) ::_exit(127);
  if (plan.cgroup.procs_fd >= 0) (void)!::write(plan.cgroup.procs_fd, "0", 1);  // "0": the writer
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) ::dup2(null, 0);
  ::dup2(plan.stdout_fd, 1);
  ::dup2(plan.stderr_fd, 2);
  int code;  // negative: chdir failed; positive: exec failed
  if (::chdir(plan.cwd) != 0) {
    code = -errno;
  } else {
    ::execvpe(plan.argv[0], plan.argv, plan.envp);
    code = errno;
  }
  (void)!::write(plan.failed_fd, &code, sizeof code);
  ::_exit(127);
}

}  // namespace

[[noreturn]] void run_supervisor(const SupervisorPlan& plan) {
  const pid_t parent = ::getppid();
  ::setpgid(0, 0);  // not in tune's group: a Ctrl-C there is tune's to handle
  ::prctl(PR_SET_NAME, kSupervisorName);
  ::prctl(PR_SET_PDEATHSIG, SIGHUP);  // the thread that started it ended
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);  // only SIGKILL ends it; these arrive as reads:
  sigset_t watched;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, SIGHUP);
  sigaddset(&watched, SIGTERM);
  const int signals = ::signalfd(-1, &watched, SFD_NONBLOCK | SFD_CLOEXEC);
  if (::getppid() != parent) ::_exit(0);  // tune ended before PDEATHSIG was set
  const int null = ::open("/dev/null", O_RDWR);  // not tune's terminal or log pipes
  if (null >= 0) {
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
    if (null > 2) ::close(null);
  }
  int keep[] = {plan.stdout_fd, plan.stderr_fd, plan.failed_fd, plan.control_fd,
                plan.cgroup.procs_fd, plan.cgroup.kill_fd, signals};
  close_all_but(keep, sizeof keep / sizeof keep[0]);

  const pid_t self = ::getpid();
  const pid_t program = ::fork();
  if (program == 0) start_program(plan, self);
  if (program < 0) {
    const int code = errno;
    (void)!::write(plan.failed_fd, &code, sizeof code);
    ::_exit(0);
  }
  ::setpgid(program, program);  // also here: no race with an early kill
  ::close(plan.stdout_fd);
  ::close(plan.stderr_fd);
  ::close(plan.failed_fd);
  if (plan.cgroup.procs_fd >= 0) ::close(plan.cgroup.procs_fd);
  send_message(plan.control_fd, kProgramStarted, program);

  bool program_done = false;
  // Without a signalfd (it failed), poll looks for exits every 100 ms.
  pollfd fds[2] = {{plan.control_fd, POLLIN, 0}, {signals, POLLIN, 0}};
  while (true) {
    if (::poll(fds, signals >= 0 ? 2 : 1, signals >= 0 ? -1 : 100) < 0 && errno != EINTR) break;
    bool end = false;
    signalfd_siginfo info;
    while (signals >= 0 && ::read(signals, &info, sizeof info) == sizeof info) {
      if (info.ssi_signo == SIGHUP || info.ssi_signo == SIGTERM) end = true;
    }
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid == program && !program_done) {
        program_done = true;
        send_message(plan.control_fd, kProgramExited, status);
      }
    }
    if (fds[0].revents) {
      char command = 0;
      const ssize_t n = ::recv(plan.control_fd, &command, 1, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) end = true;  // tune closed it, or died
      if (n == 1 && command == kTerminateProgram && !program_done) ::kill(-program, SIGTERM);
    }
    if (end) break;
  }
  end_everything(plan, program, &program_done, plan.control_fd);
  ::_exit(0);
}

// ---- cgroups ------------------------------------------------------------------

namespace {

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
