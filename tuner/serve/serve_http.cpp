#include "tuner/serve/serve_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/error.h"

namespace tune::serve_detail {

thread_local RequestContext t_request;

namespace {

constexpr int kIdleTimeoutMs = 5000;  // a kept-alive connection without a request
constexpr int kIdleSliceMs = 50;      // how soon an idle connection yields to a waiting one
constexpr size_t kRequestsBeforeYield = 100;
constexpr size_t kMaxLingerBytes = size_t{1} << 20;
constexpr int kLingerMs = 500;
constexpr size_t kFlushBytes = 64 << 10;  // a response's writes gathered before a send()

}  // namespace

std::string host_and_port(const std::string& host, int port) {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

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


HttpServer::HttpServer(int listener, size_t threads, Metrics& metrics) : metrics_(metrics) {
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

HttpServer::~HttpServer() {
  close_listener();
  ::close(wake_fd_);
}

void HttpServer::stop_serving() {
  stopping_.store(true);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(wake_fd_, &one, sizeof one);
  close_listener();
}

void HttpServer::close_listener() {
  int fd = svr_sock_.exchange(INVALID_SOCKET);
  if (fd == INVALID_SOCKET) return;
  ::shutdown(fd, SHUT_RDWR);  // wakes a thread blocked in accept()
  ::close(fd);
}

bool HttpServer::others_waiting() const {
  WorkerPool* pool = pool_.load(std::memory_order_relaxed);
  return pool != nullptr && pool->waiting() > 0;
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

}  // namespace tune::serve_detail
