#include "tuner/exec/host_checks.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "base/error.h"
#include "tuner/exec/clock.h"
#include "tuner/exec/mpi_launcher.h"

namespace tune::internal {

HostChecks::~HostChecks() {
  kill_all();
  if (!log_dir_.empty() && !std::getenv("TUNE_KEEP_CHECK_LOGS")) {
    std::error_code ec;
    std::filesystem::remove_all(log_dir_, ec);
  }
}

void HostChecks::start(const HostCheckRequest& request, const std::string& endpoint, const Secret& secret) {
  const int id = next_++;
  Probe& probe = probes_[id];
  probe.request = request;
  try {
    launch(id, probe, endpoint, secret);
  } catch (const Error& e) {
    answer(id, false, "host " + request.host + ": " + e.what());
    probes_.erase(id);
  }
}

namespace {

constexpr std::string_view kFolderPrefix = "tune-checks-";
constexpr const char* kOwnerFile = "owner";

// Whether every entry of a check-log folder is one tune writes there.
bool holds_only_check_logs(const std::filesystem::path& dir) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool log = name.rfind("check_", 0) == 0 && name.size() > 10 && name.compare(name.size() - 4, 4, ".log") == 0;
    if (!(log || name == kOwnerFile) || !it->is_regular_file(ec) || it->is_symlink(ec)) return false;
  }
  return !ec;
}

}  // namespace

int HostChecks::remove_abandoned_folders(const std::string& folder) {
  int removed = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::filesystem::path dir = it->path();
    const std::string name = dir.filename().string();
    if (name.size() != kFolderPrefix.size() + 6 || name.rfind(kFolderPrefix, 0) != 0) continue;
    std::error_code type_ec;
    if (it->is_symlink(type_ec) || !it->is_directory(type_ec)) continue;
    std::ifstream owner(dir / kOwnerFile);
    long long pid = 0;
    if (!(owner >> pid) || pid <= 1) continue;  // not one of ours, or written by an older tune
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // its driver still runs
    if (!holds_only_check_logs(dir)) continue;  // something else was put there: left alone
    std::error_code remove_ec;
    if (std::filesystem::remove_all(dir, remove_ec) > 0 && !remove_ec) ++removed;
  }
  return removed;
}

void HostChecks::launch(int id, Probe& probe, const std::string& endpoint, const Secret& secret) {
  if (log_dir_.empty()) {
    const std::filesystem::path tmp = std::filesystem::temp_directory_path();
    remove_abandoned_folders(tmp.string());
    std::string pattern = (tmp / (std::string(kFolderPrefix) + "XXXXXX")).string();
    if (!::mkdtemp(pattern.data())) throw Error("cannot create a folder for host checks in " + pattern);
    log_dir_ = pattern;
    // Whose it is: a later driver removes it if this one is killed before its destructor runs.
    std::ofstream(log_dir_ + "/" + kOwnerFile) << ::getpid() << "\n";
  }
  MpiLaunch launch;
  launch.ranks = 1;
  launch.program = {options_.executable};
  launch.env = host_check_environment(id, probe.request, endpoint, secret, bind_shim_path());
  if (!probe.request.host.empty()) launch.hosts = {{probe.request.host, 1}};
  launch.network = options_.network;
  launch.driver_address = options_.listen_address;
  launch.liveness_s = options_.listen_address.empty() ? 0 : options_.host_timeout_s;
  probe.log_path = log_dir_ + "/check_" + std::to_string(id) + ".log";
  launch.log_path = probe.log_path;
  probe.deadline = steady_seconds() + options_.check_timeout_s;
  probe.pid = spawn_mpirun(launch);
}

void HostChecks::answer(int id, bool ok, const std::string& problem) {
  auto it = probes_.find(id);
  if (it == probes_.end() || it->second.answered) return;
  it->second.answered = true;
  HostCheckResult result;
  result.host = it->second.request.host;
  result.ok = ok;
  result.problem = problem;
  result.clean = !it->second.request.clean_experiment.empty();
  answers_.push_back(std::move(result));
}

void HostChecks::reported(const CheckMessage& check) {
  auto it = probes_.find(check.probe);
  if (it == probes_.end() || it->second.request.host != check.host) return;
  std::string problem;
  for (const auto& p : check.problems) problem += (problem.empty() ? "" : "; ") + p;
  answer(check.probe, check.problems.empty(), problem.empty() ? "" : "host " + check.host + ": " + problem);
}

void HostChecks::poll() {
  const double now = steady_seconds();
  for (auto it = probes_.begin(); it != probes_.end();) {
    Probe& probe = it->second;
    int status = 0;
    const pid_t done = probe.pid > 0 ? ::waitpid(probe.pid, &status, WNOHANG) : probe.pid;
    if (done == probe.pid) {
      const int code = reaped_mpirun(probe.pid, status);
      if (!probe.answered)
        answer(it->first, false, explain_failed_check(probe.log_path, probe.request.host, options_.executable, code));
      it = probes_.erase(it);
      continue;
    }
    if (now > probe.deadline) {
      ::kill(-probe.pid, SIGKILL);
      if (!probe.answered) {
        answer(it->first, false,
               "host " + probe.request.host + " did not answer a check within " +
                   std::to_string(static_cast<int>(options_.check_timeout_s)) +
                   " s (unreachable, or OpenMPI cannot start its daemon there)");
      }
      probe.deadline = now + 3600;  // reaped once it is gone
    }
    ++it;
  }
}

std::vector<HostCheckResult> HostChecks::take() {
  poll();
  std::vector<HostCheckResult> out;
  out.swap(answers_);
  return out;
}

void HostChecks::kill_all() {
  for (auto& [id, probe] : probes_) {
    if (probe.pid <= 0) continue;
    ::kill(-probe.pid, SIGKILL);
    reap(probe.pid, std::chrono::milliseconds(2000));
  }
  probes_.clear();
}

}  // namespace tune::internal
