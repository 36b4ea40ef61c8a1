// Internal to `tune serve`: the connection loop under the routes.
//
// One thread (the caller of run()) owns every socket: it accepts, reads and
// parses requests (serve_http.h) and writes answers, all non-blocking under
// epoll. A connection holds no thread while its client is slow: only a
// request read whole goes to a worker thread, which runs Routes::answer and
// hands the response back. So clients that trickle their headers, hold
// connections idle or read their answers slowly cost a socket each, never a
// worker, and each is bounded:
//
//   - a request's head and body must arrive within request_timeout of its
//     first byte (408, then close), an answer be taken within it too;
//   - a connection without a request is closed after idle_timeout;
//   - at most max_connections_per_client connections per client address
//     (IPv6: per /64) and max_connections in all. At a limit, a new
//     connection replaces an existing one that holds no request being
//     answered: a lingering one first, then the longest idle, then the
//     longest unfinished; of the new client's own at its limit, else of the
//     client holding the most. With none to replace it is closed at once;
//   - request bodies being held take at most body_budget bytes together
//     (503 beyond);
//   - the head is bounded in bytes and fields, the body by max_body_bytes.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "tuner/serve/serve_http.h"
#include "tuner/serve/serve_metrics.h"

namespace tune::serve_detail {

class Routes;

struct LoopOptions {
  size_t threads = 2;
  size_t max_connections = 1024;
  size_t max_connections_per_client = 256;
  Clock::duration request_timeout = std::chrono::seconds(10);
  Clock::duration idle_timeout = std::chrono::seconds(5);
  HttpLimits limits;
  // Bytes of request bodies held at once, over all connections (being read,
  // or read and waiting for their answer).
  uint64_t body_budget = uint64_t{256} << 20;
};

class ConnectionLoop {
 public:
  // Serves `listener` (a listening socket, owned from here on) with `routes`
  // and `metrics` (both must outlive it). Throws Error when an epoll or
  // eventfd cannot be made.
  ConnectionLoop(int listener, const Routes& routes, Metrics& metrics, LoopOptions options);
  ~ConnectionLoop();
  ConnectionLoop(const ConnectionLoop&) = delete;
  ConnectionLoop& operator=(const ConnectionLoop&) = delete;

  // Serves until stop(): then closes the listener and every connection
  // without a request being answered, answers those being answered (with
  // "Connection: close"), and returns when the last is closed. Returns at
  // once after an earlier stop(). Throws Error when epoll or accept() fail
  // for a reason other than load.
  void run();
  // Makes run() stop as described there; does not wait. Thread safe; may
  // come before run().
  void stop();
  bool stopping() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tune::serve_detail
