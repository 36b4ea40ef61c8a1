// ChildProcess: see tuner/exec/child_process.h; the supervisor it talks to
// is in trial_processes.cpp.
#include "tuner/exec/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/json.h"
#include "tuner/exec/process_supervisor.h"

namespace tune::internal {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr size_t kMaxLine = size_t{16} << 20;  // a longer stdout line fails the trial
constexpr size_t kStderrTail = 4096;
constexpr int kKilled = SIGKILL;  // a wait status: killed by SIGKILL

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Reads one chunk of `fd` into `chunk`; 0 at its end (or on an error).
ssize_t read_chunk(int fd, char* chunk, size_t size) {
  ssize_t n;
  while ((n = ::read(fd, chunk, size)) < 0 && errno == EINTR) {
  }
  return n < 0 && errno == EAGAIN ? -1 : std::max<ssize_t>(n, 0);
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& cwd,
                           const std::vector<std::string>& env, const std::string& log_prefix,
                           std::string line_prefix, uint64_t log_max_bytes)
    : line_prefix_(std::move(line_prefix)) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int out[2] = {-1, -1}, err[2] = {-1, -1}, failed[2] = {-1, -1}, control[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(failed, O_CLOEXEC) != 0 ||
      ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) != 0) {
    const int error = errno;
    for (int fd : {out[0], out[1], err[0], err[1], failed[0], failed[1], control[0], control[1]})
      if (fd >= 0) ::close(fd);
    const std::string message = std::string("cannot create pipes for the trial's program: ") + std::strerror(error);
    if (is_out_of_descriptors(error)) throw OutOfDescriptorsError(message);
    throw Error(message);
  }
  TrialCgroup cgroup = make_trial_cgroup();
  SupervisorPlan plan;
  plan.argv = args.data();
  plan.envp = envp.data();
  plan.cwd = cwd.c_str();
  plan.stdout_fd = out[1];
  plan.stderr_fd = err[1];
  plan.failed_fd = failed[1];
  plan.control_fd = control[1];
  plan.cgroup = cgroup;
  supervisor_ = ::fork();
  if (supervisor_ == 0) run_supervisor(plan);
  const int fork_error = errno;
  close_trial_cgroup(cgroup);
  for (int fd : {out[1], err[1], failed[1], control[1]}) ::close(fd);
  out_ = out[0];
  err_ = err[0];
  control_ = control[0];
  if (supervisor_ < 0) {
    close_fd(out_), close_fd(err_), close_fd(control_), ::close(failed[0]);
    finished_ = true;
    throw Error(std::string("cannot start the trial's program: fork: ") + std::strerror(fork_error));
  }
  // The failure pipe closes when the program has exec'd (or failed to).
  int code = 0;
  ssize_t n;
  while ((n = ::read(failed[0], &code, sizeof code)) < 0 && errno == EINTR) {
  }
  ::close(failed[0]);
  if (n == sizeof code) {
    finish();
    if (code < 0) throw Error("cannot enter " + cwd + " to run the trial's program: " + std::strerror(-code));
    const std::string message = "cannot run '" + argv[0] + "' (in " + cwd + "): " + std::strerror(code);
    // The program's process starts with this one's descriptors, so a full table fails its exec.
    if (is_out_of_descriptors(code)) throw OutOfDescriptorsError(message);
    throw Error(message);
  }
  // The supervisor says which process the program is right after starting it.
  for (const auto start = SteadyClock::now(); program_ < 0 && !status_ && SteadyClock::now() - start < std::chrono::seconds(10);) {
    pollfd fd{control_, POLLIN, 0};
    if (::poll(&fd, 1, 100) > 0) read_control();
  }
  record_path_ = log_prefix + "processes";
  record_trial_processes(record_path_, supervisor_, program_, cgroup.path);
  stdout_log_.open(log_prefix + "stdout.log", log_max_bytes);
  stderr_log_.open(log_prefix + "stderr.log", log_max_bytes);
  last_output_ = SteadyClock::now();
}

ChildProcess::~ChildProcess() {
  try {
    finish();
  } catch (...) {
  }
  close_fd(out_);
  close_fd(err_);
}

void ChildProcess::read_control() {
  if (control_ < 0) return;
  char buffer[256];
  ssize_t n;
  while ((n = ::recv(control_, buffer, sizeof buffer, MSG_DONTWAIT)) > 0) control_buffer_.append(buffer, n);
  const bool closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
  constexpr size_t kMessage = 5;
  while (control_buffer_.size() >= kMessage) {
    int32_t value = 0;
    std::memcpy(&value, control_buffer_.data() + 1, sizeof value);
    if (control_buffer_[0] == kProgramStarted) {
      program_ = value;
    } else if (control_buffer_[0] == kProgramExited && !status_) {
      status_ = value;
      exited_at_ = SteadyClock::now();
    }
    control_buffer_.erase(0, kMessage);
  }
  if (closed) {
    close_fd(control_);
    if (!status_) {  // the supervisor died (SIGKILL): the program is gone with it (PDEATHSIG)
      status_ = kKilled;
      exited_at_ = SteadyClock::now();
      tail_ += "\n(the trial's supervisor process was killed)";
    }
  }
}

