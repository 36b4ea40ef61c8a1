#include "tuner/exec/mpirun_log.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "tuner/exec/protocol.h"

namespace tune::internal {

std::string last_lines(const std::string& path, size_t count) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  std::string tail;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i)
    tail += (tail.empty() ? "" : " | ") + lines[i];
  return tail;
}

// The error a rank other than 0 wrote before it ended the group ("tune
// worker rank N: MESSAGE", worker.cpp), if any: a group ends at its first
// fatal error, so the line belongs to the attempt that just failed. Rank 0
// sends its own error over the connection, but when another rank aborts the
// group first, this line is the only trace of what the trainable said.
std::string rank_error(const std::string& path) {
  std::ifstream in(path);
  const std::string tag = "tune worker ", prefix = tag + "rank ";
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(prefix);
    if (at == std::string::npos) continue;
    size_t end = at + prefix.size();
    while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
    if (end > at + prefix.size() && line.compare(end, 2, ": ") == 0) return line.substr(at + tag.size());  // "rank N: ..."
  }
  return "";
}

// Whether mpirun's log says a rank of the group crashed on its own (a signal
// other than SIGKILL/SIGTERM, a non-zero exit other than tune's "lost the
// driver" codes, protocol.h): the trainable's fault. Anything else that ends a
// group (daemons lost, ranks killed, the connection gone) is a lost attempt.
bool trainable_crashed(const std::string& log_path) {
  std::ifstream in(log_path);
  for (std::string line; std::getline(in, line);) {
    auto at = line.find("exited on signal ");
    if (at != std::string::npos) {
      const int signal = std::atoi(line.c_str() + at + 17);
      if (signal != SIGKILL && signal != SIGTERM) return true;
    }
    at = line.find("Exit code:");
    if (at != std::string::npos) {
      const int code = std::atoi(line.c_str() + at + 10);
      if (code != kExitLostDriver && code != kExitNoDriver && code != kExitDriverGone) return true;
    }
  }
  return false;
}

std::vector<std::string> log_culprits(const std::string& log_path) {
  std::ifstream in(log_path);
  std::vector<std::string> nodes;
  auto word_after = [](const std::string& line, size_t at) {
    size_t end = at;
    while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end]))) ++end;
    return line.substr(at, end - at);
  };
  for (std::string line; std::getline(in, line);) {
    std::string node;
    if (auto at = line.find("Remote daemon:"); at != std::string::npos) {
      if (auto on = line.find(" on node ", at); on != std::string::npos) node = word_after(line, on + 9);
    } else if (line.find("process rank ") != std::string::npos && line.find(" exited on signal ") != std::string::npos) {
      if (auto on = line.find(" on node "); on != std::string::npos) node = word_after(line, on + 9);
    } else if (auto at = line.find("connect() to "); at != std::string::npos && line.find(" failed") != std::string::npos) {
      node = word_after(line, at + 13);
      node = node.substr(0, node.rfind(':'));
    }
    if (!node.empty() && std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  }
  return nodes;
}

namespace {
bool contains(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }
}  // namespace

std::string launch_failure(const std::string& log_path, const std::string& program) {
  std::ifstream in(log_path);
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (contains(log, "unable to launch the specified application"))
    return "cannot run " + program + " (not found there): install tune at the same path on every host";
  if (const auto at = log.find("error while loading shared libraries"); at != std::string::npos) {
    const auto newline = log.rfind('\n', at);
    const auto begin = newline == std::string::npos ? 0 : newline + 1;
    return "cannot start " + program + ": " + log.substr(begin, log.find('\n', at) - begin);
  }
  if (contains(log, "orted: command not found") || contains(log, "orted: not found") ||
      contains(log, "unable to reliably start one or more daemons")) {
    // The launcher's own complaint comes first ("ssh: connect to host ...").
    std::string first = log.substr(0, log.find('\n'));
    if (first.rfind("---", 0) == 0) first.clear();
    return "did not start OpenMPI's daemon (orted): is openmpi-bin installed there, and can this machine reach it "
           "(ssh, or OMPI_MCA_plm_rsh_agent)?" + (first.empty() ? "" : " (" + first + ")");
  }
  return "";
}

}  // namespace tune::internal
