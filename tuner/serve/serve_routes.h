// Internal to `tune serve`: what each request is answered (serve.h lists the
// routes and their errors). The connection loop (serve_loop.h) asks refuse()
// as soon as a request's head is read, so that a request without the token,
// to an unknown route or with the wrong method is answered before its body
// is read, and hands whole requests to answer() on a worker thread.
#pragma once

#include <optional>
#include <string>

#include "tuner/serve/serve.h"
#include "tuner/serve/serve_http.h"
#include "tuner/serve/serve_metrics.h"

namespace tune::serve_detail {

// Throws ConfigError (one line) when `model` cannot be served: no name, a
// name that cannot be part of a URL, no predict, metadata not an object.
void validate_model(const ServedModel& model);

// {"error": "<message on one line>"} with `status`.
HttpResponse error_response(int status, const std::string& message);

// Whether the body of a request refused from its head is read past (and
// dropped) so that the connection serves the next request: a Content-Length
// of at most 64 KiB, no 100-continue (that client sends none). Otherwise the
// connection closes after the refusal. Decided from the head alone, so the
// same bytes get the same answers however they arrive.
bool reads_past_refused_body(const HttpRequest& head);

class Routes {
 public:
  // `model` must have passed validate_model(). Keeps a reference to `metrics`.
  Routes(ServedModel model, const ServeOptions& options, Metrics& metrics);

  Route classify(const std::string& path) const;
  // An answer from the head alone (401 without the token, 404, 405, 411,
  // 415), or nullopt: read the body and call answer(). Thread safe.
  std::optional<HttpResponse> refuse(const HttpRequest& head) const;
  // The answer to a whole request that refuse() let through. Never throws:
  // the model's errors are a 400 (ConfigError) or a 500. Thread safe as the
  // model's predict is.
  HttpResponse answer(const HttpRequest& request) const;

 private:
  bool authorized(const HttpRequest& head, Route route) const;
  HttpResponse not_found(const HttpRequest& head) const;
  HttpResponse predict(const std::string& body) const;

  ServedModel model_;
  std::string token_;
  size_t max_instances_;
  std::string metadata_body_;
  std::string metadata_path_;  // /v1/models/<name>
  std::string predict_path_;   // /v1/models/<name>:predict
  Metrics& metrics_;
};

}  // namespace tune::serve_detail
