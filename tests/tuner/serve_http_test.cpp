// HTTP/1.1 requests read from bytes and responses written
// (tuner/serve/serve_http.h), without sockets.
#include "tuner/serve/serve_http.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tune::serve_detail {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using State = RequestParser::State;

HttpLimits small_limits() {
  HttpLimits limits;
  limits.max_request_line = 64;
  limits.max_header_bytes = 128;
  limits.max_header_fields = 4;
  limits.max_body_bytes = 100;
  return limits;
}

// Feeds `bytes` (again after the head) until the request completes or
// fails; the parser and how many bytes it used.
struct Parsed {
  RequestParser parser;
  size_t used = 0;
};
Parsed parse(const std::string& bytes, HttpLimits limits = HttpLimits{}) {
  Parsed parsed{RequestParser(limits)};
  RequestParser& parser = parsed.parser;
  while (parsed.used < bytes.size() &&
         (parser.state() == State::kHead || parser.state() == State::kBody)) {
    parsed.used += parser.feed(bytes.data() + parsed.used, bytes.size() - parsed.used);
  }
  return parsed;
}

// The error status of `bytes` (0 when they parse).
int status_of(const std::string& bytes, HttpLimits limits = HttpLimits{}) {
  Parsed parsed = parse(bytes, limits);
  return parsed.parser.state() == State::kFailed ? parsed.parser.error().status : 0;
}

TEST(ServeHttp, ARequestReadByteByByteIsTheSameAsReadWhole) {
  const std::string bytes =
      "POST /v1/models/m:predict?x=1 HTTP/1.1\r\nHost: h\r\nContent-Type:  application/json \r\n"
      "Content-Length: 5\r\n\r\nhello";
  Parsed whole = parse(bytes);
  EXPECT_EQ(whole.used, bytes.size());
  RequestParser bytewise(HttpLimits{});
  for (char c : bytes) ASSERT_EQ(bytewise.feed(&c, 1), 1u);
  for (const RequestParser* parser : {&whole.parser, &bytewise}) {
    ASSERT_EQ(parser->state(), State::kComplete);
    const HttpRequest& request = parser->request();
    EXPECT_EQ(request.method, "POST");
    EXPECT_EQ(request.target, "/v1/models/m:predict?x=1");
    EXPECT_EQ(request.path, "/v1/models/m:predict");
    ASSERT_NE(request.header("content-type"), nullptr);
    EXPECT_EQ(*request.header("content-type"), "application/json");
    EXPECT_EQ(request.content_length, 5u);
    EXPECT_EQ(request.body, "hello");
    EXPECT_TRUE(request.keep_alive);
  }
}

TEST(ServeHttp, AFedRequestStopsAtItsEndAndTheNextFollowsAfterReset) {
  const std::string first = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";
  const std::string second = "GET /b HTTP/1.1\r\nHost: h\r\n\r\n";
  const std::string both = first + second;
  RequestParser parser(HttpLimits{});
  size_t used = parser.feed(both.data(), both.size());
  EXPECT_EQ(used, first.size());
  EXPECT_EQ(parser.request().path, "/a");
  parser.reset();
  EXPECT_FALSE(parser.started());
  EXPECT_EQ(parser.feed(both.data() + used, both.size() - used), second.size());
  EXPECT_EQ(parser.state(), State::kComplete);
  EXPECT_EQ(parser.request().path, "/b");
}

TEST(ServeHttp, AChunkedBodyIsJoinedAndItsTrailerSkipped) {
  const std::string bytes =
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n"
      "3\r\nabc\r\n10;name=value\r\n0123456789abcdef\r\n0\r\nTrailer: x\r\n\r\nNEXT";
  Parsed parsed = parse(bytes);
  ASSERT_EQ(parsed.parser.state(), State::kComplete);
  EXPECT_TRUE(parsed.parser.request().chunked);
  EXPECT_EQ(parsed.parser.request().body, "abc0123456789abcdef");
  EXPECT_EQ(parsed.used, bytes.size() - 4);  // "NEXT" is the next request's
}

TEST(ServeHttp, FeedingStopsAtTheEndOfTheHeadSoThatItIsJudgedBeforeTheBody) {
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string bytes = head + "1\r\nab\r\n";  // a chunk longer than its size
  RequestParser parser(HttpLimits{});
  EXPECT_EQ(parser.feed(bytes.data(), bytes.size()), head.size());
  EXPECT_EQ(parser.state(), State::kBody);
  parser.feed(bytes.data() + head.size(), bytes.size() - head.size());
  EXPECT_EQ(parser.state(), State::kFailed);
}

TEST(ServeHttp, DiscardingABodyReadsItWithoutKeepingIt) {
  const std::string bytes = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nbody";
  RequestParser parser(HttpLimits{});
  size_t used = parser.feed(bytes.data(), bytes.size() - 4);
  ASSERT_EQ(parser.state(), State::kBody);
  EXPECT_EQ(parser.body_left(), 4u);
  parser.discard_body();
  parser.feed(bytes.data() + used, 4);
  EXPECT_EQ(parser.state(), State::kComplete);
  EXPECT_EQ(parser.request().body, "");
}

