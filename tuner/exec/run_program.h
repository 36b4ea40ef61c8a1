// Internal: runs a program (searched in PATH) with some input on its stdin
// and captures its stdout and stderr, both drained together so neither side
// blocks: `sbatch` for `tune submit`, `scontrol` for a Slurm node's address.
//
//   Captured r = run_program({"scontrol", "show", "node", "-o", "n1"}, "", {5, 1 << 16});
//   if (r.status == 0 && !r.timed_out) parse(r.out);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tune::internal {

struct Captured {
  int status = 0;  // exit status (128 + signal when killed)
  std::string out, err;
  bool timed_out = false;  // killed at RunLimits::timeout_s
};

struct RunLimits {
  double timeout_s = 0;               // then SIGKILL; 0: none
  size_t max_output = size_t{16} << 20;  // bytes kept of each of stdout and stderr
  std::string missing_hint;           // appended to "X not found in PATH"
};

// Throws tune::Error naming the program when it cannot start.
Captured run_program(const std::vector<std::string>& argv, const std::string& input, const RunLimits& limits = {});

}  // namespace tune::internal
