// Internal: the driver <-> worker-group wire protocol. Length-prefixed JSON
// frames over a stream socket (tuner/exec/transport.h: a Unix socket on one
// machine, TCP between hosts, either after a token handshake); every frame is
// a JSON object with a "type". In memory the messages are types, and decoding
// checks every field: a frame that is not a well-formed message decodes to
// nullopt (the peer is then treated as gone).
//
//   Up (rank 0 -> driver):   Hello, ResultMessage, DoneMessage, ErrorMessage
//   Down (driver -> rank 0): RunMessage, VerdictMessage, ShutdownMessage
//
// Checkpoints between hosts (no shared filesystem): a ResultMessage (or a
// RunMessage restoring a trial) names the checkpoint's files; their bytes
// follow as raw frames and a checksum frame (tuner/exec/checkpoint_transfer.h).
//
//   send_message(fd, encode(ResultMessage{{{"loss", 0.3}}, ""}));
//   if (auto up = decode_up(*receive_message(fd))) std::visit(handler, *up);
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "base/json.h"
#include "tuner/exec/executor.h"
#include "tuner/exec/session_base.h"

namespace tune::internal {

struct HelloMessage {
  int group = -1;
  int pid = 0;
  int world_size = 1;
};
struct ResultMessage {
  Json metrics;
  std::string checkpoint;  // "" when the result has none
  // Between hosts: the checkpoint's files (tuner/exec/checkpoint_transfer.h),
  // whose bytes follow this message; null when it lies on a shared path.
  Json files = nullptr;
};
struct DoneMessage {
  bool stopped = false;  // the trainable stopped on a kStop verdict
};
struct ErrorMessage {
  std::string message;
};
struct RunMessage {
  TrialStart trial;
};
struct VerdictMessage {
  Verdict verdict = Verdict::kStop;
};
struct ShutdownMessage {};

using UpMessage = std::variant<HelloMessage, ResultMessage, DoneMessage, ErrorMessage>;
using DownMessage = std::variant<RunMessage, VerdictMessage, ShutdownMessage>;

Json encode(const UpMessage& message);
Json encode(const DownMessage& message);
std::optional<UpMessage> decode_up(const Json& frame);
std::optional<DownMessage> decode_down(const Json& frame);

// Frames larger than this are refused (a corrupt or hostile peer).
inline constexpr uint32_t kMaxFrameBytes = 256u << 20;

// Writes one framed message. Returns false if the peer is gone.
bool send_message(int fd, const Json& message);
// Reads one framed message; nullopt on EOF, error, an oversized frame or
// bytes that are not a JSON object.
std::optional<Json> receive_message(int fd);
// The frame parser on its own (fuzzing, tests): `bytes` holds one length
// prefix and body; nullopt unless it is exactly one valid frame.
std::optional<Json> parse_frame(const std::string& bytes);

// Raw bytes as one frame (checkpoint files), with the same length header.
bool send_bytes(int fd, const char* data, size_t size);
// Reads one raw frame of at most `max` bytes into `buffer`.
bool receive_bytes(int fd, std::string& buffer, size_t max);

}  // namespace tune::internal
