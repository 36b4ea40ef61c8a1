// What `tune serve` answers (tuner/serve/serve_routes.cpp) against a fake
// model, over real sockets on 127.0.0.1 only. The server's lifecycle is in
// serve_lifecycle_test.cpp, HTTP framing in serve_protocol_test.cpp.
#include "tuner/serve/serve.h"

#include <atomic>
#include <chrono>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "base/error.h"
#include "serve_test_util.h"

namespace tune {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace serve_testing;

// Prometheus text: "name{labels}" -> value, failing the test on a line that does not parse.
std::map<std::string, double> parse_metrics(const std::string& text) {
  static const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})?) (\S+)$)");
  std::map<std::string, double> samples;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::smatch match;
    EXPECT_TRUE(std::regex_match(line, match, sample)) << line;
    if (!match.empty()) samples[match[1]] = std::stod(match[3] == "+Inf" ? "inf" : match[3].str());
  }
  return samples;
}

TEST(Serve, PredictAnswersEachInstanceInOrder) {
  RunningServer running;
  httplib::Client client = running.client();
  auto result = predict(client, R"({"instances": [{"a": 1, "b": 2}, {"a": 10}, {"a": -1, "b": 0.5}]})");
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(Json::parse(result->body), Json::parse(R"({"predictions": [3.0, 10.0, -0.5]})"));
}

TEST(Serve, MetadataNamesTheModelAndSaysItIsAvailable) {
  RunningServer running;
  httplib::Client client = running.client();
  auto result = client.Get("/v1/models/iris");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
  Json metadata = Json::parse(result->body);
  EXPECT_EQ(metadata["name"], "iris");
  EXPECT_EQ(metadata["version"], "1");
  EXPECT_EQ(metadata["state"], "AVAILABLE");
  EXPECT_EQ(metadata["trial"], 7);
  EXPECT_EQ(metadata["features"], Json({"a", "b"}));
}

TEST(Serve, HealthzAnswersOk) {
  RunningServer running;
  httplib::Client client = running.client();
  auto result = client.Get("/healthz");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(Json::parse(result->body), Json({{"status", "ok"}}));
}

TEST(Serve, MetricsCountRequestsInstancesAndDurations) {
  RunningServer running;
  httplib::Client client = running.client();
  ASSERT_EQ(predict(client, R"({"instances": [{"a": 1}]})")->status, 200);
  ASSERT_EQ(predict(client, R"({"instances": [{"a": 1}, {"b": 2}]})")->status, 200);
  ASSERT_EQ(predict(client, R"({"instances": []})")->status, 400);

  auto result = client.Get("/metrics");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
  EXPECT_THAT(result->get_header_value("Content-Type"), StartsWith("text/plain; version=0.0.4"));
  std::map<std::string, double> metrics = parse_metrics(result->body);
  EXPECT_EQ(metrics[R"(tune_serve_requests_total{route="predict",code="200"})"], 2);
  EXPECT_EQ(metrics[R"(tune_serve_requests_total{route="predict",code="400"})"], 1);
  EXPECT_EQ(metrics["tune_serve_instances_total"], 3);
  EXPECT_EQ(metrics["tune_serve_in_flight"], 1);  // this request
  EXPECT_EQ(metrics[R"(tune_serve_request_duration_seconds_count{route="predict"})"], 3);
  EXPECT_EQ(metrics[R"(tune_serve_request_duration_seconds_bucket{route="predict",le="+Inf"})"], 3);
  EXPECT_LE(metrics[R"(tune_serve_request_duration_seconds_bucket{route="predict",le="0.0001"})"],
            metrics[R"(tune_serve_request_duration_seconds_bucket{route="predict",le="10"})"]);
  EXPECT_GT(metrics[R"(tune_serve_request_duration_seconds_sum{route="predict"})"], 0);

  metrics = parse_metrics(client.Get("/metrics")->body);
  EXPECT_EQ(metrics[R"(tune_serve_requests_total{route="metrics",code="200"})"], 1);
}

