#include "tuner/serve/serve_routes.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <exception>
#include <utility>

#include "base/error.h"
#include "base/json.h"

namespace tune::serve_detail {
namespace {

constexpr const char* kPrometheusType = "text/plain; version=0.0.4; charset=utf-8";
constexpr uint64_t kMaxSkippedBody = 64 << 10;

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

HttpResponse json_response(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

// parse_json's "parse error at line 2, column 7: <reason>" as "malformed JSON
// at byte 19: <reason>" (the byte counted from 1, as nlohmann's own); any other
// reason (too deep, a number out of range) as it is.
std::string describe_json_error(const std::string& body, const std::string& why) {
  unsigned long line = 0;
  unsigned long column = 0;
  int consumed = 0;
  if (std::sscanf(why.c_str(), "parse error at line %lu, column %lu: %n", &line, &column, &consumed) != 2 ||
      consumed == 0 || line == 0) {
    return "the body cannot be read as JSON: " + why;
  }
  size_t line_start = 0;
  for (unsigned long i = 1; i < line && line_start != std::string::npos; ++i) {
    line_start = body.find('\n', line_start);
    if (line_start != std::string::npos) ++line_start;
  }
  size_t byte = (line_start == std::string::npos ? 0 : line_start) + column;
  return "malformed JSON at byte " + std::to_string(byte) + ": " + why.substr(static_cast<size_t>(consumed));
}

// The request's "instances"; throws ConfigError (a 400) when the body is not
// JSON (parse_json: bounded nesting, numbers in range) or the instances are
// not a non-empty array of at most max_instances objects.
Json parse_instances(const std::string& body, size_t max_instances) {
  std::string why;
  Json request = parse_json(body, kMaxJsonDepth, &why);
  if (request.is_discarded()) throw ConfigError(describe_json_error(body, why));
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

bool is_get(const HttpRequest& request) { return request.method == "GET" || request.method == "HEAD"; }

}  // namespace

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

HttpResponse error_response(int status, const std::string& message) {
  Json body = {{"error", one_line(message)}};
  return json_response(status, body.dump(-1, ' ', false, Json::error_handler_t::replace));
}

bool reads_past_refused_body(const HttpRequest& head) {
  return !head.chunked && !head.expect_continue && head.content_length.value_or(0) <= kMaxSkippedBody;
}

Routes::Routes(ServedModel model, const ServeOptions& options, Metrics& metrics)
    : model_(std::move(model)), token_(options.token), max_instances_(options.max_instances), metrics_(metrics) {
  Json metadata = model_.metadata.is_object() ? model_.metadata : Json::object();
  if (!metadata.contains("name")) metadata["name"] = model_.name;
  if (!metadata.contains("version")) metadata["version"] = "1";
  metadata["state"] = "AVAILABLE";
  metadata_body_ = metadata.dump(-1, ' ', false, Json::error_handler_t::replace);
  metadata_path_ = "/v1/models/" + model_.name;
  predict_path_ = metadata_path_ + ":predict";
}

Route Routes::classify(const std::string& path) const {
  if (path == predict_path_) return Route::kPredict;
  if (path == metadata_path_) return Route::kMetadata;
  if (path == "/healthz") return Route::kHealth;
  if (path == "/metrics") return Route::kMetrics;
  return Route::kOther;
}

bool Routes::authorized(const HttpRequest& head, Route route) const {
  if (token_.empty() || (route == Route::kHealth && is_get(head))) return true;
  const std::string* value = head.header("Authorization");
  if (value == nullptr) return false;
  const std::string scheme = "bearer ";
  if (value->size() < scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>((*value)[i])) != scheme[i]) return false;
  }
  size_t start = value->find_first_not_of(' ', scheme.size());
  return equal_in_constant_time(start == std::string::npos ? "" : value->substr(start), token_);
}

std::optional<HttpResponse> Routes::refuse(const HttpRequest& head) const {
  Route route = classify(head.path);
  if (!authorized(head, route)) {
    HttpResponse response =
        error_response(401, "missing or wrong token: send the header \"Authorization: Bearer <token>\"");
    response.headers.emplace_back("WWW-Authenticate", "Bearer");
    return response;
  }
  if (route == Route::kOther) return not_found(head);
  bool predicting = route == Route::kPredict;
  if (predicting ? head.method != "POST" : !is_get(head)) {
    HttpResponse response = error_response(
        405, head.method + " " + head.path + " is not allowed: use " + (predicting ? "POST" : "GET"));
    response.headers.emplace_back("Allow", predicting ? "POST" : "GET, HEAD");
    return response;
  }
  if (!predicting) return std::nullopt;
  const std::string* type = head.header("Content-Type");
  if (type != nullptr && type->rfind("multipart/", 0) == 0) {
    return error_response(415, "send the instances as application/json, not multipart");
  }
  if (!head.chunked && !head.content_length) {
    return error_response(411, "the request has no Content-Length: send {\"instances\": [...]} as its body");
  }
  return std::nullopt;
}

HttpResponse Routes::not_found(const HttpRequest& head) const {
  const std::string models = "/v1/models/";
  std::string path = head.path.substr(0, 200);
  if (path.rfind(models, 0) == 0) {
    std::string name = path.substr(models.size(), path.find_first_of("/:", models.size()) - models.size());
    return error_response(404, "no model named '" + name + "': this server serves '" + model_.name + "'");
  }
  return error_response(404, "no route " + head.method + " " + path + ": see GET " + metadata_path_);
}

HttpResponse Routes::answer(const HttpRequest& request) const {
  switch (classify(request.path)) {
    case Route::kPredict: return predict(request.body);
    case Route::kMetadata: return json_response(200, metadata_body_);
    case Route::kHealth: return json_response(200, R"({"status":"ok"})");
    case Route::kMetrics: {
      HttpResponse response = json_response(200, metrics_.render());
      response.content_type = kPrometheusType;
      return response;
    }
    case Route::kOther: break;
  }
  return not_found(request);  // refuse() answers these; kept for callers that skip it
}

HttpResponse Routes::predict(const std::string& body) const {
  Json instances;
  Json predictions;
  try {
    instances = parse_instances(body, max_instances_);
    predictions = model_.predict(instances);
  } catch (const ConfigError& error) {
    return error_response(400, error.what());
  } catch (const std::exception& error) {
    return error_response(500, std::string("internal error: ") + error.what());
  } catch (...) {
    return error_response(500, "internal error: an exception that is not a std::exception");
  }
  if (!predictions.is_array() || predictions.size() != instances.size()) {
    size_t count = predictions.is_array() ? predictions.size() : 1;
    return error_response(500, "internal error: the model answered " + std::to_string(count) +
                                   " predictions for " + std::to_string(instances.size()) + " instances");
  }
  metrics_.add_instances(instances.size());
  std::string answer = "{\"predictions\":";
  answer += predictions.dump(-1, ' ', false, Json::error_handler_t::replace);
  answer += '}';
  return json_response(200, std::move(answer));
}

}  // namespace tune::serve_detail
