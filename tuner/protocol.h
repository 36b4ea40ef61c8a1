// The driver <-> worker-group wire protocol: length-prefixed JSON messages over
// a Unix stream socket (loopback only; the socket lives in a 0700 directory).
//
// Up (rank 0 -> driver):  hello{group, pid, world_size}, result{metrics, checkpoint},
//                         done{}, error{message}
// Down (driver -> rank 0): run{trial...}, decision{action}, shutdown{}
// Every message is a JSON object with a "type" key.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tune::internal {

using Json = nlohmann::json;

// Writes one framed message. Returns false if the peer is gone.
bool send_message(int fd, const Json& message);
// Reads one framed message; nullopt on EOF or error.
std::optional<Json> receive_message(int fd);

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
