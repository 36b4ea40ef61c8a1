// Shared by the serve tests (tests/tuner/serve_*test.cpp): a fake model, a
// Server running on a thread of its own, and raw sockets to 127.0.0.x.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>
#include <httplib.h>

#include "base/error.h"
#include "tuner/serve/serve.h"

namespace tune::serve_testing {

using Clock = std::chrono::steady_clock;

constexpr char kTestToken[] = "0123456789abcdef-secret";

// How often the fake model has been entered and is still inside.
struct ModelProbe {
  std::atomic<int> calls{0};
  std::atomic<int> sleeping{0};
};

// Predicts the sum of each instance's features; a string feature is a
// ConfigError, the value 666 a crash, and "sleep_ms" a pause first.
inline ServedModel fake_model(ModelProbe* probe = nullptr) {
  ServedModel model;
  model.name = "iris";
  model.metadata = {{"features", {"a", "b"}},
                    {"task", "regression"},
                    {"trial", 7},
                    {"metric", {{"name", "val_loss"}, {"value", 0.5}}}};
  model.predict = [probe](const Json& instances) {
    if (probe != nullptr) probe->calls++;
    Json predictions = Json::array();
    for (const Json& instance : instances) {
      double sum = 0;
      for (const auto& [feature, value] : instance.items()) {
        if (value.is_string()) throw ConfigError("feature '" + feature + "' is a string, not a number");
        if (value == 666) throw std::runtime_error("the fake model crashed");
        if (feature == "sleep_ms" && probe != nullptr) {
          probe->sleeping++;
          std::this_thread::sleep_for(std::chrono::milliseconds(value.get<int>()));
          probe->sleeping--;
        }
        sum += value.get<double>();
      }
      predictions.push_back(sum);
    }
    return predictions;
  };
  return model;
}

inline ServeOptions loopback_options() {
  ServeOptions options;
  options.port = 0;
  options.threads = 4;
  return options;
}

// A Server serving on a thread of its own for the test's duration.
class RunningServer {
 public:
  explicit RunningServer(ServedModel model = fake_model(), ServeOptions options = loopback_options())
      : server_(std::move(model), std::move(options)), serving_([this] { server_.run(); }) {}
  ~RunningServer() { stop(); }
  void stop() {
    server_.stop();
    if (serving_.joinable()) serving_.join();
  }
  int port() const { return server_.port(); }
  Server& server() { return server_; }
  httplib::Client client() const {
    httplib::Client client("127.0.0.1", port());
    client.set_connection_timeout(5);
    client.set_read_timeout(10);
    client.set_write_timeout(5);
    client.set_keep_alive(true);
    return client;
  }

 private:
  Server server_;
  std::thread serving_;
};

inline httplib::Result predict(httplib::Client& client, const std::string& body,
                               const std::string& model = "iris") {
  return client.Post("/v1/models/" + model + ":predict", body, "application/json");
}

// The "error" of a JSON error response.
inline std::string error_of(const httplib::Result& result) {
  return Json::parse(result->body).at("error").get<std::string>();
}

// `result` is an answer with `status` and the JSON error `message`.
inline void expect_error(const httplib::Result& result, int status, const std::string& message) {
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, status);
  EXPECT_EQ(error_of(result), message);
}

// A connected TCP socket to 127.0.0.1:port from `source` (any 127.x.y.z: a
// loopback address of its own, as another client would have); -1 on failure.
inline int connect_to(int port, const char* source = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (source != nullptr) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &local.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool send_all(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t count = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (count <= 0) return false;
    sent += static_cast<size_t>(count);
  }
  return true;
}

// Reads until the peer closes `fd` or `bound` passes; what came, and in
// `closed` whether the peer closed.
inline std::string read_until_closed(int fd, std::chrono::milliseconds bound, bool* closed = nullptr) {
  std::string answer;
  auto deadline = Clock::now() + bound;
  char buffer[4096];
  bool ended = false;
  while (!ended && Clock::now() < deadline) {
    pollfd entry{fd, POLLIN, 0};
    if (::poll(&entry, 1, 50) <= 0) continue;
    ssize_t count = ::recv(fd, buffer, sizeof buffer, 0);
    if (count <= 0) {
      ended = true;
    } else {
      answer.append(buffer, static_cast<size_t>(count));
    }
  }
  if (closed != nullptr) *closed = ended;
  return answer;
}

// Sends `request` on a raw connection to 127.0.0.1:port and reads until the
// server closes it (at most 5 s).
inline std::string raw_exchange(int port, const std::string& request) {
  int fd = connect_to(port);
  if (fd < 0) return "";
  send_all(fd, request);
  std::string answer = read_until_closed(fd, std::chrono::seconds(5));
  ::close(fd);
  return answer;
}

// What a new server (the fake model, `options`) answers to `request` on a
// raw connection, read until it closes it (at most 5 s).
inline std::string answer_of_new_server(const std::string& request, ServeOptions options = loopback_options()) {
  RunningServer running(fake_model(), std::move(options));
  return raw_exchange(running.port(), request);
}

// Whether the peer has closed `fd` (or reset it) by now, without waiting.
inline bool closed_by_peer(int fd) {
  pollfd entry{fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&entry, 1, 0) <= 0) return false;
  if (entry.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  char byte = 0;
  return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
}

// Reads one whole response (its Content-Length framing) within `bound`; ""
// if none came.
inline std::string read_response(int fd, std::chrono::milliseconds bound) {
  std::string answer;
  auto deadline = Clock::now() + bound;
  char buffer[4096];
  while (Clock::now() < deadline) {
    size_t head = answer.find("\r\n\r\n");
    if (head != std::string::npos) {
      size_t length_at = answer.find("Content-Length: ");
      size_t length = length_at < head ? std::stoul(answer.substr(length_at + 16)) : 0;
      if (answer.size() >= head + 4 + length) return answer;
    }
    pollfd entry{fd, POLLIN, 0};
    if (::poll(&entry, 1, 50) <= 0) continue;
    ssize_t count = ::recv(fd, buffer, sizeof buffer, 0);
    if (count <= 0) break;
    answer.append(buffer, static_cast<size_t>(count));
  }
  return "";
}

// A connection from `source` that has had one request answered and is kept
// alive; -1 if that failed.
inline int kept_alive_connection(int port, const char* source) {
  int fd = connect_to(port, source);
  if (fd < 0) return -1;
  if (!send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") ||
      read_response(fd, std::chrono::seconds(5)).rfind("HTTP/1.1 200 ", 0) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// How many times `needle` occurs in `text`.
inline int count_of(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}

}  // namespace tune::serve_testing
