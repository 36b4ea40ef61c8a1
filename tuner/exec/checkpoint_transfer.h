// Internal: a checkpoint directory sent over a driver <-> rank 0 connection,
// for hosts that share no filesystem. The sender names the files (a
// manifest, in the message that carries the checkpoint), then streams their
// bytes in raw frames of at most 4 MiB, then one frame with the XXH3-128
// checksum of everything sent. The receiver writes into TARGET.partial,
// checks sizes and the checksum, and only then renames it to TARGET: a
// checkpoint on disk is whole or absent.
//
//   auto files = list_checkpoint(dir);                       // sender
//   send_message(fd, {..., {"files", manifest_json(files)}});
//   send_checkpoint(fd, dir, files);
//   ReceivedCheckpoint got = receive_checkpoint(fd, files, target);  // receiver; got.error "" when whole
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"

namespace tune::internal {

struct CheckpointFile {
  std::string path;  // relative to the checkpoint directory
  uint64_t size = 0;
};

// The regular files under `dir` (recursively, sorted by path). Throws
// tune::Error for a missing directory, a link or a special file.
std::vector<CheckpointFile> list_checkpoint(const std::string& dir);

Json manifest_json(const std::vector<CheckpointFile>& files);
// nullopt when the manifest is malformed or a path could leave the
// directory (absolute, "..", empty parts): paths from a peer are sanitized.
std::optional<std::vector<CheckpointFile>> manifest_from_json(const Json& json);

// False if the connection broke (or a file changed size meanwhile).
bool send_checkpoint(int fd, const std::string& dir, const std::vector<CheckpointFile>& files);
// What became of a received checkpoint.
struct ReceivedCheckpoint {
  std::string error;           // "" when TARGET holds the checkpoint; else what went wrong
  bool stream_broken = false;  // it broke off before its checksum: the connection is out of step
};
// Nothing is left behind on a failure; an existing TARGET is replaced. A
// failure on this side (cannot write) still reads the stream to its end, so
// only a broken stream leaves the connection unusable.
ReceivedCheckpoint receive_checkpoint(int fd, const std::vector<CheckpointFile>& files, const std::string& target);

inline constexpr size_t kCheckpointChunk = size_t{4} << 20;

}  // namespace tune::internal
