#include "tuner/serve.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <ostream>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>

#include "base/error.h"

namespace tune {
namespace {

using Clock = std::chrono::steady_clock;
using httplib::ContentReader;
using httplib::Request;
using httplib::Response;
using HandlerResponse = httplib::Server::HandlerResponse;

constexpr const char* kJsonType = "application/json";
constexpr const char* kPrometheusType = "text/plain; version=0.0.4; charset=utf-8";
constexpr int kIoTimeoutSeconds = 5;   // reading a request, writing a response
constexpr int kIdleTimeoutMs = 5000;   // a kept-alive connection without a request
constexpr int kIdleSliceMs = 50;       // how soon an idle connection yields to a waiting one
constexpr size_t kRequestsBeforeYield = 100;
constexpr uint64_t kMaxSkippedBody = 64 << 10;  // an unread body up to this is read past, not closed on
constexpr size_t kMaxLingerBytes = size_t{1} << 20;
constexpr int kLingerMs = 500;
constexpr size_t kFlushBytes = 64 << 10;  // a response's writes gathered before a send()

// ---- Options ---------------------------------------------------------------

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
}

std::string host_and_port(const std::string& host, int port) {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void validate_options(const ServeOptions& options) {
  const std::string& token = options.token;
  if (options.host.empty()) throw ConfigError("tune serve: --host is empty: give an address such as 127.0.0.1");
  if (options.port < 0 || options.port > 65535) {
    throw ConfigError("tune serve: --port " + std::to_string(options.port) + " is outside 0..65535");
  }
  if (!token.empty() && token.size() < 16) {
    throw ConfigError("tune serve: the token has " + std::to_string(token.size()) +
                      " characters: give at least 16 (e.g. `openssl rand -hex 16`)");
  }
  if (std::any_of(token.begin(), token.end(), [](char c) { return c <= ' ' || c > '~'; })) {
    throw ConfigError("tune serve: the token must be printable ASCII without spaces");
  }
  if (token.empty() && !is_loopback(options.host)) {
    throw ConfigError("tune serve: --host " + options.host +
                      " listens beyond this machine: give --token (or TUNE_SERVE_TOKEN)");
  }
  if (options.threads < 0) throw ConfigError("tune serve: --threads must be 0 (one per core) or more");
  if (options.max_body_bytes == 0) throw ConfigError("tune serve: the body size limit must be positive");
  if (options.max_instances == 0) throw ConfigError("tune serve: the instance limit must be positive");
}

void validate_model(const ServedModel& model) {
  const std::string& name = model.name;
  if (name.empty()) throw ConfigError("tune serve: the model has no name");
  bool url_safe = std::none_of(name.begin(), name.end(), [](char c) {
    return static_cast<unsigned char>(c) <= ' ' || c == 0x7f || std::strchr("/:?#%", c) != nullptr;
  });
  if (!url_safe) {
    throw ConfigError("tune serve: the model name '" + name +
                      "' cannot be part of a URL (no '/', ':', '?', '#', '%', space or control character)");
  }
  if (!model.predict) throw ConfigError("tune serve: the model '" + name + "' has no predict function");
  if (!model.metadata.is_null() && !model.metadata.is_object()) {
    throw ConfigError("tune serve: the metadata of '" + name + "' must be a JSON object");
  }
}

size_t worker_count(int threads) {
  if (threads > 0) return static_cast<size_t>(threads);
  return std::max(2u, std::thread::hardware_concurrency());
}

// A listening socket on host:port (SO_REUSEADDR, close-on-exec).
int listen_on(const std::string& host, int port) {
  const std::string where = host_and_port(host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) throw Error("tune serve: cannot listen on " + where + " (" + gai_strerror(rc) + ")");
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, freeaddrinfo);
  int error = EADDRNOTAVAIL;
  for (addrinfo* address = found; address != nullptr; address = address->ai_next) {
    int fd = ::socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, address->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, address->ai_addr, address->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) return fd;
    error = errno;
    ::close(fd);
  }
  throw Error("tune serve: cannot listen on " + where + " (" + std::strerror(error) + ")");
}

int bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return -1;
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

// ---- Metrics ---------------------------------------------------------------

enum class Route { kPredict, kMetadata, kHealth, kMetrics, kOther };
constexpr std::array<const char*, 5> kRouteNames = {"predict", "metadata", "healthz", "metrics", "other"};
// Upper bounds (seconds) of the duration histogram's buckets, +Inf aside.
constexpr std::array<double, 16> kBuckets = {1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
                                             5e-2, 0.1,    0.25,   0.5,  1,    2.5,    5,    10};

// Lock-free counters: a request costs a few relaxed atomic increments.
class Metrics {
 public:
  void record(Route route, int status, Clock::duration elapsed) {
    PerRoute& counters = routes_[static_cast<size_t>(route)];
    if (status >= kFirstCode && status < kFirstCode + kCodes) {
      counters.requests[status - kFirstCode].fetch_add(1, std::memory_order_relaxed);
    }
    double seconds = std::chrono::duration<double>(elapsed).count();
    size_t bucket = std::lower_bound(kBuckets.begin(), kBuckets.end(), seconds) - kBuckets.begin();
    counters.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
    auto nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
    counters.nanoseconds.fetch_add(static_cast<uint64_t>(nanoseconds), std::memory_order_relaxed);
  }
  void add_instances(size_t count) { instances_.fetch_add(count, std::memory_order_relaxed); }
  std::atomic<int64_t>& in_flight() { return in_flight_; }
  std::string render() const;

 private:
  static constexpr int kFirstCode = 100;
  static constexpr int kCodes = 500;
  struct PerRoute {
    std::array<std::atomic<uint64_t>, kCodes> requests{};
    std::array<std::atomic<uint64_t>, kBuckets.size() + 1> buckets{};
    std::atomic<uint64_t> nanoseconds{0};
  };
  std::array<PerRoute, kRouteNames.size()> routes_{};
  std::atomic<uint64_t> instances_{0};
  std::atomic<int64_t> in_flight_{0};
};

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

std::string Metrics::render() const {
  std::string out;
  out.reserve(8192);
  out += "# HELP tune_serve_requests_total HTTP requests answered, by route and status code.\n";
  out += "# TYPE tune_serve_requests_total counter\n";
  for (size_t route = 0; route < routes_.size(); ++route) {
    for (int code = 0; code < kCodes; ++code) {
      uint64_t count = routes_[route].requests[code].load(std::memory_order_relaxed);
      if (count == 0) continue;
      out += std::string("tune_serve_requests_total{route=\"") + kRouteNames[route] + "\",code=\"" +
             std::to_string(kFirstCode + code) + "\"} " + std::to_string(count) + "\n";
    }
  }
  out += "# HELP tune_serve_instances_total Instances predicted.\n";
  out += "# TYPE tune_serve_instances_total counter\n";
  out += "tune_serve_instances_total " + std::to_string(instances_.load()) + "\n";
  out += "# HELP tune_serve_request_duration_seconds From a request's first byte to its response, by route.\n";
  out += "# TYPE tune_serve_request_duration_seconds histogram\n";
  for (size_t route = 0; route < routes_.size(); ++route) {
    const std::string label = std::string("route=\"") + kRouteNames[route] + "\"";
    uint64_t cumulative = 0;
    for (size_t bucket = 0; bucket <= kBuckets.size(); ++bucket) {
      cumulative += routes_[route].buckets[bucket].load(std::memory_order_relaxed);
      std::string bound = bucket < kBuckets.size() ? format_number(kBuckets[bucket]) : "+Inf";
      out += "tune_serve_request_duration_seconds_bucket{" + label + ",le=\"" + bound + "\"} " +
             std::to_string(cumulative) + "\n";
    }
    double seconds = static_cast<double>(routes_[route].nanoseconds.load()) * 1e-9;
    out += "tune_serve_request_duration_seconds_sum{" + label + "} " + format_number(seconds) + "\n";
    out += "tune_serve_request_duration_seconds_count{" + label + "} " + std::to_string(cumulative) + "\n";
  }
  out += "# HELP tune_serve_in_flight Requests being read, predicted or answered.\n";
  out += "# TYPE tune_serve_in_flight gauge\n";
  out += "tune_serve_in_flight " + std::to_string(in_flight_.load()) + "\n";
  return out;
}

