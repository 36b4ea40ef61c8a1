// Internal: what a worker group's mpirun log (logs/group_<id>.log: mpirun's,
// the daemons' and the ranks' output) says about how the group ended. The
// group executor reads it when a group ends without its trainable's own
// answer, to tell a trainable's crash from a lost attempt and to say why.
#pragma once

#include <cstddef>
#include <string>

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

}  // namespace tune::internal
