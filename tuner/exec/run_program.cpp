#include "tuner/exec/run_program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/error.h"

namespace tune::internal {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

Captured run_program(const std::vector<std::string>& argv, const std::string& input, const RunLimits& limits) {
  int in[2], out[2], err[2], exec_error[2];
  if (::pipe(in) || ::pipe(out) || ::pipe(err) || ::pipe2(exec_error, O_CLOEXEC)) {
    throw Error("pipe: " + std::string(std::strerror(errno)));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("fork: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1], exec_error[0]}) ::close(fd);
    ::execvp(args[0], args.data());
    const int code = errno;
    (void)!::write(exec_error[1], &code, sizeof code);
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  ::close(exec_error[1]);
  int code = 0;
  const bool exec_failed = ::read(exec_error[0], &code, sizeof code) == sizeof code;
  ::close(exec_error[0]);
  Captured captured;
  int to_child = in[1], from_out = out[0], from_err = err[0];
  if (exec_failed) close_fd(to_child);
  // Feed stdin and drain both outputs together: neither side can block the other.
  signal(SIGPIPE, SIG_IGN);
  size_t written = 0;
  const auto start = std::chrono::steady_clock::now();
  auto left_ms = [&]() -> int {
    if (limits.timeout_s <= 0) return -1;
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::max(0, static_cast<int>((limits.timeout_s - spent) * 1000));
  };
  while (from_out >= 0 || from_err >= 0) {
    if (limits.timeout_s > 0 && left_ms() == 0) {
      captured.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd fds[3];
    int n = 0;
    if (to_child >= 0) fds[n++] = {to_child, POLLOUT, 0};
    if (from_out >= 0) fds[n++] = {from_out, POLLIN, 0};
    if (from_err >= 0) fds[n++] = {from_err, POLLIN, 0};
    if (::poll(fds, static_cast<nfds_t>(n), left_ms()) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == to_child) {
        const ssize_t k = written < input.size() ? ::write(to_child, input.data() + written, input.size() - written) : 0;
        if (k > 0) written += static_cast<size_t>(k);
        if (k <= 0 || written >= input.size()) close_fd(to_child);
      } else {
        char buffer[4096];
        const ssize_t k = ::read(fds[i].fd, buffer, sizeof buffer);
        std::string& sink = fds[i].fd == from_out ? captured.out : captured.err;
        if (k > 0) {
          if (sink.size() < limits.max_output) sink.append(buffer, std::min(static_cast<size_t>(k), limits.max_output - sink.size()));
        } else {
          close_fd(fds[i].fd == from_out ? from_out : from_err);
        }
      }
    }
  }
  close_fd(to_child);
  close_fd(from_out);
  close_fd(from_err);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (exec_failed) {
    if (code == ENOENT) throw Error(argv[0] + " not found in PATH" + limits.missing_hint);
    throw Error("cannot run " + argv[0] + ": " + std::strerror(code));
  }
  captured.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return captured;
}


}  // namespace tune::internal