// What the handlers of one request tell the connection loop around them; a
// connection is served by one thread at a time, so a thread_local suffices.
struct RequestContext {
  Clock::time_point started;
  Route route = Route::kOther;
  uint64_t unread_body = 0;       // bytes of body to read past before the next request
  bool close_connection = false;  // a body was left unread: close after the response
};
thread_local RequestContext t_request;

// ---- Connections -----------------------------------------------------------

void describe_address(const sockaddr_storage& address, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET6) {
    auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  } else if (address.ss_family == AF_INET) {
    auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  }
  ip = text;
}

// One accepted connection as httplib's Stream: reads through a buffer (httplib
// reads a request line byte by byte) and gathers a response's writes into one
// send(), made when the next read would wait or by flush().
class ConnectionStream final : public httplib::Stream {
 public:
  explicit ConnectionStream(int fd) : fd_(fd) {
    sockaddr_storage address{};
    socklen_t size = sizeof address;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
      describe_address(address, remote_ip_, remote_port_);
    }
    size = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
      describe_address(address, local_ip_, local_port_);
    }
  }

  bool is_readable() const override { return has_buffered_input() || wait_for(POLLIN); }
  bool is_writable() const override { return wait_for(POLLOUT); }
  ssize_t read(char* data, size_t size) override {
    if (!has_buffered_input()) {
      if (!flush()) return -1;
      if (size >= input_.size()) return receive(data, size);
      ssize_t received = receive(input_.data(), input_.size());
      if (received <= 0) return received;
      begin_ = 0;
      end_ = static_cast<size_t>(received);
    }
    size_t count = std::min(size, end_ - begin_);
    std::memcpy(data, input_.data() + begin_, count);
    begin_ += count;
    return static_cast<ssize_t>(count);
  }
  ssize_t write(const char* data, size_t size) override {
    output_.append(data, size);
    if (output_.size() >= kFlushBytes && !flush()) return -1;
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_ip_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_ip_;
    port = local_port_;
  }
  int socket() const override { return fd_; }

  bool has_buffered_input() const { return begin_ < end_; }
  // Reads and drops `count` bytes; false if the connection ends first.
  bool discard(uint64_t count) {
    char sink[4096];
    while (count > 0) {
      ssize_t n = read(sink, static_cast<size_t>(std::min<uint64_t>(count, sizeof sink)));
      if (n <= 0) return false;
      count -= static_cast<uint64_t>(n);
    }
    return true;
  }
  // Sends what write() gathered; false when the peer is gone or too slow.
  bool flush() {
    size_t sent = 0;
    while (sent < output_.size()) {
      ssize_t count = ::send(fd_, output_.data() + sent, output_.size() - sent, MSG_NOSIGNAL);
      if (count < 0 && errno == EINTR) continue;
      if (count <= 0) break;
      sent += static_cast<size_t>(count);
    }
    bool complete = sent == output_.size();
    output_.clear();  // keeps the capacity for the next response
    return complete;
  }

 private:
  // The socket has SO_RCVTIMEO, so a silent peer ends in EAGAIN.
  // TCP_QUICKACK: a client that writes a request's headers and body
  // separately with Nagle on (httplib's own client does) would otherwise wait
  // for our delayed ACK, 40 ms, before sending the body.
  ssize_t receive(char* data, size_t size) {
    ssize_t count;
    do {
      count = ::recv(fd_, data, size, 0);
    } while (count < 0 && errno == EINTR);
    int on = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_QUICKACK, &on, sizeof on);
    return count;
  }
  bool wait_for(short events) const {
    pollfd entry{fd_, events, 0};
    return ::poll(&entry, 1, kIoTimeoutSeconds * 1000) > 0;
  }

  int fd_;
  std::array<char, 16384> input_;
  size_t begin_ = 0;
  size_t end_ = 0;
  std::string output_;
  std::string remote_ip_, local_ip_;
  int remote_port_ = -1, local_port_ = -1;
};

