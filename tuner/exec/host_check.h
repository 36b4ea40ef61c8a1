// Internal: whether a host can run a sweep's worker groups, asked before the
// first trial (the preflight: a host that cannot is refused with one line
// naming it and what it lacks) and before an excluded host rejoins (a probe);
// and the removal of an experiment's scratch folder on a host when it ends.
//
// The driver runs `mpirun -np 1 --host H:1 <program>` with
// host_check_environment(); the program's tune::init() sees kHostCheckEnv and
// runs run_host_check() instead of a worker: it checks what a group needs
// there, connects back proving the sweep's secret, sends one CheckMessage
// with the problems it found, and exits. A check that never reports is
// explained from mpirun's log (explain_failed_check).
//
//   executor.check_host({"node2", {"/data/train.csv"}});    // GroupExecutor
//   ... for (HostCheckResult r : executor.take_host_checks()) if (!r.ok) refuse(r.problem);
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tuner/exec/transport.h"

namespace tune::internal {

struct HostCheckRequest {
  std::string host;                // as the placement names it
  std::vector<std::string> paths;  // must exist there (a trainable's data files)
  // Not a check: remove this experiment's scratch folder on the host (it
  // ends; a lost attempt may have left files there). "" for a check.
  std::string clean_experiment;
};

struct HostCheckResult {
  std::string host;
  bool ok = false;
  std::string problem;  // one line, naming the host, when not ok
  bool clean = false;   // the answer to a clean request
};

// Where worker ranks keep a trial's files on their host when checkpoints are
// streamed: $TUNE_SCRATCH, else <temp>/tune-scratch.
std::string scratch_root();

// What is wrong with the scratch folder's filesystem when it has under
// `min_bytes` left for this user ("its scratch folder /tmp/tune-scratch has
// 12 KB free"), else "". A host whose scratch is full fails the trials placed
// there for want of room to write a checkpoint: that is the host's failure.
std::string scratch_short_of_space(uint64_t min_bytes);
inline constexpr uint64_t kScratchFullBytes = 1 << 20;        // a trial's failure is the host's below this
inline constexpr uint64_t kScratchCheckBytes = 64ull << 20;   // a host check asks at least this

bool started_as_host_check();
// The check itself, in the process mpirun started on the host. Never returns.
[[noreturn]] void run_host_check();

// The environment of a check's process: the endpoint, the secret, what to
// check (this tune's version and protocol, the bind shim `shim` if any, the
// paths, the scratch folder) or what to clean.
std::vector<std::pair<std::string, std::string>> host_check_environment(int probe, const HostCheckRequest& request,
                                                                        const std::string& endpoint,
                                                                        const Secret& secret, const std::string& shim);

// Why a check on `host` ended without its report, from mpirun's log: the
// program missing there, OpenMPI's daemon not starting, the host unreachable,
// the key refused... One line.
std::string explain_failed_check(const std::string& log_path, const std::string& host, const std::string& program,
                                 int status);

}  // namespace tune::internal