bool ChildProcess::pump(int timeout_ms, std::vector<std::string>* results) {
  auto drained = [&] {
    if (!status_) return false;
    const auto now = SteadyClock::now();
    return out_ < 0 || now - exited_at_ >= kDrainLimit || now - std::max(exited_at_, last_output_) >= kDrainQuiet;
  };
  if (drained()) return false;
  if (status_) {  // waiting only as long as the drain may still last
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(exited_at_, last_output_) + kDrainQuiet - SteadyClock::now());
    timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, timeout_ms));
  }
  pollfd fds[3] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}, {control_, POLLIN, 0}};
  if (::poll(fds, 3, timeout_ms) <= 0) return !drained();
  if (fds[2].revents) read_control();
  char chunk[65536];
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const ssize_t n = read_chunk(fds[i].fd, chunk, sizeof chunk);
    if (n < 0) continue;
    if (n == 0) {
      close_fd(i == 0 ? out_ : err_);
      if (i == 0 && !line_.empty()) take_line(results);  // a last line without '\n'
      continue;
    }
    if (i == 1) {
      stderr_log_.write(chunk, n);
      stderr_log_.flush();
      tail_.append(chunk, static_cast<size_t>(n));
      if (tail_.size() > 2 * kStderrTail) tail_.erase(0, tail_.size() - kStderrTail);
      continue;
    }
    last_output_ = SteadyClock::now();
    for (ssize_t k = 0; k < n; ++k) {
      if (chunk[k] != '\n') {
        line_ += chunk[k];
        if (line_.size() > kMaxLine) throw Error("the trial's program wrote a stdout line over 16 MiB");
      } else {
        take_line(results);
      }
    }
  }
  return !drained();
}

std::optional<int> ChildProcess::reap(bool block) {
  if (!status_ && !block) {
    pollfd fd{control_, POLLIN, 0};
    if (control_ >= 0 && ::poll(&fd, 1, 0) > 0) read_control();
  }
  while (!status_ && block) pump(100, nullptr);
  if (!status_) return std::nullopt;
  finish();
  return status_;
}

void ChildProcess::stop(double grace) {
  if (finished_) return;
  if (!status_ && control_ >= 0) {
    const char command = kTerminateProgram;
    (void)!::send(control_, &command, 1, MSG_NOSIGNAL);
    const auto start = SteadyClock::now();
    while (!status_ && std::chrono::duration<double>(SteadyClock::now() - start).count() < grace) pump(10, nullptr);
  }
  finish();
}

void ChildProcess::finish() {
  if (finished_) return;
  finished_ = true;
  if (control_ >= 0) {
    // The supervisor reads the end of its control socket, ends every
    // process of the trial, says how the program ended if it had not, and exits.
    ::shutdown(control_, SHUT_WR);
    const auto start = SteadyClock::now();
    while (control_ >= 0 && SteadyClock::now() - start < std::chrono::seconds(10)) {
      pollfd fd{control_, POLLIN, 0};
      if (::poll(&fd, 1, 100) > 0) read_control();
    }
    if (control_ >= 0) ::kill(supervisor_, SIGKILL);  // it did not end: end it (its program has PDEATHSIG)
    close_fd(control_);
  }
  if (supervisor_ > 0) {
    int status = 0;
    while (::waitpid(supervisor_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!status_) status_ = kKilled;
  // Whatever is left in the pipes goes to the logs; every writer is gone now.
  char chunk[65536];
  const auto start = SteadyClock::now();
  while ((out_ >= 0 || err_ >= 0) && SteadyClock::now() - start < std::chrono::seconds(1)) {
    pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
    if (::poll(fds, 2, 100) <= 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !fds[i].revents) continue;
      const ssize_t n = read_chunk(fds[i].fd, chunk, sizeof chunk);
      if (n <= 0) {
        close_fd(i == 0 ? out_ : err_);
      } else {
        (i == 0 ? stdout_log_ : stderr_log_).write(chunk, n);
      }
    }
  }
  if (!line_.empty()) stdout_log_.write_line(line_);
  line_.clear();
  stdout_log_.flush();
  stderr_log_.flush();
  close_fd(out_);
  close_fd(err_);
  std::error_code ec;
  if (!record_path_.empty()) std::filesystem::remove(record_path_, ec);
}

std::string ChildProcess::describe(int status) const {
  std::string what = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                       : "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                                             strsignal(WTERMSIG(status)) + ")";
  std::string tail = tail_.size() > kStderrTail ? tail_.substr(tail_.size() - kStderrTail) : tail_;
  // The last few lines, on one line.
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < tail.size()) {
    size_t end = tail.find('\n', start);
    if (end == std::string::npos) end = tail.size();
    std::string line = tail.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
    start = end + 1;
  }
  std::string last;
  for (size_t i = lines.size() > 5 ? lines.size() - 5 : 0; i < lines.size(); ++i)
    last += (last.empty() ? "" : " | ") + lines[i];
  if (last.size() > 1000) last = "..." + last.substr(last.size() - 1000);
  return last.empty() ? what : what + ": " + one_line(last);
}

void ChildProcess::take_line(std::vector<std::string>* results) {
  stdout_log_.write_line(line_);
  stdout_log_.flush();
  if (results && line_.rfind(line_prefix_, 0) == 0) results->push_back(line_.substr(line_prefix_.size()));
  line_.clear();
}

}  // namespace tune::internal