TEST(Serve, MalformedJsonIsA400ThatSaysWhere) {
  RunningServer running;
  httplib::Client client = running.client();
  auto result = predict(client, R"({"instances": [{"a": 1},})");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
  EXPECT_THAT(error_of(result), StartsWith("malformed JSON at byte 25: "));
}

TEST(Serve, MissingOrNonArrayOrEmptyInstancesAreA400) {
  RunningServer running;
  httplib::Client client = running.client();
  auto missing = predict(client, R"({"inputs": [{"a": 1}]})");
  EXPECT_EQ(missing->status, 400);
  EXPECT_THAT(error_of(missing), HasSubstr("no \"instances\""));
  auto object = predict(client, R"({"instances": {"a": 1}})");
  EXPECT_EQ(object->status, 400);
  EXPECT_THAT(error_of(object), HasSubstr("\"instances\" is an object, not an array"));
  auto empty = predict(client, R"({"instances": []})");
  EXPECT_EQ(empty->status, 400);
  EXPECT_THAT(error_of(empty), HasSubstr("\"instances\" is empty"));
  auto scalar = predict(client, R"({"instances": [{"a": 1}, 5]})");
  EXPECT_EQ(scalar->status, 400);
  EXPECT_THAT(error_of(scalar), HasSubstr("instances[1] is a number"));
  auto array_body = predict(client, R"([{"a": 1}])");
  EXPECT_EQ(array_body->status, 400);
  EXPECT_THAT(error_of(array_body), HasSubstr("the body is an array, not a JSON object"));
}

TEST(Serve, AConfigErrorFromTheModelIsA400WithItsMessage) {
  RunningServer running;
  httplib::Client client = running.client();
  expect_error(predict(client, R"({"instances": [{"a": "setosa"}]})"), 400, "feature 'a' is a string, not a number");
}

TEST(Serve, MoreInstancesThanTheLimitAreA400) {
  ServeOptions options = loopback_options();
  options.max_instances = 2;
  RunningServer running(fake_model(), options);
  httplib::Client client = running.client();
  expect_error(predict(client, R"({"instances": [{"a": 1}, {"a": 2}, {"a": 3}]})"), 400,
               "3 instances in one request: at most 2");
}

TEST(Serve, AnUnknownModelOrRouteIsA404) {
  RunningServer running;
  httplib::Client client = running.client();
  auto model = predict(client, R"({"instances": [{"a": 1}]})", "mnist");
  ASSERT_TRUE(model);
  EXPECT_EQ(model->status, 404);
  EXPECT_EQ(error_of(model), "no model named 'mnist': this server serves 'iris'");
  auto metadata = client.Get("/v1/models/mnist");
  EXPECT_EQ(metadata->status, 404);
  auto route = client.Get("/nothing/here");
  EXPECT_EQ(route->status, 404);
  EXPECT_THAT(error_of(route), StartsWith("no route GET /nothing/here"));
}

TEST(Serve, AWrongMethodIsA405) {
  RunningServer running;
  httplib::Client client = running.client();
  auto get_predict = client.Get("/v1/models/iris:predict");
  ASSERT_TRUE(get_predict);
  EXPECT_EQ(get_predict->status, 405);
  EXPECT_EQ(get_predict->get_header_value("Allow"), "POST");
  EXPECT_THAT(error_of(get_predict), HasSubstr("use POST"));
  auto post_metadata = client.Post("/v1/models/iris", "{}", "application/json");
  EXPECT_EQ(post_metadata->status, 405);
  auto delete_health = client.Delete("/healthz");
  EXPECT_EQ(delete_health->status, 405);
}

TEST(Serve, ABodyOverTheLimitIsA413AndTheServerGoesOn) {
  ServeOptions options = loopback_options();
  options.max_body_bytes = 1024;
  RunningServer running(fake_model(), options);
  httplib::Client client = running.client();
  std::string body = R"({"instances": [{"a": 1}], "padding": ")";
  body += std::string(1024 + 1 - body.size() - 2, 'x') + "\"}";
  ASSERT_EQ(body.size(), 1025u);
  auto result = predict(client, body);
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 413);
  EXPECT_EQ(error_of(result), "the body has 1025 bytes: at most 1024");
  body.resize(1000);  // now malformed, but within the limit
  EXPECT_EQ(predict(client, body)->status, 400);
  EXPECT_EQ(predict(client, R"({"instances": [{"a": 1}]})")->status, 200);
}

