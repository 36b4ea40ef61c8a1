// ChildProcess: see tuner/exec/child_process.h.
#include "tuner/exec/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/error.h"

namespace tune::internal {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxLine = size_t{16} << 20;  // a longer stdout line fails the trial
constexpr size_t kStderrTail = 4096;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& cwd,
                           const std::vector<std::string>& env, const std::string& log_prefix,
                           std::string line_prefix)
    : line_prefix_(std::move(line_prefix)) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int out[2], err[2], failed[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(failed, O_CLOEXEC) != 0)
    throw Error(std::string("cannot create pipes for the trial's program: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw Error(std::string("cannot start the trial's program: fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    // Only async-signal-safe calls until exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    int code;  // negative: chdir failed; positive: exec failed
    if (::chdir(cwd.c_str()) != 0) {
      code = -errno;
    } else {
      ::execvpe(args[0], args.data(), envp.data());
      code = errno;
    }
    (void)!::write(failed[1], &code, sizeof code);
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);  // also here: no race with an early kill
  ::close(out[1]);
  ::close(err[1]);
  ::close(failed[1]);
  out_ = out[0];
  err_ = err[0];
  int code = 0;
  ssize_t n;
  while ((n = ::read(failed[0], &code, sizeof code)) < 0 && errno == EINTR) {
  }
  ::close(failed[0]);
  if (n == sizeof code) {
    reap(true);
    ::close(out_);
    ::close(err_);
    if (code < 0) throw Error("cannot enter " + cwd + " to run the trial's program: " + std::strerror(-code));
    throw Error("cannot run '" + argv[0] + "' (in " + cwd + "): " + std::strerror(code));
  }
  stdout_log_.open(log_prefix + "stdout.log", std::ios::app);
  stderr_log_.open(log_prefix + "stderr.log", std::ios::app);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exited_) {
    ::kill(-pid_, SIGKILL);
    reap(true);
  }
  if (out_ >= 0) ::close(out_);
  if (err_ >= 0) ::close(err_);
}

bool ChildProcess::pump(int timeout_ms, std::vector<std::string>* results) {
  pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
  const int open = (out_ >= 0) + (err_ >= 0);
  if (open == 0) return false;
  if (::poll(fds, 2, timeout_ms) <= 0) return true;
  char chunk[65536];
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const ssize_t n = ::read(fds[i].fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fds[i].fd);
      (i == 0 ? out_ : err_) = -1;
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
    for (ssize_t k = 0; k < n; ++k) {
      if (chunk[k] != '\n') {
        line_ += chunk[k];
        if (line_.size() > kMaxLine) throw Error("the trial's program wrote a stdout line over 16 MiB");
      } else {
        take_line(results);
      }
    }
  }
  return out_ >= 0 || err_ >= 0;
}

std::optional<int> ChildProcess::reap(bool block) {
  if (exited_) return status_;
  // Seen exited but not yet reaped, its group id is still taken: whatever
  // it left running in the group (dataloader workers...) is killed first.
  siginfo_t info{};
  int r;
  while ((r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG))) < 0 &&
         errno == EINTR) {
  }
  if (r != 0 || info.si_pid != pid_) return std::nullopt;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  pid_t reaped;
  while ((reaped = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  if (reaped != pid_) return std::nullopt;
  exited_ = true;
  status_ = status;
  return status_;
}

void ChildProcess::stop(double grace) {
  if (exited_) return;
  ::kill(-pid_, SIGTERM);
  const auto start = Clock::now();
  while (!reap(false)) {
    if (seconds_since(start) >= grace) {
      ::kill(-pid_, SIGKILL);
      reap(true);
      break;
    }
    pump(10, nullptr);
  }
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
  return last.empty() ? what : what + ": " + last;
}

void ChildProcess::take_line(std::vector<std::string>* results) {
  stdout_log_ << line_ << '\n';
  stdout_log_.flush();
  if (results && line_.rfind(line_prefix_, 0) == 0) results->push_back(line_.substr(line_prefix_.size()));
  line_.clear();
}

}  // namespace tune::internal
