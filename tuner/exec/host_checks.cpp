#include "tuner/exec/host_checks.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "base/error.h"
#include "tuner/exec/clock.h"
#include "tuner/exec/mpi_launcher.h"
#include "tuner/exec/owned_folders.h"

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

// An entry tune writes into a check-log folder: check_<id>.log.
bool check_log(const std::filesystem::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  std::error_code ec;
  return name.rfind("check_", 0) == 0 && name.size() > 10 && name.compare(name.size() - 4, 4, ".log") == 0 &&
         entry.is_regular_file(ec) && !entry.is_symlink(ec);
}

}  // namespace

int HostChecks::remove_abandoned_folders(const std::string& folder) {
  return internal::remove_abandoned_folders(folder, kFolderPrefix, check_log);
}

void HostChecks::launch(int id, Probe& probe, const std::string& endpoint, const Secret& secret) {
  if (log_dir_.empty()) log_dir_ = make_owned_folder(kFolderPrefix, check_log);
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
      kill_mpirun(probe.pid);
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
    kill_mpirun(probe.pid);
    reap(probe.pid, std::chrono::milliseconds(2000));
  }
  probes_.clear();
}

}  // namespace tune::internal
