#include "tuner/exec/host_check.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/error.h"
#include "base/version.h"
#include "tuner/exec/mpirun_log.h"
#include "tuner/exec/protocol.h"

namespace tune::internal {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCheckHostEnv = "TUNE_CHECK_HOST";
constexpr const char* kCheckVersionEnv = "TUNE_CHECK_VERSION";
constexpr const char* kCheckShimEnv = "TUNE_CHECK_SHIM";
constexpr const char* kCheckPathsEnv = "TUNE_CHECK_PATHS";
constexpr const char* kCheckCleanEnv = "TUNE_CHECK_CLEAN";
// A line the check writes to stderr (mpirun's log) when it cannot report.
constexpr const char* kCheckSays = "tune host check: ";

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string this_version() { return std::string(version()) + " (protocol " + std::to_string(kProtocolVersion) + ")"; }

[[noreturn]] void cannot_report(const std::string& message) {
  std::cerr << kCheckSays << message << "\n" << std::flush;
  std::_Exit(3);
}

// Only a plain experiment name, as the driver checks it: never a path.
bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::vector<std::string> problems_here() {
  std::vector<std::string> problems;
  if (const std::string expected = env(kCheckVersionEnv); expected != this_version()) {
    problems.push_back("it runs tune " + this_version() + ", the driver tune " + expected +
                       ": install the same tune on every host");
  }
  if (const std::string shim = env(kCheckShimEnv); !shim.empty() && ::access(shim.c_str(), R_OK) != 0) {
    problems.push_back("it has no " + shim + " (tune's bind shim, preloaded into OpenMPI's daemons): install tune's "
                       "package at the same path on every host");
  }
  std::istringstream paths(env(kCheckPathsEnv));
  for (std::string path; std::getline(paths, path);) {
    struct stat st{};
    if (!path.empty() && ::stat(path.c_str(), &st) != 0)
      problems.push_back("it cannot read " + path + " (" + std::strerror(errno) + "): a trainable's data must be at "
                         "the same path on every host");
  }
  std::error_code ec;
  const std::string scratch = scratch_root();
  fs::create_directories(scratch, ec);
  if (ec || ::access(scratch.c_str(), W_OK) != 0) {
    problems.push_back("it cannot write its scratch folder " + scratch + " (set TUNE_SCRATCH there)");
  } else if (const std::string short_of = scratch_short_of_space(kScratchCheckBytes); !short_of.empty()) {
    problems.push_back(short_of + ", too little for trials' checkpoints (free some, or set TUNE_SCRATCH elsewhere)");
  }
  return problems;
}

std::vector<std::string> clean(const std::string& experiment) {
  if (!plain_name(experiment)) return {"refused to clean '" + experiment + "': not an experiment name"};
  std::error_code ec;
  fs::remove_all(fs::path(scratch_root()) / experiment, ec);
  if (ec) return {"cannot remove " + (fs::path(scratch_root()) / experiment).string() + ": " + ec.message()};
  // The default root is tune's own: gone once no experiment uses it. A
  // TUNE_SCRATCH folder is the user's and stays.
  const char* chosen = std::getenv("TUNE_SCRATCH");
  if (!chosen || !*chosen) fs::remove(scratch_root(), ec);
  return {};
}

}  // namespace

std::string scratch_root() {
  const char* base = std::getenv("TUNE_SCRATCH");
  return base && *base ? std::string(base) : (fs::temp_directory_path() / "tune-scratch").string();
}

std::string scratch_short_of_space(uint64_t min_bytes) {
  const std::string scratch = scratch_root();
  struct statvfs fs_info {};
  std::error_code ec;
  fs::path where = scratch;
  while (!where.empty() && !fs::exists(where, ec)) where = where.parent_path();  // the folder may be gone
  if (where.empty() || ::statvfs(where.c_str(), &fs_info) != 0) return "";
  const uint64_t free_bytes = static_cast<uint64_t>(fs_info.f_bavail) * fs_info.f_frsize;
  if (free_bytes >= min_bytes) return "";
  const std::string amount = free_bytes >= (1u << 20) ? std::to_string(free_bytes >> 20) + " MB"
                                                      : std::to_string(free_bytes >> 10) + " KB";
  return "its scratch folder " + scratch + " has " + amount + " free";
}

bool started_as_host_check() { return std::getenv(kHostCheckEnv) && std::getenv(kEndpointEnv); }

void run_host_check() {
  const std::string host = env(kCheckHostEnv);
  const int probe = std::atoi(env(kHostCheckEnv).c_str());
  const std::string experiment = env(kCheckCleanEnv);
  std::vector<std::string> problems = experiment.empty() ? problems_here() : clean(experiment);
  Secret secret;
  try {
    secret = secret_from_environment();
  } catch (const std::exception& e) {
    cannot_report(e.what());
  }
  int fd = -1;
  try {
    fd = connect_driver(env(kEndpointEnv), secret);
  } catch (const std::exception& e) {
    cannot_report(e.what());
  }
  if (!send_message(fd, encode(UpMessage{CheckMessage{probe, host, problems}})))
    cannot_report("the driver closed the connection before the report");
  ::close(fd);
  std::_Exit(0);
}

std::vector<std::pair<std::string, std::string>> host_check_environment(int probe, const HostCheckRequest& request,
                                                                        const std::string& endpoint,
                                                                        const Secret& secret, const std::string& shim) {
  std::vector<std::pair<std::string, std::string>> out = {{kEndpointEnv, endpoint},
                                                          {kHostCheckEnv, std::to_string(probe)},
                                                          {kCheckHostEnv, request.host}};
  for (auto& entry : secret_environment(secret)) out.push_back(std::move(entry));
  if (!request.clean_experiment.empty()) {
    out.emplace_back(kCheckCleanEnv, request.clean_experiment);
    return out;
  }
  std::string paths;
  for (const auto& path : request.paths) paths += path + "\n";
  out.emplace_back(kCheckVersionEnv, this_version());
  out.emplace_back(kCheckShimEnv, shim);
  out.emplace_back(kCheckPathsEnv, paths);
  return out;
}

std::string explain_failed_check(const std::string& log_path, const std::string& host, const std::string& program,
                                 int status) {
  std::ifstream in(log_path);
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string who = "host " + host;
  if (const auto at = log.find(kCheckSays); at != std::string::npos) {
    const auto start = at + std::strlen(kCheckSays);
    return who + ": " + log.substr(start, log.find('\n', start) - start);
  }
  if (const std::string why = launch_failure(log_path, program); !why.empty()) return who + " " + why;
  const std::string tail = last_lines(log_path, 2);
  return who + ": the check ended with status " + std::to_string(status) + (tail.empty() ? "" : ": " + tail);
}

}  // namespace tune::internal
