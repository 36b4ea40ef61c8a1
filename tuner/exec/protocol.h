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
// Two other connections open with a message of their own and carry nothing
// after it: a host leader's watch (WatchMessage: the lowest rank on each
// host of a group that spans hosts, other than rank 0's; it breaks when that
// host dies or becomes unreachable, which tells the driver whom to blame) and
// a host check's report (CheckMessage, tuner/exec/host_check.h).
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
#include <vector>

#include "base/json.h"
#include "tuner/exec/executor.h"
#include "tuner/exec/session_base.h"

namespace tune::internal {

struct HelloMessage {
  int group = -1;
  int pid = 0;
  int world_size = 1;
};
struct WatchMessage {
  int group = -1;
  int rank = 0;  // the leader's rank: the driver knows the host from the placement
};
struct CheckMessage {
  int probe = -1;
  std::string host;                  // as the driver named it
  std::vector<std::string> problems;  // one line each; empty: the host can run groups
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
  // The rank's host is at fault, not the trainable (its scratch folder is
  // full): why, or "".
  std::string host_fault;
};
struct RunMessage {
  TrialStart trial;
};
struct VerdictMessage {
  Verdict verdict = Verdict::kStop;
};
struct ShutdownMessage {};

using UpMessage = std::variant<HelloMessage, ResultMessage, DoneMessage, ErrorMessage, WatchMessage, CheckMessage>;
using DownMessage = std::variant<RunMessage, VerdictMessage, ShutdownMessage>;

Json encode(const UpMessage& message);
Json encode(const DownMessage& message);
std::optional<UpMessage> decode_up(const Json& frame);
std::optional<DownMessage> decode_down(const Json& frame);

// The environment of a re-executed program (mpirun exports it to every
// rank): where the driver listens, how to prove the secret
// (tuner/exec/transport.h: one machine, the key itself; several hosts, the
// cluster key file and this run's nonce), the group's id, and (with GPUs)
// each rank's devices ("0,1|2,3": rank r takes the r-th list). A command
// trainable's program sees none of them (worker_environment_names()).
inline constexpr const char* kEndpointEnv = "TUNE_DRIVER_ENDPOINT";
inline constexpr const char* kTokenEnv = "TUNE_DRIVER_TOKEN";
inline constexpr const char* kSecretFileEnv = "TUNE_SECRET_FILE";
inline constexpr const char* kSessionNonceEnv = "TUNE_SESSION_NONCE";
inline constexpr const char* kKeyFingerprintEnv = "TUNE_KEY_FINGERPRINT";
inline constexpr const char* kHostTimeoutEnv = "TUNE_HOST_TIMEOUT_S";
inline constexpr const char* kGroupEnv = "TUNE_GROUP_ID";
inline constexpr const char* kRankGpusEnv = "TUNE_RANK_GPUS";
inline constexpr const char* kNoGpus = "none";  // TUNE_RANK_GPUS of a group without GPUs
// Set by rank 0 of a worker group: the address its host reaches the driver from.
inline constexpr const char* kNodeAddressEnv = "TUNE_NODE_ADDRESS";
// A host check (tuner/exec/host_check.h) instead of a worker group.
inline constexpr const char* kHostCheckEnv = "TUNE_HOST_CHECK";
std::vector<std::string> worker_environment_names();

// How a worker process ends when it loses the driver (its connection broke,
// or the driver stopped answering): mpirun's log then shows one of these,
// and the group executor counts the attempt as lost, not as the trainable's
// crash.
inline constexpr int kExitLostDriver = 70;     // a send or read to the driver failed mid-trial
inline constexpr int kExitNoDriver = 71;       // could not connect to the driver at all
inline constexpr int kExitFatalTrial = 72;     // the trainable failed in a group: the group must end
inline constexpr int kExitDriverGone = 73;     // the watch saw the driver's connection end

// Bumped whenever a message changes: a host check refuses a host whose tune
// speaks another version.
inline constexpr int kProtocolVersion = 2;

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
