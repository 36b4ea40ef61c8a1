// Serving: the HTTP layer of `tune serve`, which answers predictions of one
// trained model over a KServe v1 / TF-Serving shaped JSON API.
//
// The model is a callback, so this layer knows no ML: the caller builds a
// ServedModel from a checkpoint, and the Server maps HTTP to it.
//
//   POST /v1/models/<name>:predict  {"instances": [{...}, ...]} -> {"predictions": [...]}
//   GET  /v1/models/<name>          the model's metadata, with "state": "AVAILABLE"
//   GET  /healthz                   {"status": "ok"} (never needs the token)
//   GET  /metrics                   Prometheus text format 0.0.4
//
// Every error is JSON, {"error": "<one line>"}: 400 malformed JSON (or nested
// deeper than 128 levels, or a number out of range) or bad instances, or a
// request that cannot be framed (two Content-Lengths, a malformed request
// line: the connection then closes), 401 missing or wrong token, 404 unknown
// route or model, 405 wrong method, 408 a request not whole within
// request_timeout, 411 no Content-Length, 413 body too large, 414/431 request
// line or header fields too large, 415 a multipart body, 417 an Expect other
// than 100-continue, 500 the model failed (the server keeps serving), 501 a
// Transfer-Encoding other than chunked, 503 too many request bodies held at
// once, 505 an HTTP version other than 1.1 or 1.0.
//
// Hostile clients: connections are parked in one epoll loop, so a client that
// trickles its headers, holds connections idle or reads slowly holds no
// worker thread; every request has a deadline for its head and body, and
// connections are capped per client address and in total (at a cap, idle
// and unfinished connections are replaced by new ones; serve_loop.h).
//
// Usage:
//
//   tune::ServedModel model;
//   model.name = "iris";
//   model.metadata = {{"task", "classification"}, {"trial", 7}};
//   model.predict = [&](const tune::Json& instances) { return booster.predict(instances); };
//   tune::ServeOptions options;
//   options.port = 0;                       // any free port
//   tune::Server server(model, options);    // binds; throws on a bad option or a taken port
//   std::thread serving([&] { server.run(); });
//   ... server.port() ...
//   server.stop();                          // in-flight requests finish first
//   serving.join();
//
// `tune serve` itself calls serve_until_signal(), which stops on SIGINT/SIGTERM.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "base/json.h"

namespace tune {

// What is served: built by the caller from a checkpoint.
struct ServedModel {
  // The experiment name: the model's URL is /v1/models/<name>. Not empty; no
  // '/', ':', '?', '#', space or control character.
  std::string name;
  // Returned by GET /v1/models/<name> (features, task, trial, metric...): an
  // object (null counts as {}). The server adds "name" and "version": "1"
  // where absent, and "state": "AVAILABLE".
  Json metadata;
  // Maps the request's "instances" (a non-empty JSON array of objects, raw
  // feature values; at most ServeOptions::max_instances) to a JSON array of
  // as many predictions, one per instance and in order (e.g. {"label": "1",
  // "probabilities": {...}} or a number).
  // Throws tune::ConfigError (one line) when the instances are bad: HTTP 400
  // with that message. Any other exception, or an answer of the wrong shape:
  // HTTP 500 {"error": "internal error: ..."}, and the server keeps serving.
  // Called concurrently from several server threads: the caller makes it
  // thread safe.
  std::function<Json(const Json& instances)> predict;
};

struct ServeOptions {
  // The address to listen on. Default: "127.0.0.1", this machine only. Any
  // address beyond loopback (127.0.0.0/8, ::1, "localhost"), such as
  // "0.0.0.0", "::" or a NIC's address, requires `token`.
  std::string host = "127.0.0.1";
  // 0: an ephemeral port (see Server::port()). Default: 8000.
  int port = 8000;
  // Empty: no authentication (loopback only). Otherwise at least 16
  // printable ASCII characters without spaces, and every request except GET
  // /healthz must carry "Authorization: Bearer <token>" (401 otherwise; the
  // comparison takes the same time wherever the tokens differ).
  std::string token;
  // A larger request body is refused with 413, judged from Content-Length
  // before the body is read, and the connection is closed. Default: 8 MiB.
  size_t max_body_bytes = size_t{8} << 20;
  // More instances in one request: 400. Default: 10,000.
  size_t max_instances = 10000;
  // Threads that answer requests (the model's predict runs on them). They
  // only see requests read whole: one more thread reads and writes every
  // connection. 0: hardware_concurrency, at least 2.
  int threads = 0;
  // Connections open at once, from all clients; at most the process's
  // RLIMIT_NOFILE less 64. At the limit, a new connection replaces one that
  // holds no request being answered (closing first one that is closing
  // anyway, then the longest idle, then the one longest in sending its
  // request), of the client holding the most connections; with none to
  // replace, it is closed at once. Default: 1024.
  size_t max_connections = 1024;
  // Connections open at once from one client address (IPv6: one /64); a new
  // one replaces one of that client's as above. Default: 256.
  size_t max_connections_per_client = 256;
  // A request's head and body must arrive within this of its first byte
  // (else 408 and the connection closes), and a client must take its answer
  // within it (else the connection closes). Default: 10 s.
  std::chrono::milliseconds request_timeout{10000};
  // A connection without a request in progress is closed after this.
  // Default: 5 s.
  std::chrono::milliseconds idle_timeout{5000};
};

// An HTTP server for one model. Not copyable or movable.
class Server {
 public:
  // Validates `options`, then binds and listens (so port() is known and
  // connections queue), but serves nothing until run().
  // Throws tune::ConfigError, before binding, for a non-loopback host without
  // a token, a port outside 0..65535, a token shorter than 16 characters, a
  // bad model name or a missing predict, a limit or timeout of 0. Throws tune::Error when the address
  // cannot be bound ("tune serve: cannot listen on 127.0.0.1:8000 (Address
  // already in use)").
  Server(ServedModel model, ServeOptions options);
  // Stops (as stop()) and waits for a run() in another thread to return.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound port: options.port, or the ephemeral one. Thread safe.
  int port() const;
  // Serves until stop(): reads and writes every connection on the calling
  // thread and answers on `threads` worker threads. After stop() it returns
  // once the requests in flight are answered; idle connections, and those
  // whose request has not arrived whole, are closed at once, unanswered.
  // Returns at once if stop() came first. Call it from one thread at a time.
  // Throws tune::Error if accepting connections fails for another reason.
  void run();
  // Stops accepting connections and makes run() return as described there;
  // does not wait for it. Idempotent; thread safe; may be called before or
  // during run(), from any thread but not from a signal handler.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `tune serve`'s main loop: builds a Server, prints one line
//   serving <name> (trial 7, metric val_loss=0.12) at http://HOST:PORT/v1/models/<name>
// to `out` (the parts in parentheses from metadata "trial" and "metric" when
// present), then waits with sigwait() for SIGINT or SIGTERM, which it blocks
// in the calling thread and so in every thread started after this call. On
// the signal it restores the calling thread's signal mask (a second signal
// then has its default effect), stops gracefully and returns 0. Call it
// before starting threads that do not block those signals; the caller does
// no signal handling. Raises the soft RLIMIT_NOFILE towards the hard limit, as
// far as max_connections needs. Throws as Server's constructor and run() do.
int serve_until_signal(ServedModel model, const ServeOptions& options, std::ostream& out);

}  // namespace tune
