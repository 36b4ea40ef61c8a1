// Internal to `tune serve` (tuner/serve/serve.cpp): the connection layer under
// the request handlers. httplib parses requests and calls the handlers; this
// layer owns the listening socket, reads and writes each connection through a
// buffer, keeps connections alive but yields them to waiting ones, ends idle
// ones at once on stop, and runs the worker pool.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <httplib.h>

#include "tuner/serve/serve_metrics.h"

namespace tune::serve_detail {

constexpr int kIoTimeoutSeconds = 5;  // reading a request, writing a response

// What the handlers of one request tell the connection loop around them; a
// connection is served by one thread at a time, so a thread_local suffices.
struct RequestContext {
  Clock::time_point started;
  Route route = Route::kOther;
  uint64_t unread_body = 0;       // bytes of body to read past before the next request
  bool close_connection = false;  // a body was left unread: close after the response
};
extern thread_local RequestContext t_request;

// "host:port", "[v6]:port"
std::string host_and_port(const std::string& host, int port);
// A listening socket on host:port (SO_REUSEADDR, close-on-exec).
int listen_on(const std::string& host, int port);
// The port a bound socket listens on; -1 if unknown.
int bound_port(int fd);

class ConnectionStream;
class WorkerPool;

// httplib's server with our own connection loop (keep-alive that ends at once
// on stop, yields to waiting connections, and refuses bodies early) on a
// socket we bound ourselves (so bind errors say why).
class HttpServer final : public httplib::Server {
 public:
  // Serves on `listener` (which it owns from now on) with `threads` workers.
  HttpServer(int listener, size_t threads, Metrics& metrics);
  ~HttpServer() override;

  // Ends accepting, wakes idle connections; those busy end after their request.
  void stop_serving();
  bool stopping() const { return stopping_.load(); }

 private:
  void close_listener();
  bool process_and_close_socket(int sock) override;
  bool wait_for_request(const ConnectionStream& stream) const;
  bool others_waiting() const;

  Metrics& metrics_;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<WorkerPool*> pool_{nullptr};
};

}  // namespace tune::serve_detail