// httplib's worker pool, which also says how many connections wait for a thread.
class WorkerPool final : public httplib::TaskQueue {
 public:
  explicit WorkerPool(size_t threads) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  void enqueue(std::function<void()> job) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
      waiting_.store(jobs_.size(), std::memory_order_relaxed);
    }
    ready_.notify_one();
  }
  // Runs the jobs already queued, then joins the threads.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      shutting_down_ = true;
    }
    ready_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }
  size_t waiting() const { return waiting_.load(std::memory_order_relaxed); }

 private:
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return shutting_down_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
        waiting_.store(jobs_.size(), std::memory_order_relaxed);
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::atomic<size_t> waiting_{0};
  bool shutting_down_ = false;
  std::vector<std::thread> threads_;
};

// httplib's server with our own connection loop (keep-alive that ends at once
// on stop, yields to waiting connections, and refuses bodies early) on a
// socket we bound ourselves (so bind errors say why).
class HttpServer final : public httplib::Server {
 public:
  HttpServer(int listener, size_t threads, Metrics& metrics) : metrics_(metrics) {
    svr_sock_ = listener;
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) {
      close_listener();
      throw Error(std::string("tune serve: cannot create an eventfd (") + std::strerror(errno) + ")");
    }
    new_task_queue = [this, threads] {
      auto* pool = new WorkerPool(threads);
      pool_.store(pool);
      return pool;
    };
    set_keep_alive_max_count(kRequestsBeforeYield);
    set_keep_alive_timeout(kIdleTimeoutMs / 1000);
    set_read_timeout(kIoTimeoutSeconds);
    set_write_timeout(kIoTimeoutSeconds);
  }
  ~HttpServer() override {
    close_listener();
    ::close(wake_fd_);
  }

  // Ends accepting, wakes idle connections; those busy end after their request.
  void stop_serving() {
    stopping_.store(true);
    uint64_t one = 1;
    [[maybe_unused]] ssize_t written = ::write(wake_fd_, &one, sizeof one);
    close_listener();
  }
  bool stopping() const { return stopping_.load(); }

 private:
  void close_listener() {
    int fd = svr_sock_.exchange(INVALID_SOCKET);
    if (fd == INVALID_SOCKET) return;
    ::shutdown(fd, SHUT_RDWR);  // wakes a thread blocked in accept()
    ::close(fd);
  }
  bool process_and_close_socket(int sock) override;
  bool wait_for_request(const ConnectionStream& stream) const;
  bool others_waiting() const {
    WorkerPool* pool = pool_.load(std::memory_order_relaxed);
    return pool != nullptr && pool->waiting() > 0;
  }

  Metrics& metrics_;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<WorkerPool*> pool_{nullptr};
};

void prepare_socket(int fd) {
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  timeval timeout{kIoTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
}

// Closes after sending a response while the client may still be sending a
// body: reading (and dropping) a bounded rest first keeps the kernel from
// answering with a reset that could destroy the response in flight.
void linger_and_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  char sink[16384];
  size_t dropped = 0;
  auto deadline = Clock::now() + std::chrono::milliseconds(kLingerMs);
  while (dropped < kMaxLingerBytes) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd entry{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&entry, 1, static_cast<int>(left)) <= 0) break;
    ssize_t count = ::recv(fd, sink, sizeof sink, 0);
    if (count <= 0) break;
    dropped += static_cast<size_t>(count);
  }
  ::close(fd);
}

