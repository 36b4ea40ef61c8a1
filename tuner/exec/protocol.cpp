#include "tuner/exec/protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/json.h"

namespace tune::internal {
namespace {

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}


}  // namespace

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::optional<int> int_field(const Json& frame, const char* key) {
  auto it = frame.find(key);
  if (it == frame.end()) return std::nullopt;
  try {
    return json_integer<int>(*it);
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::optional<std::string> string_field(const Json& frame, const char* key) {
  auto it = frame.find(key);
  if (it == frame.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace

Json encode(const UpMessage& message) {
  return std::visit(
      Overloaded{
          [](const HelloMessage& m) -> Json {
            return {{"type", "hello"}, {"group", m.group}, {"pid", m.pid}, {"world_size", m.world_size}};
          },
          [](const ResultMessage& m) -> Json {
            return {{"type", "result"}, {"metrics", m.metrics}, {"checkpoint", m.checkpoint}, {"files", m.files}};
          },
          [](const DoneMessage& m) -> Json { return {{"type", "done"}, {"stopped", m.stopped}}; },
          [](const ErrorMessage& m) -> Json {
            Json out = {{"type", "error"}, {"message", m.message}};
            if (!m.host_fault.empty()) out["host_fault"] = m.host_fault;
            return out;
          },
          [](const WatchMessage& m) -> Json { return {{"type", "watch"}, {"group", m.group}, {"rank", m.rank}}; },
          [](const CheckMessage& m) -> Json {
            return {{"type", "check"}, {"probe", m.probe}, {"host", m.host}, {"problems", m.problems}};
          },
      },
      message);
}

Json encode(const DownMessage& message) {
  return std::visit(Overloaded{
                        [](const RunMessage& m) -> Json { return {{"type", "run"}, {"trial", m.trial.to_json()}}; },
                        [](const VerdictMessage& m) -> Json {
                          return {{"type", "verdict"},
                                  {"continue", m.verdict != Verdict::kStop},
                                  {"ahead", m.verdict == Verdict::kRunAhead}};
                        },
                        [](const ShutdownMessage&) -> Json { return {{"type", "shutdown"}}; },
                    },
                    message);
}

std::optional<UpMessage> decode_up(const Json& frame) {
  const auto type = frame.is_object() ? string_field(frame, "type") : std::nullopt;
  if (!type) return std::nullopt;
  if (*type == "hello") {
    auto group = int_field(frame, "group"), pid = int_field(frame, "pid"), size = int_field(frame, "world_size");
    if (!group || !pid || !size || *size < 1) return std::nullopt;
    return HelloMessage{*group, *pid, *size};
  }
  if (*type == "result") {
    auto metrics = frame.find("metrics");
    auto checkpoint = string_field(frame, "checkpoint");
    if (metrics == frame.end() || !checkpoint) return std::nullopt;
    auto files = frame.find("files");
    if (files != frame.end() && !files->is_null() && !files->is_array()) return std::nullopt;
    return ResultMessage{*metrics, *checkpoint, files == frame.end() ? Json() : *files};
  }
  if (*type == "done") {
    auto stopped = frame.find("stopped");
    return DoneMessage{stopped != frame.end() && stopped->is_boolean() && stopped->get<bool>()};
  }
  if (*type == "error") {
    auto message = string_field(frame, "message");
    if (!message) return std::nullopt;
    auto fault = frame.find("host_fault");
    if (fault != frame.end() && !fault->is_string()) return std::nullopt;
    return ErrorMessage{*message, fault == frame.end() ? "" : fault->get<std::string>()};
  }
  if (*type == "watch") {
    auto group = int_field(frame, "group"), rank = int_field(frame, "rank");
    if (!group || !rank || *rank < 1) return std::nullopt;
    return WatchMessage{*group, *rank};
  }
  if (*type == "check") {
    auto probe = int_field(frame, "probe");
    auto host = string_field(frame, "host");
    auto problems = frame.find("problems");
    if (!probe || !host || problems == frame.end() || !problems->is_array()) return std::nullopt;
    CheckMessage check{*probe, *host, {}};
    for (const auto& problem : *problems) {
      if (!problem.is_string()) return std::nullopt;
      check.problems.push_back(problem.get<std::string>());
    }
    return check;
  }
  return std::nullopt;
}

std::optional<DownMessage> decode_down(const Json& frame) {
  const auto type = frame.is_object() ? string_field(frame, "type") : std::nullopt;
  if (!type) return std::nullopt;
  if (*type == "run") {
    auto trial = frame.find("trial");
    if (trial == frame.end() || !trial->is_object()) return std::nullopt;
    try {
      return RunMessage{TrialStart::from_json(*trial)};
    } catch (const std::exception&) {  // Json::exception, or a field of the wrong kind
      return std::nullopt;
    }
  }
  if (*type == "verdict") {
    auto go_on = frame.find("continue");
    if (go_on == frame.end() || !go_on->is_boolean()) return std::nullopt;
    auto ahead = frame.find("ahead");  // optional: older drivers do not send it
    if (ahead != frame.end() && !ahead->is_boolean()) return std::nullopt;
    const bool run_ahead = ahead != frame.end() && ahead->get<bool>();
    if (!go_on->get<bool>()) {
      if (run_ahead) return std::nullopt;  // "stop, and run ahead": contradictory
      return VerdictMessage{Verdict::kStop};
    }
    return VerdictMessage{run_ahead ? Verdict::kRunAhead : Verdict::kContinue};
  }
  if (*type == "shutdown") return ShutdownMessage{};
  return std::nullopt;
}

std::vector<std::string> worker_environment_names() {
  return {kEndpointEnv, kTokenEnv,  kSecretFileEnv, kSessionNonceEnv, kKeyFingerprintEnv, kHostTimeoutEnv,
          kGroupEnv,    kRankGpusEnv, kNodeAddressEnv, kHostCheckEnv};
}

bool send_message(int fd, const Json& message) {
  const std::string body = message.dump();
  const uint32_t size = static_cast<uint32_t>(body.size());
  char header[4] = {static_cast<char>(size & 0xff), static_cast<char>((size >> 8) & 0xff),
                    static_cast<char>((size >> 16) & 0xff), static_cast<char>(size >> 24)};
  std::string frame(header, 4);
  frame += body;  // one write per message: fewer syscalls, no interleaving
  return write_all(fd, frame.data(), frame.size());
}

namespace {

uint32_t frame_size(const unsigned char* header) {
  return header[0] | (header[1] << 8) | (header[2] << 16) | (static_cast<uint32_t>(header[3]) << 24);
}

std::optional<Json> parse_body(const std::string& body) {
  Json message = parse_json(body);  // bounded nesting: a peer's frame
  if (message.is_discarded() || !message.is_object()) return std::nullopt;
  return message;
}

}  // namespace

std::optional<Json> receive_message(int fd) {
  unsigned char header[4];
  if (!read_all(fd, reinterpret_cast<char*>(header), 4)) return std::nullopt;
  const uint32_t size = frame_size(header);
  if (size > kMaxFrameBytes) return std::nullopt;  // a corrupt frame, not a message
  std::string body(size, '\0');
  if (!read_all(fd, body.data(), size)) return std::nullopt;
  return parse_body(body);
}

std::optional<Json> parse_frame(const std::string& bytes) {
  if (bytes.size() < 4) return std::nullopt;
  const uint32_t size = frame_size(reinterpret_cast<const unsigned char*>(bytes.data()));
  if (size > kMaxFrameBytes || bytes.size() - 4 != size) return std::nullopt;
  return parse_body(bytes.substr(4));
}

bool send_bytes(int fd, const char* data, size_t size) {
  if (size > kMaxFrameBytes) return false;
  const auto n = static_cast<uint32_t>(size);
  const char header[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                          static_cast<char>((n >> 16) & 0xff), static_cast<char>(n >> 24)};
  return write_all(fd, header, 4) && write_all(fd, data, size);
}

bool receive_bytes(int fd, std::string& buffer, size_t max) {
  unsigned char header[4];
  if (!read_all(fd, reinterpret_cast<char*>(header), 4)) return false;
  const uint32_t size = frame_size(header);
  if (size > max || size > kMaxFrameBytes) return false;
  buffer.resize(size);
  return read_all(fd, buffer.data(), size);
}

}  // namespace tune::internal
