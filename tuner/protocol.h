// Internal: the driver <-> worker-group wire protocol. Length-prefixed JSON
// frames over a stream socket (a Unix socket in a private 0700 directory on
// one machine); every frame is a JSON object with a "type". In memory the
// messages are types, and decoding checks every field: a frame that is not a
// well-formed message decodes to nullopt (the peer is then treated as gone).
//
//   Up (rank 0 -> driver):   Hello, ResultMessage, DoneMessage, ErrorMessage
//   Down (driver -> rank 0): RunMessage, VerdictMessage, ShutdownMessage
//
//   send_message(fd, encode(ResultMessage{{{"loss", 0.3}}, ""}));
//   if (auto up = decode_up(*receive_message(fd))) std::visit(handler, *up);
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "base/json.h"
#include "tuner/executor.h"
#include "tuner/session_base.h"

namespace tune::internal {

struct HelloMessage {
  int group = -1;
  int pid = 0;
  int world_size = 1;
};
struct ResultMessage {
  Json metrics;
  std::string checkpoint;  // "" when the result has none
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

// A listening Unix socket in a fresh private directory; removed on destruction.
class UnixListener {
 public:
  UnixListener();  // throws tune::Error
  ~UnixListener();
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  // Blocks until a peer connects or timeout; returns the fd or -1.
  int accept_one(int timeout_ms);

 private:
  std::string dir_, path_;
  int fd_ = -1;
};

// Connects to a Unix socket path; throws tune::Error.
int connect_unix(const std::string& path);

}  // namespace tune::internal
