#include "tuner/exec/mpirun_log.h"

#include <signal.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <vector>

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
// driver" codes 70 and 71): the trainable's fault. Anything else that ends a
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
      if (code != 70 && code != 71) return true;
    }
  }
  return false;
}

}  // namespace tune::internal