TEST(ServeHttp, KeepAliveFollowsTheVersionAndConnection) {
  auto keep_alive = [](const std::string& version, const std::string& connection) {
    Parsed parsed = parse("GET / " + version + "\r\nHost: h\r\n" + connection + "\r\n");
    EXPECT_EQ(parsed.parser.state(), State::kComplete) << version << " " << connection;
    return parsed.parser.request().keep_alive;
  };
  EXPECT_TRUE(keep_alive("HTTP/1.1", ""));
  EXPECT_FALSE(keep_alive("HTTP/1.1", "Connection: Close\r\n"));
  EXPECT_FALSE(keep_alive("HTTP/1.1", "Connection: upgrade, close\r\n"));
  EXPECT_FALSE(keep_alive("HTTP/1.0", ""));
  EXPECT_TRUE(keep_alive("HTTP/1.0", "Connection: keep-alive\r\n"));
}

TEST(ServeHttp, TargetsInAbsoluteFormAndEscapesGiveThePath) {
  EXPECT_EQ(parse("GET http://host:8/v1/x%3Ay?q HTTP/1.1\r\nHost: h\r\n\r\n").parser.request().path, "/v1/x:y");
  EXPECT_EQ(parse("GET https://host HTTP/1.1\r\nHost: h\r\n\r\n").parser.request().path, "/");
  EXPECT_EQ(parse("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n").parser.request().path, "*");
  EXPECT_EQ(status_of("GET /a%zz HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /a%00 HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET ftp://h/ HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET * HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
}

TEST(ServeHttp, EveryPartOfTheHeadIsBounded) {
  const HttpLimits limits = small_limits();
  EXPECT_EQ(status_of("GET /" + std::string(64, 'a') + " HTTP/1.1\r\n", limits), 414);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: " + std::string(200, 'a'), limits), 431);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", limits), 431);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits), 0);
  // Without a newline the line stops growing at its limit.
  Parsed endless = parse("GET /" + std::string(10000, 'a'), limits);
  EXPECT_EQ(endless.parser.state(), State::kFailed);
  EXPECT_LE(endless.used, 70u);
}

TEST(ServeHttp, BodiesOverTheLimitAre413) {
  const HttpLimits limits = small_limits();
  Parsed declared = parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\n\r\n", limits);
  EXPECT_EQ(declared.parser.error().status, 413);
  EXPECT_EQ(declared.parser.error().message, "the body has 101 bytes: at most 100");
  std::string chunked = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(status_of(chunked + "64\r\n" + std::string(100, 'a') + "\r\n1\r\n", limits), 413);
  EXPECT_EQ(status_of(chunked + "ffffffffffffffffff\r\n", limits), 413);
  EXPECT_EQ(status_of(chunked + "64\r\n" + std::string(100, 'a') + "\r\n0\r\n\r\n", limits), 0);
}

TEST(ServeHttp, AmbiguousFramingIsRefused) {
  const std::string get = "GET / HTTP/1.1\r\n";
  EXPECT_EQ(status_of(get + "Host: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx"), 400);
  EXPECT_EQ(status_of(get + "Host: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(status_of(get + "Host: h\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(status_of(get + "Host: h\r\nContent-Length: 1 2\r\n\r\n"), 400);
  EXPECT_EQ(status_of(get + "Host: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(status_of("GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(status_of(get + "Host: h\r\n continued\r\n\r\n"), 400);
  EXPECT_EQ(status_of(get + "Host : h\r\n\r\n"), 400);
  EXPECT_EQ(status_of(get + "Host: h\rX: y\r\n\r\n"), 400);
  EXPECT_EQ(status_of(get + "Host: a\x01\r\n\r\n"), 400);
  EXPECT_EQ(status_of(get + "\r\n"), 400);                   // no Host
  EXPECT_EQ(status_of(get + "Host: a\r\nHost: b\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"), 400);
}

TEST(ServeHttp, RequestLinesThatAreNotHttp11Or10AreRefused) {
  EXPECT_EQ(status_of("GET / HTTP/2.0\r\n"), 505);
  EXPECT_EQ(status_of("GET / HTTP/1.1 extra\r\n"), 400);
  EXPECT_EQ(status_of("GET  / HTTP/1.1\r\n"), 400);
  EXPECT_EQ(status_of("G(T / HTTP/1.1\r\n"), 400);
  EXPECT_EQ(status_of("GET / http/1.1\r\n"), 400);
  EXPECT_EQ(status_of("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"), 0);  // empty lines before it are ignored
  Parsed lf_only = parse("GET / HTTP/1.1\nHost: h\n\n");
  EXPECT_EQ(lf_only.parser.state(), State::kComplete);
}

TEST(ServeHttp, OnlyExpect100ContinueIsUnderstood) {
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n";
  Parsed expecting = parse(head + "Expect: 100-Continue\r\n\r\n");
  EXPECT_TRUE(expecting.parser.request().expect_continue);
  EXPECT_EQ(status_of(head + "Expect: something\r\n\r\n"), 417);
}

TEST(ServeHttp, AResponseSaysItsLengthAndCloseOnce) {
  HttpResponse response;
  response.status = 404;
  response.body = R"({"error":"x"})";
  response.headers.emplace_back("Allow", "GET");
  response.close = true;
  std::string text = serialize(response);
  EXPECT_EQ(text,
            "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 13\r\nAllow: GET\r\n"
            "Connection: close\r\n\r\n{\"error\":\"x\"}");
  std::string head = serialize(response, /*head_only=*/true);
  EXPECT_THAT(head, EndsWith("Connection: close\r\n\r\n"));
  response.close = false;
  EXPECT_THAT(serialize(response, false, /*keep_alive_header=*/true), HasSubstr("Connection: keep-alive\r\n"));
  EXPECT_THAT(serialize(response), Not(HasSubstr("Connection:")));
}

}  // namespace
}  // namespace tune::serve_detail