TEST(Serve, AHugeDeclaredBodyIsRefusedBeforeItIsSent) {
  RunningServer running;
  std::string answer = raw_exchange(running.port(),
                                    "POST /v1/models/iris:predict HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                    "Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"
                                    "{\"instances\": [");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 413 "));
  EXPECT_THAT(answer, HasSubstr("Connection: close"));
  EXPECT_THAT(answer, HasSubstr("at most 8388608"));
  httplib::Client client = running.client();
  EXPECT_EQ(client.Get("/healthz")->status, 200);
}

TEST(Serve, AnExpectContinueOverTheLimitGetsA413InsteadOfContinue) {
  std::string answer = answer_of_new_server(
      "POST /v1/models/iris:predict HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Expect: 100-continue\r\nContent-Length: 1000000000\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 413 "));
}

TEST(Serve, ATokenIsNeededEverywhereButHealthz) {
  ServeOptions options = loopback_options();
  options.token = kTestToken;
  RunningServer running(fake_model(), options);
  httplib::Client client = running.client();
  const std::string body = R"({"instances": [{"a": 1}]})";

  auto without = predict(client, body);
  ASSERT_TRUE(without);
  EXPECT_EQ(without->status, 401);
  EXPECT_EQ(without->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_THAT(error_of(without), HasSubstr("Authorization: Bearer"));
  EXPECT_EQ(client.Get("/metrics")->status, 401);
  EXPECT_EQ(client.Get("/v1/models/iris")->status, 401);
  EXPECT_EQ(client.Get("/nothing")->status, 401);
  EXPECT_EQ(client.Get("/healthz")->status, 200);

  client.set_bearer_token_auth(std::string(kTestToken) + "x");
  EXPECT_EQ(predict(client, body)->status, 401);
  client.set_bearer_token_auth(std::string(kTestToken).substr(1));
  EXPECT_EQ(predict(client, body)->status, 401);
  client.set_bearer_token_auth(kTestToken);
  EXPECT_EQ(predict(client, body)->status, 200);
  EXPECT_EQ(client.Get("/metrics")->status, 200);
}

TEST(Serve, AModelExceptionIsA500AndTheServerKeepsServing) {
  RunningServer running;
  httplib::Client client = running.client();
  expect_error(predict(client, R"({"instances": [{"a": 666}]})"), 500, "internal error: the fake model crashed");
  auto after = predict(client, R"({"instances": [{"a": 2}]})");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(Json::parse(after->body)["predictions"][0], 2.0);
}

TEST(Serve, AModelAnsweringTheWrongNumberOfPredictionsIsA500) {
  ServedModel model = fake_model();
  model.predict = [](const Json&) { return Json::array({1, 2}); };
  RunningServer running(model);
  httplib::Client client = running.client();
  expect_error(predict(client, R"({"instances": [{"a": 1}]})"), 500,
               "internal error: the model answered 2 predictions for 1 instances");
}

TEST(Serve, ThirtyTwoConcurrentClientsGetTheirOwnAnswers) {
  constexpr int kClients = 32;
  constexpr int kRequests = 50;
  ServeOptions options = loopback_options();
  options.threads = 8;
  RunningServer running(fake_model(), options);
  std::atomic<int> correct{0};
  auto started = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      httplib::Client client = running.client();
      for (int r = 0; r < kRequests; ++r) {
        Json body = {{"instances", {{{"a", c}, {"b", r * 1000}}, {{"a", r}}}}};
        auto result = predict(client, body.dump());
        if (result && result->status == 200 &&
            Json::parse(result->body)["predictions"] == Json({c + r * 1000.0, r * 1.0})) {
          correct++;
        }
      }
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(correct.load(), kClients * kRequests);
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(30));
}

}  // namespace
}  // namespace tune
