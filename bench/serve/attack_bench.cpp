// serve_attack_bench [--seconds N] [--servers tune,httplib] [--scenarios a,b]:
// good requests' latency on a server under attack, on 127.0.0.1 (issue 30).
//
// Servers, each in a child process of its own, answering the same model (the
// sum of each instance's features, as the serve tests' fake model):
//   tune     tune::serve_until_signal (`tune serve`'s loop) with default options
//   httplib  a minimal cpp-httplib 0.11 server with its default options (a
//            thread per connection from a pool of 8), the peer
// Scenarios (attackers reconnect as soon as the server closes them):
//   quiet          no attack
//   trickle+idle   8 connections send a POST's head one byte every 2 s, and
//                  500 connections are opened and never send anything
//   idle1000       1,000 connections opened, never sending
//   reconnect200   200 connections that open, wait 50 ms and close, again
// The good client sends one-row POST /v1/models/iris:predict requests, one
// after the other, each on a new connection, for N seconds (default 10) after
// 1 s of attack; a request not answered within 5 s counts as a timeout.
// Prints a table (answered, timeouts, p50/p99/max ms) and, last, one JSON line.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "base/json.h"
#include "tuner/serve/serve.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kGoodTimeout = 5s;
const std::string kBody = R"({"instances": [{"tenure_months": 3, "monthly_charges": 89.5, "support_calls": 4}]})";

tune::Json sum_features(const tune::Json& instances) {
  tune::Json predictions = tune::Json::array();
  for (const tune::Json& instance : instances) {
    double sum = 0;
    for (const auto& [feature, value] : instance.items()) sum += value.is_number() ? value.get<double>() : 0.0;
    predictions.push_back(sum);
  }
  return predictions;
}

[[noreturn]] void serve_tune(int out) {
  tune::ServedModel model;
  model.name = "iris";
  model.predict = sum_features;
  tune::ServeOptions options;
  options.port = 0;
  // serve_until_signal prints its line before serving; a stream that writes
  // through to the pipe at each flush.
  struct PipeBuf : std::stringbuf {
    explicit PipeBuf(int fd) : fd_(fd) {}
    int sync() override {
      std::string text = str();
      [[maybe_unused]] ssize_t n = ::write(fd_, text.data(), text.size());
      str("");
      return 0;
    }
    int fd_;
  } buffer(out);
  std::ostream stream(&buffer);
  ::_exit(tune::serve_until_signal(model, options, stream));
}

[[noreturn]] void serve_httplib(int out) {
  httplib::Server server;  // default options
  server.Post("/v1/models/iris:predict", [](const httplib::Request& req, httplib::Response& res) {
    tune::Json request = tune::parse_json(req.body);
    if (request.is_discarded() || !request.contains("instances")) {
      res.status = 400;
      return;
    }
    res.set_content(tune::Json{{"predictions", sum_features(request["instances"])}}.dump(), "application/json");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::string line = "at http://127.0.0.1:" + std::to_string(port) + "/\n";
  [[maybe_unused]] ssize_t n = ::write(out, line.data(), line.size());
  server.listen_after_bind();
  ::_exit(0);
}

struct Child {
  pid_t pid = -1;
  int port = -1;
};

Child spawn(const std::string& kind) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (kind == "tune") serve_tune(fds[1]);
    serve_httplib(fds[1]);
  }
  ::close(fds[1]);
  std::string text;
  char c = 0;
  while (text.find('\n') == std::string::npos && ::read(fds[0], &c, 1) == 1) text += c;
  ::close(fds[0]);
  size_t at = text.find("127.0.0.1:");
  if (at == std::string::npos) {
    std::cerr << "serve_attack_bench: the " << kind << " server did not start: " << text << "\n";
    std::exit(1);
  }
  return Child{pid, std::atoi(text.c_str() + at + 10)};
}

void stop(const Child& child) {
  ::kill(child.pid, SIGTERM);
  int status = 0;
  auto deadline = Clock::now() + 10s;
  while (::waitpid(child.pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(child.pid, SIGKILL);
      ::waitpid(child.pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
}

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);  // EINPROGRESS
  return fd;
}

// Whether the server has closed (or reset) fd; what it sent is dropped. A
// connection still being made is not closed.
bool closed(int fd) {
  char buffer[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n > 0) continue;
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN);
  }
}

// Whether fd's connection is made, waiting at most 100 ms.
bool connected(int fd) {
  pollfd entry{fd, POLLOUT, 0};
  int error = 0;
  socklen_t size = sizeof error;
  return ::poll(&entry, 1, 100) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 && error == 0;
}

// Attackers, each on a thread of its own, until `done`.
void trickle(int port, int count, const std::atomic<bool>& done) {
  std::vector<int> fds(static_cast<size_t>(count), -1);
  const std::string head = "POST /v1/models/iris:predict HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  while (!done) {
    for (int& fd : fds) {
      if (fd >= 0 && closed(fd)) {
        ::close(fd);
        fd = -1;
      }
      if (fd < 0) {
        fd = connect_to(port);
        if (!connected(fd) || ::send(fd, head.data(), head.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(head.size())) {
          ::close(fd);
          fd = -1;
        }
      } else {
        ::send(fd, "a", 1, MSG_NOSIGNAL);
      }
    }
    for (int i = 0; i < 200 && !done; ++i) std::this_thread::sleep_for(10ms);  // a byte every 2 s
  }
  for (int fd : fds) ::close(fd);
}

