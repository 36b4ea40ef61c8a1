// What `tune serve` answers to requests that are wrong at the HTTP level or
// in their JSON (issue 30, item 6), over raw sockets: every bad request is a
// 4xx with a one-line JSON error, and after a request the server cannot
// frame, the connection closes.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "serve_test_util.h"

namespace tune {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using namespace serve_testing;

const std::string kPredictHead = "POST /v1/models/iris:predict HTTP/1.1\r\nHost: 127.0.0.1\r\n";

std::string with_length(const std::string& body) {
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The JSON error of a raw HTTP answer ("" when there is none).
std::string error_in(const std::string& answer) {
  size_t body = answer.find("\r\n\r\n");
  if (body == std::string::npos) return "";
  Json parsed = Json::parse(answer.substr(body + 4), nullptr, /*allow_exceptions=*/false);
  return parsed.is_object() && parsed.contains("error") ? parsed["error"].get<std::string>() : "";
}

TEST(ServeProtocol, ANumberOutOfRangeIsA400NotA500) {
  RunningServer running;
  httplib::Client client = running.client();
  expect_error(predict(client, R"({"instances": [{"monthly_charges": 1e400}]})"), 400,
               "the body cannot be read as JSON: number overflow parsing '1e400'");
}

TEST(ServeProtocol, JsonNestedTooDeeplyIsA400) {
  RunningServer running;
  httplib::Client client = running.client();
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_error(predict(client, R"({"instances": [{"a": )" + deep + "}]}"), 400,
               "the body cannot be read as JSON: nested deeper than 128 levels");
  EXPECT_EQ(predict(client, R"({"instances": [{"a": 1}]})")->status, 200);
}

TEST(ServeProtocol, AMalformedRequestLineIsA400AndTheRestIsNotAnswered) {
  std::string answer = answer_of_new_server(
      "NOT AN HTTP REQUEST LINE\r\n\r\n"
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 400 "));
  EXPECT_EQ(count_of(answer, "HTTP/1.1 "), 1) << answer;
  EXPECT_EQ(count_of(answer, "Connection: close\r\n"), 1) << answer;
}

TEST(ServeProtocol, TwoDifferentContentLengthsAreA400) {
  RunningServer running;
  const std::string body = R"({"instances": [{"a": 1}]})";
  std::string answer = raw_exchange(running.port(), kPredictHead + "Content-Length: 2\r\n" + with_length(body));
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 400 "));
  EXPECT_EQ(count_of(answer, "HTTP/1.1 "), 1) << answer;
  EXPECT_EQ(error_in(answer), "the request has 2 Content-Length headers: send one");
}

TEST(ServeProtocol, ARefusedExpectContinueSaysConnectionCloseOnce) {
  ServeOptions options = loopback_options();
  options.token = kTestToken;
  RunningServer running(fake_model(), options);
  for (const char* length : {"1000000000", "25"}) {  // too large; no token
    for (const char* connection : {"", "Connection: close\r\n", "Connection: keep-alive\r\n"}) {
      std::string answer = raw_exchange(running.port(), kPredictHead + connection + "Expect: 100-continue\r\n" +
                                                            "Content-Length: " + length + "\r\n\r\n");
      EXPECT_THAT(answer, Not(HasSubstr("100 Continue")));
      EXPECT_THAT(answer, StartsWith("HTTP/1.1 4"));
      EXPECT_EQ(count_of(answer, "Connection: close\r\n"), 1) << answer;
    }
  }
}

TEST(ServeProtocol, TooManyHeadersAreA431) {
  RunningServer running;
  std::string headers;
  for (int i = 0; i < 200; ++i) headers += "X-Header-" + std::to_string(i) + ": v\r\n";
  std::string answer = raw_exchange(running.port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 431 "));
  EXPECT_EQ(error_in(answer), "the request has more than 100 header fields");
}

TEST(ServeProtocol, HeadersLargerThanTheLimitAreA431) {
  std::string answer =
      answer_of_new_server("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 431 "));
  EXPECT_EQ(error_in(answer), "the request's header fields exceed 16384 bytes");
}

TEST(ServeProtocol, PipelinedRequestsAreAnsweredInOrder) {
  RunningServer running;
  const std::string body = R"({"instances": [{"a": 4}]})";
  std::string answer =
      raw_exchange(running.port(), kPredictHead + with_length(body) + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" +
                                       "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(count_of(answer, "HTTP/1.1 200 OK\r\n"), 3) << answer;
  EXPECT_LT(answer.find("{\"predictions\":[4.0]}"), answer.find("{\"status\":\"ok\"}"));
  EXPECT_EQ(count_of(answer, "Connection: close\r\n"), 1) << answer;
}

TEST(ServeProtocol, AChunkedBodyIsRead) {
  std::string answer = answer_of_new_server(kPredictHead +
                                            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                            "e\r\n{\"instances\": \r\nB;ext=1\r\n[{\"a\": 5}]}\r\n"
                                            "0\r\nX-Trailer: t\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 "));
  EXPECT_THAT(answer, EndsWith("{\"predictions\":[5.0]}"));
}

TEST(ServeProtocol, ContentLengthWithTransferEncodingIsA400) {
  std::string answer = answer_of_new_server(kPredictHead + "Transfer-Encoding: chunked\r\n" + with_length("0\r\n\r\n"));
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 400 "));
  EXPECT_THAT(error_in(answer), HasSubstr("both Content-Length and Transfer-Encoding"));
}

TEST(ServeProtocol, AnHttp11RequestWithoutHostIsA400) {
  std::string answer = answer_of_new_server("GET /healthz HTTP/1.1\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 400 "));
  EXPECT_EQ(error_in(answer), "an HTTP/1.1 request needs one Host header");
}

TEST(ServeProtocol, HeadAnswersTheHeadersOfGet) {
  std::string answer = answer_of_new_server("HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 "));
  EXPECT_THAT(answer, HasSubstr("Content-Length: 15\r\n"));
  EXPECT_THAT(answer, EndsWith("\r\n\r\n"));
}

TEST(ServeProtocol, AnHttp10RequestIsAnsweredAndClosed) {
  std::string answer = answer_of_new_server("GET /healthz HTTP/1.0\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 "));
  EXPECT_THAT(answer, EndsWith("{\"status\":\"ok\"}"));
}

TEST(ServeProtocol, APercentEncodedPathIsDecoded) {
  RunningServer running;
  httplib::Client client = running.client();
  auto result = client.Get("/v1/models/iri%73");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
}

}  // namespace
}  // namespace tune
