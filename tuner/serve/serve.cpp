// The server's lifecycle: options, binding, run/stop, serve_until_signal.
// What is answered is in serve_routes.cpp, how connections are served in
// serve_loop.cpp.
#include "tuner/serve/serve.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <ostream>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/process_limits.h"
#include "tuner/serve/serve_loop.h"
#include "tuner/serve/serve_metrics.h"
#include "tuner/serve/serve_routes.h"
#include "tuner/serve/serve_socket.h"

namespace tune {
namespace {

using serve_detail::ConnectionLoop;
using serve_detail::LoopOptions;
using serve_detail::Metrics;
using serve_detail::Routes;

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
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
  if (options.max_connections == 0 || options.max_connections_per_client == 0) {
    throw ConfigError("tune serve: the connection limits must be positive");
  }
  if (options.request_timeout.count() <= 0 || options.idle_timeout.count() <= 0) {
    throw ConfigError("tune serve: the request and idle timeouts must be positive");
  }
}

ServedModel checked(ServedModel model, const ServeOptions& options) {
  validate_options(options);
  serve_detail::validate_model(model);
  return model;
}

LoopOptions loop_options(const ServeOptions& options) {
  LoopOptions loop;
  loop.threads = options.threads > 0 ? static_cast<size_t>(options.threads)
                                     : std::max(2u, std::thread::hardware_concurrency());
  loop.max_connections = options.max_connections;
  loop.max_connections_per_client = options.max_connections_per_client;
  loop.request_timeout = options.request_timeout;
  loop.idle_timeout = options.idle_timeout;
  loop.limits.max_body_bytes = options.max_body_bytes;
  loop.body_budget = std::max<uint64_t>(loop.body_budget, 2 * uint64_t{options.max_body_bytes});
  return loop;
}

}  // namespace

struct Server::Impl {
  Impl(ServedModel model, const ServeOptions& options)
      : routes(checked(std::move(model), options), options, metrics) {
    int listener = serve_detail::listen_on(options.host, options.port);
    port = serve_detail::bound_port(listener);
    loop = std::make_unique<ConnectionLoop>(listener, routes, metrics, loop_options(options));
  }

  Metrics metrics;
  Routes routes;
  int port = -1;
  std::unique_ptr<ConnectionLoop> loop;

  std::mutex mutex;
  std::condition_variable run_ended;
  bool running = false;
};

Server::Server(ServedModel model, ServeOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), options)) {}

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
  std::exception_ptr failure;
  try {
    impl_->loop->run();
  } catch (...) {
    failure = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->running = false;
  }
  impl_->run_ended.notify_all();
  if (failure) std::rethrow_exception(failure);
}

void Server::stop() { impl_->loop->stop(); }

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
  // A closed terminal stops it the same way; under nohup (ignored) it stays ignored.
  struct sigaction hangup {};
  if (::sigaction(SIGHUP, nullptr, &hangup) == 0 && hangup.sa_handler != SIG_IGN) sigaddset(&signals, SIGHUP);
  SignalMaskGuard mask(signals);  // before the server's threads, which inherit it
  raise_descriptor_limit(options.max_connections + 256);  // and what the process needs besides
  const std::string description = describe_model(model);
  const std::string name = model.name;
  Server server(std::move(model), options);
  out << "serving " << description << " at http://" << serve_detail::host_and_port(options.host, server.port())
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
