// The supervisor of a trial's program (tuner/exec/process_supervisor.h).
// Everything here runs in the child of fork() of a multi-threaded process:
// async-signal-safe calls only (no allocation, no locks) until it exits.
#include "tuner/exec/process_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

namespace tune::internal {
namespace {

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

}  // namespace tune::internal
