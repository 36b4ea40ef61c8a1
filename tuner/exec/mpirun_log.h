// Internal: what a worker group's mpirun log (logs/group_<id>.log: mpirun's,
// the daemons' and the ranks' output) says about how the group ended. The
// group executor reads it when a group ends without its trainable's own
// answer, to tell a trainable's crash from a lost attempt and to say why.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tune::internal {

// The last `count` non-empty lines, joined with " | ".
std::string last_lines(const std::string& path, size_t count);
// The error a rank other than 0 wrote before it ended the group ("tune
// worker rank N: MESSAGE", worker.cpp), as "rank N: MESSAGE"; "" if none.
std::string rank_error(const std::string& path);
// Whether a rank crashed on its own (a signal other than SIGKILL/SIGTERM, a
// non-zero exit other than tune's "lost the driver" codes): the trainable's
// fault. Anything else that ends a group is a lost attempt.
bool trainable_crashed(const std::string& log_path);
// The nodes mpirun's log blames, in the order it names them: a remote daemon
// it lost ("Remote daemon: ... on node X"), a rank that died on its own
// ("process rank N with PID P on node X exited on signal S"), a peer a rank
// could not reach ("connect() to X:PORT failed"). Names as given to --host.
std::vector<std::string> log_culprits(const std::string& log_path);
// Why mpirun could not start `program` where it was sent, when its log says
// so in a way tune knows ("cannot run PROGRAM (not found there): ...", "did
// not start OpenMPI's daemon (orted): ..."); "" otherwise. Meant to follow a
// host's name.
std::string launch_failure(const std::string& log_path, const std::string& program);

}  // namespace tune::internal
