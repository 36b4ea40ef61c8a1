// Internal to `tune serve`: the listening socket, client addresses, and the
// worker threads that answer requests read whole.
#pragma once

#include <sys/socket.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tune::serve_detail {

// "host:port", "[v6]:port"
std::string host_and_port(const std::string& host, int port);
// A listening socket on host:port (SO_REUSEADDR, close-on-exec, non-blocking).
// Throws Error naming the address and why ("Address already in use").
int listen_on(const std::string& host, int port);
// The port a bound socket listens on; -1 if unknown.
int bound_port(int fd);
// Whom a connection counts against for the per-client limit: its IPv4
// address (also when IPv4-mapped), or the /64 prefix of its IPv6 address
// (one host is commonly given a whole /64).
std::string client_key(const sockaddr_storage& address);

// Threads that run jobs in order of arrival. shutdown() (and the destructor)
// runs the jobs already queued, then joins. Thread safe.
class WorkerPool {
 public:
  explicit WorkerPool(size_t threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void enqueue(std::function<void()> job);
  void shutdown();

 private:
  void work();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  bool shutting_down_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tune::serve_detail
