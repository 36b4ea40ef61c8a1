// Internal to `tune serve`: HTTP/1.1 messages (RFC 9112) without sockets.
// RequestParser reads one request after another from a connection's bytes,
// as they arrive, with every part bounded (request line, header fields and
// their count, body) and the framing rules strict: a request that cannot be
// framed without guessing (two Content-Lengths, Content-Length beside
// Transfer-Encoding, a folded header line) is an error, after which the
// connection closes. serialize() writes a response.
//
//   RequestParser parser(limits);
//   size_t used = parser.feed(bytes.data(), bytes.size());   // stops at the head's end
//   if (parser.state() == RequestParser::State::kFailed) answer(parser.error()), close;
//   if (parser.head_complete()) ... parser.request().method, path, headers ...
//   parser.feed(bytes.data() + used, ...);                    // the body; the rest is the next request's
//   if (parser.state() == RequestParser::State::kComplete) ... parser.request().body ...
//   parser.reset();                                           // the next request
//
// Pure and single-threaded; tests/fuzz/serve_http_fuzz.cpp drives it with
// the routes behind it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tune::serve_detail {

struct HttpLimits {
  size_t max_request_line = 8192;   // longer: 414
  size_t max_header_bytes = 16384;  // the header fields together (and a chunked body's trailer): 431
  size_t max_header_fields = 100;   // more: 431
  uint64_t max_body_bytes = uint64_t{8} << 20;  // a chunked body growing past it: 413
};

using HeaderFields = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // as sent (methods are case-sensitive)
  std::string target;  // as sent
  std::string path;    // the target's path, %-decoded, without the query
  int minor_version = 1;       // HTTP/1.<minor_version>: 0 or 1
  HeaderFields headers;        // in order; names as sent
  std::optional<uint64_t> content_length;
  bool chunked = false;          // Transfer-Encoding: chunked
  bool expect_continue = false;  // Expect: 100-continue (HTTP/1.1)
  bool keep_alive = true;        // from the version and Connection
  std::string body;              // decoded (chunks joined); empty while discarding

  // The first field named `name` (any case); nullptr if none.
  const std::string* header(std::string_view name) const;
  size_t count(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  HeaderFields headers;  // more fields (Allow, WWW-Authenticate, Retry-After...)
  std::string body;
  bool close = false;  // the connection closes after it
};

// "HTTP/1.1 <status> <reason>", Content-Type, Content-Length, `headers`,
// "Connection: close" when `response.close` (else "Connection: keep-alive"
// when `keep_alive_header`, for HTTP/1.0 clients), then the body unless
// `head_only` (a HEAD request: the same headers, no body).
std::string serialize(const HttpResponse& response, bool head_only = false, bool keep_alive_header = false);
// The standard reason phrase of `status` ("Not Found"); "Unknown" for others.
const char* reason_phrase(int status);

// Why a request could not be read: its status (400, 408, 413, 414, 417, 431,
// 501, 505) and a one-line message.
struct HttpError {
  int status = 400;
  std::string message;
};

class RequestParser {
 public:
  enum class State {
    kHead,      // reading the request line and header fields
    kBody,      // the head is complete; reading the body
    kComplete,  // a whole request: request() is it
    kFailed,    // error() says why; the connection must close
  };

  explicit RequestParser(HttpLimits limits);

  // Reads what it can of `size` bytes and returns how many it used: all of
  // them, or fewer when the head completes (so that it is judged before any
  // byte of the body is read, whatever the bytes' arrival: the same bytes
  // give the same answers), when the request completes (the rest begins the
  // next one) or when it fails. Call it again with the rest, or more bytes,
  // while state() is kHead or kBody.
  size_t feed(const char* data, size_t size);
  State state() const { return state_; }
  // Whether request() has its method, path and header fields (kBody or kComplete).
  bool head_complete() const { return state_ == State::kBody || state_ == State::kComplete; }
  // Whether any byte of the current request has been read.
  bool started() const { return started_; }
  const HttpRequest& request() const { return request_; }
  // Moves the request out (state() kComplete); request() is empty after it.
  HttpRequest take_request() { return std::move(request_); }
  const HttpError& error() const { return error_; }
  // Body bytes not yet read when the length is known (0 for chunked).
  uint64_t body_left() const { return state_ == State::kBody && !request_.chunked ? left_ : 0; }
  // The body's bytes are read but dropped from here on (a refused request's
  // small body, read past to keep the connection).
  void discard_body() { discard_ = true; }
  // Forgets the request, for the next one on the same connection.
  void reset();

 private:
  enum class Chunk { kSize, kData, kDataEnd, kTrailer };
  enum class Line { kPartial, kWhole, kTooLong };

  size_t feed_head(const char* data, size_t size);
  size_t feed_body(const char* data, size_t size);
  size_t feed_chunked(const char* data, size_t size);
  // Takes bytes up to the next '\n' into line_ (`used`: how many); kWhole
  // when the line is there (its "\r\n" or "\n" dropped), kTooLong as soon as
  // it passes `limit` bytes.
  Line take_line(const char* data, size_t size, size_t limit, size_t& used);
  bool head_line(std::string_view line);
  bool request_line(std::string_view line);
  bool header_line(std::string_view line);
  bool finish_head();
  bool chunk_size_line(std::string_view line);
  void append_body(const char* data, size_t size);
  bool fail(int status, std::string message);

  HttpLimits limits_;
  State state_ = State::kHead;
  HttpRequest request_;
  HttpError error_;
  std::string line_;          // the line being read
  size_t header_bytes_ = 0;   // of the header fields (or trailer) so far
  size_t line_limit_ = 0;     // what line_ may grow to before the error
  bool started_ = false;
  bool discard_ = false;
  uint64_t left_ = 0;         // body bytes (or chunk bytes) still to read
  uint64_t body_bytes_ = 0;   // body bytes read, kept or not
  Chunk chunk_ = Chunk::kSize;
};

}  // namespace tune::serve_detail
