#include "tuner/serve/serve.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <ostream>
#include <thread>
#include <utility>

#include <httplib.h>

#include "base/error.h"
#include "tuner/serve/serve_http.h"
#include "tuner/serve/serve_metrics.h"

namespace tune {
namespace {

using serve_detail::Clock;
using serve_detail::bound_port;
using serve_detail::host_and_port;
using serve_detail::HttpServer;
using serve_detail::listen_on;
using serve_detail::Metrics;
using serve_detail::Route;
using serve_detail::t_request;
using httplib::ContentReader;
using httplib::Request;
using httplib::Response;
using HandlerResponse = httplib::Server::HandlerResponse;

constexpr const char* kJsonType = "application/json";
constexpr const char* kPrometheusType = "text/plain; version=0.0.4; charset=utf-8";
constexpr uint64_t kMaxSkippedBody = 64 << 10;  // an unread body up to this is read past, not closed on

// ---- Options ---------------------------------------------------------------

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