void hold_idle(int port, int count, const std::atomic<bool>& done) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) fds.push_back(connect_to(port));
  while (!done) {
    for (int& fd : fds) {
      if (closed(fd)) {
        ::close(fd);
        fd = connect_to(port);
      }
    }
    std::this_thread::sleep_for(20ms);
  }
  for (int fd : fds) ::close(fd);
}

void reconnect(int port, int count, const std::atomic<bool>& done) {
  while (!done) {
    std::vector<int> fds;
    for (int i = 0; i < count; ++i) fds.push_back(connect_to(port));
    std::this_thread::sleep_for(50ms);
    for (int fd : fds) ::close(fd);
  }
}

// One good request on a new connection: its latency in ms, or -1 on timeout
// or failure.
double good_request(int port) {
  const std::string request = "POST /v1/models/iris:predict HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Content-Type: application/json\r\nContent-Length: " +
                              std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
  auto start = Clock::now();
  auto deadline = start + kGoodTimeout;
  int fd = connect_to(port);
  size_t sent = 0;
  std::string answer;
  bool ok = false;
  while (Clock::now() < deadline) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    pollfd entry{fd, static_cast<short>(sent < request.size() ? POLLOUT : POLLIN), 0};
    if (::poll(&entry, 1, std::max(left, 1)) <= 0) continue;
    if (sent < request.size()) {
      ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN) break;
      sent += n > 0 ? static_cast<size_t>(n) : 0;
      continue;
    }
    char buffer[4096];
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
    size_t head = answer.find("\r\n\r\n");
    if (head == std::string::npos) continue;
    size_t length_at = answer.find("Content-Length: ");
    size_t length = length_at < head ? std::stoul(answer.substr(length_at + 16)) : 0;
    if (answer.size() >= head + 4 + length) {
      ok = answer.rfind("HTTP/1.1 200", 0) == 0;
      break;
    }
  }
  ::close(fd);
  return ok ? std::chrono::duration<double, std::milli>(Clock::now() - start).count() : -1;
}

struct Row {
  std::string server, scenario;
  size_t sent = 0, answered = 0;
  double p50 = 0, p99 = 0, max = 0;
};

Row measure(const std::string& server, const std::string& scenario, std::chrono::seconds duration) {
  Child child = spawn(server);
  std::atomic<bool> done{false};
  std::vector<std::thread> attackers;
  if (scenario == "trickle+idle") {
    attackers.emplace_back(trickle, child.port, 8, std::cref(done));
    attackers.emplace_back(hold_idle, child.port, 500, std::cref(done));
  } else if (scenario == "idle1000") {
    attackers.emplace_back(hold_idle, child.port, 1000, std::cref(done));
  } else if (scenario == "reconnect200") {
    attackers.emplace_back(reconnect, child.port, 200, std::cref(done));
  }
  if (!attackers.empty()) std::this_thread::sleep_for(1s);
  Row row{server, scenario};
  std::vector<double> latencies;
  auto end = Clock::now() + duration;
  while (Clock::now() < end) {
    double ms = good_request(child.port);
    ++row.sent;
    if (ms >= 0) latencies.push_back(ms);
  }
  done = true;
  for (std::thread& attacker : attackers) attacker.join();
  stop(child);
  row.answered = latencies.size();
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    row.p50 = latencies[latencies.size() / 2];
    row.p99 = latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)];
    row.max = latencies.back();
  }
  return row;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = 10;
  std::vector<std::string> servers = {"tune", "httplib"};
  std::vector<std::string> scenarios = {"quiet", "trickle+idle", "idle1000", "reconnect200"};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--seconds") seconds = std::atoi(argv[i + 1]);
    if (flag == "--servers") servers = split(argv[i + 1]);
    if (flag == "--scenarios") scenarios = split(argv[i + 1]);
  }
  ::signal(SIGPIPE, SIG_IGN);
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, 8192);  // 1,000 attackers and the good client
  ::setrlimit(RLIMIT_NOFILE, &limit);
  std::vector<Row> rows;
  for (const std::string& scenario : scenarios) {
    for (const std::string& server : servers) {
      std::cerr << "[bench] " << server << ", " << scenario << ", " << seconds << " s\n";
      rows.push_back(measure(server, scenario, std::chrono::seconds(seconds)));
    }
  }
  auto ms = [](const Row& row, double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", value);
    return row.answered == 0 ? std::string("-") : std::string(text);
  };
  std::printf("good requests (one-row POST, a new connection each, 5 s timeout) on 127.0.0.1, %d s per row:\n",
              seconds);
  std::printf("| server | attack | sent | answered | timeouts | p50 ms | p99 ms | max ms |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  tune::Json figures = tune::Json::object();
  for (const Row& row : rows) {
    std::printf("| %s | %s | %zu | %zu | %zu | %s | %s | %s |\n", row.server.c_str(), row.scenario.c_str(), row.sent,
                row.answered, row.sent - row.answered, ms(row, row.p50).c_str(), ms(row, row.p99).c_str(),
                ms(row, row.max).c_str());
    figures[row.server][row.scenario] = {{"sent", row.sent},
                                         {"answered", row.answered},
                                         {"p50_ms", row.answered ? tune::Json(row.p50) : tune::Json()},
                                         {"p99_ms", row.answered ? tune::Json(row.p99) : tune::Json()},
                                         {"max_ms", row.answered ? tune::Json(row.max) : tune::Json()}};
  }
  std::printf("%s\n", tune::Json{{"benchmark", "serve-attack"}, {"seconds", seconds}, {"figures", figures}}.dump().c_str());
  return 0;
}