bool HttpServer::process_and_close_socket(int sock) {
  prepare_socket(sock);
  bool linger = false;
  {
    ConnectionStream stream(sock);
    for (size_t served = 0; wait_for_request(stream); ++served) {
      t_request = RequestContext{Clock::now()};
      bool close = stopping() || (served + 1 >= kRequestsBeforeYield && others_waiting());
      bool closed_by_client = false;
      metrics_.in_flight().fetch_add(1, std::memory_order_relaxed);
      bool ok = process_request(stream, close, closed_by_client, nullptr);
      ok = stream.flush() && ok && stream.discard(t_request.unread_body);
      metrics_.in_flight().fetch_sub(1, std::memory_order_relaxed);
      linger = t_request.close_connection;
      if (!ok || close || closed_by_client || linger) break;
    }
  }
  if (linger) {
    linger_and_close(sock);
  } else {
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
  }
  return true;
}

// Waits for the next request of a connection; false when it should close:
// on stop, after kIdleTimeoutMs idle, or sooner when a connection waits for
// a thread.
bool HttpServer::wait_for_request(const ConnectionStream& stream) const {
  if (stream.has_buffered_input()) return !stopping();  // a pipelined request
  pollfd entries[2] = {{stream.socket(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  for (int waited = 0; waited < kIdleTimeoutMs; waited += kIdleSliceMs) {
    int ready = ::poll(entries, 2, kIdleSliceMs);
    if (stopping() || (ready < 0 && errno != EINTR)) return false;
    if (ready > 0) return (entries[0].revents & POLLIN) != 0;
    if (others_waiting()) return false;
  }
  return false;
}

// ---- Requests --------------------------------------------------------------

// "an object", "a number", "null"
std::string with_article(const Json& value) {
  std::string type = value.type_name();
  if (type == "null") return type;
  return (type == "object" || type == "array" ? "an " : "a ") + type;
}

std::string one_line(std::string text) {
  std::replace_if(text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return text;
}

std::string error_body(const std::string& message) {
  return Json{{"error", one_line(message)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void reply(Response& res, int status, const std::string& body, const char* type = kJsonType) {
  res.status = status;
  res.set_content(body, type);
}

void reply_error(Response& res, int status, const std::string& message) {
  reply(res, status, error_body(message));
}

// httplib's own errors (a bad request line, headers too large, ...) as JSON.
std::string status_text(int status) {
  switch (status) {
    case 400: return "bad request";
    case 404: return "not found";
    case 408: return "request timeout";
    case 413: return "request body too large";
    case 414: return "request URI too long";
    case 417: return "expectation failed";
    case 431: return "request header fields too large";
    case 500: return "internal error";
    default: return "HTTP status " + std::to_string(status);
  }
}

// "malformed JSON at byte 7: syntax error while parsing value - ..." from
// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 7: ...".
std::string describe_parse_error(const Json::parse_error& error) {
  std::string what = error.what();
  size_t column = what.find("column ");
  size_t detail = what.find(": ", column == std::string::npos ? 0 : column);
  std::string reason = detail == std::string::npos ? what : what.substr(detail + 2);
  return "malformed JSON at byte " + std::to_string(error.byte) + ": " + reason;
}

// The request's "instances"; throws ConfigError (a 400) when they are not a
// non-empty array of at most max_instances objects.
Json parse_instances(const std::string& body, size_t max_instances) {
  Json request;
  try {
    request = Json::parse(body);
  } catch (const Json::parse_error& error) {
    throw ConfigError(describe_parse_error(error));
  }
  const char* shape = "send {\"instances\": [{...}, ...]}";
  if (!request.is_object()) {
    throw ConfigError("the body is " + with_article(request) + ", not a JSON object: " + shape);
  }
  auto instances = request.find("instances");
  if (instances == request.end()) throw ConfigError(std::string("the body has no \"instances\": ") + shape);
  if (!instances->is_array()) {
    throw ConfigError("\"instances\" is " + with_article(*instances) + ", not an array: " + shape);
  }
  if (instances->empty()) throw ConfigError("\"instances\" is empty: send at least one instance");
  if (instances->size() > max_instances) {
    throw ConfigError(std::to_string(instances->size()) + " instances in one request: at most " +
                      std::to_string(max_instances));
  }
  for (size_t i = 0; i < instances->size(); ++i) {
    if (!(*instances)[i].is_object()) {
      throw ConfigError("instances[" + std::to_string(i) + "] is " + with_article((*instances)[i]) +
                        ": each instance is an object of feature values");
    }
  }
  return std::move(*instances);
}

bool equal_in_constant_time(const std::string& given, const std::string& expected) {
  unsigned char difference = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    difference |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ expected[i]);
  }
  return difference == 0;
}

bool is_get(const Request& req) { return req.method == "GET" || req.method == "HEAD"; }

void close_after_response(Response& res) {
  if (t_request.close_connection) return;
  t_request.close_connection = true;
  res.set_header("Connection", "close");
}

// A request answered before its body was read: a small body is read past
// after the response, so the connection stays usable; after a large or
// chunked one the connection closes.
void leave_body_unread(const Request& req, Response& res) {
  bool chunked = req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos;
  uint64_t length = req.get_header_value<uint64_t>("Content-Length");
  if (!chunked && length <= kMaxSkippedBody) {
    t_request.unread_body = length;
  } else {
    close_after_response(res);
  }
}

}  // namespace

struct Server::Impl {
  Impl(ServedModel served, ServeOptions serve_options);

  HandlerResponse route(const Request& req, Response& res);
  HandlerResponse answer(const Request& req, Response& res);
  Route classify(const std::string& path) const;
  bool authorized(const Request& req, Route route) const;
  bool body_acceptable(const Request& req, Response& res) const;
  void not_found(const Request& req, Response& res) const;
  void predict(const ContentReader& read, Response& res);
  bool read_body(const ContentReader& read, Response& res, std::string& body) const;
  void install_handlers();

  ServedModel model;
  ServeOptions options;
  std::string metadata_body;
  std::string metadata_path;  // /v1/models/<name>
  std::string predict_path;   // /v1/models/<name>:predict
  Metrics metrics;
  int port = -1;
  std::unique_ptr<HttpServer> http;

  std::mutex mutex;
  std::condition_variable run_ended;
  bool running = false;
};

Server::Impl::Impl(ServedModel served, ServeOptions serve_options)
    : model(std::move(served)), options(std::move(serve_options)) {
  validate_options(options);
  validate_model(model);
  Json metadata = model.metadata.is_object() ? model.metadata : Json::object();
  if (!metadata.contains("name")) metadata["name"] = model.name;
  if (!metadata.contains("version")) metadata["version"] = "1";
  metadata["state"] = "AVAILABLE";
  metadata_body = metadata.dump(-1, ' ', false, Json::error_handler_t::replace);
  metadata_path = "/v1/models/" + model.name;
  predict_path = metadata_path + ":predict";
  int listener = listen_on(options.host, options.port);
  port = bound_port(listener);
  http = std::make_unique<HttpServer>(listener, worker_count(options.threads), metrics);
  install_handlers();
}

void Server::Impl::install_handlers() {
  http->set_payload_max_length(options.max_body_bytes);
  // Every route but the predict body is answered here, before httplib's
  // regex dispatch; a predict request passes on to the Post handler only
  // once its token, method and size are right.
  http->set_pre_routing_handler([this](const Request& req, Response& res) { return route(req, res); });
  http->set_expect_100_continue_handler([this](const Request& req, Response& res) {
    if (route(req, res) == HandlerResponse::Unhandled) return 100;
    t_request.unread_body = 0;  // the client may send its body, or may not
    close_after_response(res);
    return res.status;
  });
  http->Post(".*", [this](const Request&, Response& res, const ContentReader& read) { predict(read, res); });
  http->set_error_handler([](const Request&, Response& res) {
    if (res.body.empty()) res.set_content(error_body(status_text(res.status)), kJsonType);
  });
  http->set_exception_handler([](const Request&, Response& res, std::exception_ptr) {
    reply_error(res, 500, "internal error");
  });
  http->set_logger([this](const Request&, const Response& res) {
    metrics.record(t_request.route, res.status, Clock::now() - t_request.started);
  });
}

Route Server::Impl::classify(const std::string& path) const {
  if (path == predict_path) return Route::kPredict;
  if (path == metadata_path) return Route::kMetadata;
  if (path == "/healthz") return Route::kHealth;
  if (path == "/metrics") return Route::kMetrics;
  return Route::kOther;
}

bool Server::Impl::authorized(const Request& req, Route route) const {
  if (options.token.empty() || (route == Route::kHealth && is_get(req))) return true;
  auto header = req.headers.find("Authorization");
  if (header == req.headers.end()) return false;
  const std::string& value = header->second;
  const std::string scheme = "bearer ";
  if (value.size() < scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != scheme[i]) return false;
  }
  size_t start = value.find_first_not_of(' ', scheme.size());
  return equal_in_constant_time(start == std::string::npos ? "" : value.substr(start), options.token);
}

HandlerResponse Server::Impl::route(const Request& req, Response& res) {
  HandlerResponse handled = answer(req, res);
  if (handled == HandlerResponse::Handled) leave_body_unread(req, res);
  return handled;
}

HandlerResponse Server::Impl::answer(const Request& req, Response& res) {
  Route route = classify(req.path);
  t_request.route = route;
  if (!authorized(req, route)) {
    res.set_header("WWW-Authenticate", "Bearer");
    reply_error(res, 401, "missing or wrong token: send the header \"Authorization: Bearer <token>\"");
    return HandlerResponse::Handled;
  }
  const char* allowed = route == Route::kPredict ? "POST" : "GET";
  bool method_ok = route == Route::kPredict ? req.method == "POST" : is_get(req);
  if (route != Route::kOther && !method_ok) {
    res.set_header("Allow", route == Route::kPredict ? "POST" : "GET, HEAD");
    reply_error(res, 405, req.method + " " + req.path + " is not allowed: use " + allowed);
    return HandlerResponse::Handled;
  }
  switch (route) {
    case Route::kPredict:
      return body_acceptable(req, res) ? HandlerResponse::Unhandled : HandlerResponse::Handled;
    case Route::kMetadata: reply(res, 200, metadata_body); break;
    case Route::kHealth: reply(res, 200, R"({"status":"ok"})"); break;
    case Route::kMetrics: reply(res, 200, metrics.render(), kPrometheusType); break;
    case Route::kOther: not_found(req, res); break;
  }
  return HandlerResponse::Handled;
}

// Judges a predict body from its headers, before reading it.
bool Server::Impl::body_acceptable(const Request& req, Response& res) const {
  if (req.get_header_value("Content-Type").rfind("multipart/", 0) == 0) {
    reply_error(res, 415, "send the instances as application/json, not multipart");
    return false;
  }
  bool chunked = req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos;
  if (!chunked && !req.has_header("Content-Length")) {
    reply_error(res, 411, "the request has no Content-Length: send {\"instances\": [...]} as its body");
    return false;
  }
  uint64_t length = req.get_header_value<uint64_t>("Content-Length");
  if (!chunked && length > options.max_body_bytes) {
    reply_error(res, 413, "the body has " + std::to_string(length) + " bytes: at most " +
                              std::to_string(options.max_body_bytes));
    return false;
  }
  return true;
}

void Server::Impl::not_found(const Request& req, Response& res) const {
  const std::string models = "/v1/models/";
  std::string path = req.path.substr(0, 200);
  if (path.rfind(models, 0) == 0) {
    std::string name = path.substr(models.size(), path.find_first_of("/:", models.size()) - models.size());
    reply_error(res, 404, "no model named '" + name + "': this server serves '" + model.name + "'");
    return;
  }
  reply_error(res, 404, "no route " + req.method + " " + path + ": see GET " + metadata_path);
}

bool Server::Impl::read_body(const ContentReader& read, Response& res, std::string& body) const {
  const size_t limit = options.max_body_bytes;
  bool too_large = false;
  bool complete = read([&](const char* data, size_t size) {
    if (size > limit - body.size()) {
      too_large = true;
      return false;
    }
    body.append(data, size);
    return true;
  });
  if (complete) return true;
  close_after_response(res);  // the rest of the body is unread
  if (too_large) {
    reply_error(res, 413, "the body has more than " + std::to_string(limit) + " bytes");
  } else {
    reply_error(res, 400, "the body could not be read (cut short, or a bad encoding)");
  }
  return false;
}

void Server::Impl::predict(const ContentReader& read, Response& res) {
  std::string body;
  if (!read_body(read, res, body)) return;
  Json instances;
  Json predictions;
  try {
    instances = parse_instances(body, options.max_instances);
    predictions = model.predict(instances);
  } catch (const ConfigError& error) {
    return reply_error(res, 400, error.what());
  } catch (const std::exception& error) {
    return reply_error(res, 500, std::string("internal error: ") + error.what());
  } catch (...) {
    return reply_error(res, 500, "internal error: an exception that is not a std::exception");
  }
  if (!predictions.is_array() || predictions.size() != instances.size()) {
    size_t count = predictions.is_array() ? predictions.size() : 1;
    return reply_error(res, 500, "internal error: the model answered " + std::to_string(count) +
                                     " predictions for " + std::to_string(instances.size()) + " instances");
  }
  metrics.add_instances(instances.size());
  std::string answer = "{\"predictions\":";
  answer += predictions.dump(-1, ' ', false, Json::error_handler_t::replace);
  answer += '}';
  reply(res, 200, answer);
}

Server::Server(ServedModel model, ServeOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(options))) {}

Server::~Server() {
  stop();
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->run_ended.wait(lock, [this] { return !impl_->running; });
}

int Server::port() const { return impl_->port; }

void Server::run() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->running = true;
  }
  errno = 0;
  bool ok = impl_->http->listen_after_bind();
  int error = errno;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->running = false;
  }
  impl_->run_ended.notify_all();
  if (!ok && !impl_->http->stopping()) {
    throw Error(std::string("tune serve: accepting connections failed (") + std::strerror(error) + ")");
  }
}

