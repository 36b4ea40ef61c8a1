// Fuzz target: what `tune serve` does with a connection's bytes, without the
// sockets: the HTTP parser (tuner/serve/serve_http.h: request line, header
// fields, Content-Length or chunked body, pipelined requests), the routes'
// check of each head and their answer to each whole request (token, route,
// method, the predict body's JSON through parse_json, the instances), and
// the response written, as the connection loop (serve_exchange.cpp) chains
// them.
//
// Input: the first byte picks the size of the pieces the rest arrives in (a
// client's writes); the rest is what the client sends. Invariants: the
// answers are the same whether the bytes arrive whole or in pieces; every
// answer is an HTTP/1.1 response whose error body is {"error": one line};
// the parser never uses more bytes than it is given.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/json.h"
#include "fuzz_util.h"
#include "tuner/serve/serve.h"
#include "tuner/serve/serve_http.h"
#include "tuner/serve/serve_metrics.h"
#include "tuner/serve/serve_routes.h"

namespace {

using tune::Json;
using namespace tune::serve_detail;

// Sums each instance's numeric features; anything else is the client's error.
tune::ServedModel fuzz_model() {
  tune::ServedModel model;
  model.name = "iris";
  model.metadata = {{"trial", 7}};
  model.predict = [](const Json& instances) {
    Json predictions = Json::array();
    for (const Json& instance : instances) {
      double sum = 0;
      for (const auto& [feature, value] : instance.items()) {
        if (!value.is_number()) throw tune::ConfigError("feature '" + feature + "' is not a number");
        sum += value.get<double>();
      }
      predictions.push_back(sum);
    }
    return predictions;
  };
  return model;
}

tune::ServeOptions fuzz_options() {
  tune::ServeOptions options;
  options.token = "0123456789abcdef";
  options.max_instances = 64;
  return options;
}

HttpLimits fuzz_limits() {
  HttpLimits limits;
  limits.max_body_bytes = 1 << 16;  // the routes' 413 and the parser's agree on it
  return limits;
}

Metrics metrics;
const Routes routes(fuzz_model(), fuzz_options(), metrics);

void check_answer(const HttpResponse& response) {
  const std::string text = serialize(response);
  tune::fuzz::check(text.rfind("HTTP/1.1 ", 0) == 0, "not a status line: " + text.substr(0, 80));
  if (response.status < 400) return;
  std::string why;
  Json body = tune::parse_json(response.body, tune::kMaxJsonDepth, &why);
  tune::fuzz::check(body.is_object() && body.contains("error") && body["error"].is_string(),
                    "error body without an error: " + response.body);
  const std::string message = body["error"].get<std::string>();
  tune::fuzz::check(message.find('\n') == std::string::npos && message.find('\r') == std::string::npos,
                    "a multi-line error: " + message);
}

// The answers to `bytes` arriving in pieces of `piece` bytes, as the loop
// gives them: "<status> <body>" each; the connection closes after an error
// the parser finds, or a refusal it cannot read past.
std::vector<std::string> converse(const std::string& bytes, size_t piece) {
  std::vector<std::string> answers;
  RequestParser parser(fuzz_limits());
  bool head_checked = false;
  bool refused = false;
  auto answer = [&](const HttpResponse& response) {
    check_answer(response);
    answers.push_back(std::to_string(response.status) + " " + response.body);
  };
  for (size_t at = 0; at < bytes.size();) {
    size_t size = std::min(piece, bytes.size() - at);
    bool had_head = parser.head_complete();
    size_t used = parser.feed(bytes.data() + at, size);
    tune::fuzz::check(used <= size, "the parser used more bytes than it was given");
    at += used;
    if (parser.state() == RequestParser::State::kFailed) {
      answer(error_response(parser.error().status, parser.error().message));
      return answers;
    }
    if (parser.head_complete() && !head_checked) {
      head_checked = true;
      if (auto refusal = routes.refuse(parser.request())) {
        answer(*refusal);
        if (!reads_past_refused_body(parser.request())) return answers;
        refused = true;
        parser.discard_body();
      }
    }
    if (parser.state() == RequestParser::State::kComplete) {
      if (!refused) {
        HttpRequest request = parser.take_request();
        // GET /metrics counts every request this process answered, those of
        // the other conversation too: its status is compared, not its body.
        const bool counters = request.path == "/metrics";
        HttpResponse response = routes.answer(std::move(request));
        check_answer(response);
        answers.push_back(std::to_string(response.status) + " " +
                          (counters && response.status == 200 ? std::string("(the counters)") : response.body));
      }
      parser.reset();
      head_checked = refused = false;
    } else {
      bool head_ended = !had_head && parser.head_complete();
      tune::fuzz::check(used == size || head_ended, "the parser stopped early in an unfinished request");
    }
  }
  return answers;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 64;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  tune::fuzz::accept_errors([&] {
    std::vector<std::string> whole = converse(bytes, bytes.size() + 1);
    std::vector<std::string> pieces = converse(bytes, piece);
    tune::fuzz::check(whole == pieces, "the answers depend on how the bytes arrive (pieces of " +
                                           std::to_string(piece) + ")");
  });
  return 0;
}