void Server::stop() { impl_->http->stop_serving(); }

namespace {

// "7", "val_loss=0.12" (from {"name": "val_loss", "value": 0.12}), "val_loss".
std::string summarize(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("name") && value.contains("value")) {
    return summarize(value["name"]) + "=" + summarize(value["value"]);
  }
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// "iris (trial 7, metric val_loss=0.12)"
std::string describe_model(const ServedModel& model) {
  std::vector<std::string> parts;
  for (const char* key : {"trial", "metric"}) {
    if (model.metadata.is_object() && model.metadata.contains(key)) {
      parts.push_back(std::string(key) + " " + summarize(model.metadata[key]));
    }
  }
  std::string text = model.name;
  for (size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? " (" : ", ") + parts[i];
  return parts.empty() ? text : text + ")";
}

// Restores the calling thread's signal mask when it goes out of scope.
class SignalMaskGuard {
 public:
  explicit SignalMaskGuard(const sigset_t& block) { pthread_sigmask(SIG_BLOCK, &block, &previous_); }
  ~SignalMaskGuard() { restore(); }
  void restore() {
    if (restored_) return;
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    restored_ = true;
  }

 private:
  sigset_t previous_;
  bool restored_ = false;
};

}  // namespace

int serve_until_signal(ServedModel model, const ServeOptions& options, std::ostream& out) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  SignalMaskGuard mask(signals);  // before the server's threads, which inherit it
  const std::string description = describe_model(model);
  const std::string name = model.name;
  Server server(std::move(model), options);
  out << "serving " << description << " at http://" << host_and_port(options.host, server.port())
      << "/v1/models/" << name << std::endl;

  std::exception_ptr failure;
  const pthread_t caller = pthread_self();
  std::thread serving([&] {
    try {
      server.run();
    } catch (...) {
      failure = std::current_exception();
      pthread_kill(caller, SIGTERM);  // ends the sigwait below
    }
  });
  int received = 0;
  sigwait(&signals, &received);
  mask.restore();  // a second Ctrl-C during the graceful stop ends the process
  server.stop();
  serving.join();
  if (failure) std::rethrow_exception(failure);
  return 0;
}

}  // namespace tune
