#include "tuner/serve/serve_http.h"

#include <algorithm>
#include <cstring>

namespace tune::serve_detail {
namespace {

constexpr size_t kMaxChunkSizeLine = 1024;  // hex digits and chunk extensions

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return lower(x) == lower(y);
         });
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out;
}

// RFC 9110 tchar: what a method or a field name is made of.
bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool is_token(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_token_char);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_control(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

std::string_view trim(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = lower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// The path of an origin-form or absolute-form target, %-decoded; nullopt if
// the target is neither or has a bad escape.
std::optional<std::string> target_path(std::string_view target, const std::string& method) {
  if (target == "*") return method == "OPTIONS" ? std::optional<std::string>("*") : std::nullopt;
  if (target.empty() || target[0] != '/') {
    size_t scheme_end = target.find("://");
    if (scheme_end == std::string_view::npos ||
        !(equal_ignoring_case(target.substr(0, scheme_end), "http") ||
          equal_ignoring_case(target.substr(0, scheme_end), "https"))) {
      return std::nullopt;
    }
    size_t path = target.find_first_of("/?", scheme_end + 3);
    target = path == std::string_view::npos ? std::string_view("/") : target.substr(path);
    if (target[0] == '?') return std::string("/");
  }
  target = target.substr(0, target.find('?'));
  std::string path;
  path.reserve(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] != '%') {
      path += target[i];
      continue;
    }
    int high = i + 2 < target.size() ? hex_value(target[i + 1]) : -1;
    int low = high >= 0 ? hex_value(target[i + 2]) : -1;
    if (low < 0 || (high == 0 && low == 0)) return std::nullopt;
    path += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return path;
}

}  // namespace

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [field, value] : headers) {
    if (equal_ignoring_case(field, name)) return &value;
  }
  return nullptr;
}

size_t HttpRequest::count(std::string_view name) const {
  return static_cast<size_t>(std::count_if(headers.begin(), headers.end(), [&](const auto& field) {
    return equal_ignoring_case(field.first, name);
  }));
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string serialize(const HttpResponse& response, bool head_only, bool keep_alive_header) {
  std::string out;
  out.reserve(160 + response.body.size());
  out += "HTTP/1.1 " + std::to_string(response.status) + " " + reason_phrase(response.status) + "\r\n";
  if (!response.content_type.empty()) out += "Content-Type: " + response.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
  if (response.close) {
    out += "Connection: close\r\n";
  } else if (keep_alive_header) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
  if (!head_only) out += response.body;
  return out;
}

RequestParser::RequestParser(HttpLimits limits) : limits_(limits) {}

void RequestParser::reset() {
  state_ = State::kHead;
  request_ = HttpRequest{};
  error_ = HttpError{};
  line_.clear();
  header_bytes_ = 0;
  started_ = false;
  discard_ = false;
  left_ = 0;
  body_bytes_ = 0;
  chunk_ = Chunk::kSize;
}

bool RequestParser::fail(int status, std::string message) {
  state_ = State::kFailed;
  error_ = HttpError{status, std::move(message)};
  return false;
}

size_t RequestParser::feed(const char* data, size_t size) {
  size_t used = 0;
  if (size > 0) started_ = true;
  while (used < size && (state_ == State::kHead || state_ == State::kBody)) {
    if (state_ == State::kBody) {
      used += feed_body(data + used, size - used);
      continue;
    }
    used += feed_head(data + used, size - used);
    if (state_ != State::kHead) break;  // the caller judges the head before a byte of the body is read
  }
  return used;
}

RequestParser::Line RequestParser::take_line(const char* data, size_t size, size_t limit, size_t& used) {
  const size_t room = limit + 2 - std::min(limit + 2, line_.size());  // the line, a '\r' and the '\n'
  const size_t window = std::min(size, room);
  const void* newline = std::memchr(data, '\n', window);
  if (newline == nullptr) {
    used = window;
    line_.append(data, used);
    bool too_long = line_.size() > limit + 1 || (line_.size() == limit + 1 && line_.back() != '\r');
    return too_long ? Line::kTooLong : Line::kPartial;
  }
  used = static_cast<size_t>(static_cast<const char*>(newline) - data) + 1;
  line_.append(data, used - 1);
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  return line_.size() > limit ? Line::kTooLong : Line::kWhole;
}

size_t RequestParser::feed_head(const char* data, size_t size) {
  const bool first = request_.method.empty();
  const size_t limit = first ? limits_.max_request_line : limits_.max_header_bytes - std::min(limits_.max_header_bytes, header_bytes_);
  size_t used = 0;
  Line line = take_line(data, size, limit, used);
  if (line == Line::kTooLong) {
    if (first) {
      fail(414, "the request line exceeds " + std::to_string(limits_.max_request_line) + " bytes");
    } else {
      fail(431, "the request's header fields exceed " + std::to_string(limits_.max_header_bytes) + " bytes");
    }
  } else if (line == Line::kWhole) {
    std::string text = std::move(line_);
    line_.clear();
    if (text.find('\r') != std::string::npos) {
      fail(400, "a bare CR in the request's head");
    } else {
      head_line(text);
    }
  }
  return used;
}

bool RequestParser::head_line(std::string_view line) {
  if (request_.method.empty()) {
    if (line.empty()) return true;  // an empty line before the request line is ignored (RFC 9112 2.2)
    return request_line(line);
  }
  if (line.empty()) return finish_head();
  header_bytes_ += line.size() + 2;
  return header_line(line);
}

bool RequestParser::request_line(std::string_view line) {
  const char* usage = "malformed request line: send METHOD /path HTTP/1.1";
  size_t first = line.find(' ');
  size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos || line.find(' ', second + 1) != std::string_view::npos) return fail(400, usage);
  std::string_view method = line.substr(0, first);
  std::string_view target = line.substr(first + 1, second - first - 1);
  std::string_view version = line.substr(second + 1);
  if (!is_token(method) || target.empty() || std::any_of(target.begin(), target.end(), is_control)) {
    return fail(400, usage);
  }
  if (version == "HTTP/1.1" || version == "HTTP/1.0") {
    request_.minor_version = version.back() - '0';
  } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && is_digit(version[5]) && version[6] == '.' &&
             is_digit(version[7])) {
    return fail(505, std::string(version) + " is not supported: send HTTP/1.1");
  } else {
    return fail(400, usage);
  }
  request_.method = std::string(method);
  request_.target = std::string(target);
  std::optional<std::string> path = target_path(target, request_.method);
  if (!path) return fail(400, "malformed request target: send a path such as /v1/models/NAME, %-escapes valid");
  request_.path = std::move(*path);
  return true;
}

bool RequestParser::header_line(std::string_view line) {
  if (line[0] == ' ' || line[0] == '\t') return fail(400, "a folded header line (obs-fold): send each field on one line");
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
    return fail(400, "malformed header field: send Name: value, no space before the colon");
  }
  std::string_view value = trim(line.substr(colon + 1));
  if (std::any_of(value.begin(), value.end(), [](char c) { return c != '\t' && is_control(c); })) {
    return fail(400, "a header field's value has a control character");
  }
  if (request_.headers.size() >= limits_.max_header_fields) {
    return fail(431, "the request has more than " + std::to_string(limits_.max_header_fields) + " header fields");
  }
  request_.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  return true;
}

bool RequestParser::finish_head() {
  HttpRequest& r = request_;
  size_t hosts = r.count("Host");
  if (hosts > 1 || (r.minor_version == 1 && hosts == 0)) return fail(400, "an HTTP/1.1 request needs one Host header");
  size_t lengths = r.count("Content-Length");
  if (lengths > 1) return fail(400, "the request has " + std::to_string(lengths) + " Content-Length headers: send one");
  if (const std::string* length = r.header("Content-Length")) {
    if (length->empty() || length->size() > 18 || !std::all_of(length->begin(), length->end(), is_digit)) {
      return fail(400, "Content-Length is not a number of bytes");
    }
    r.content_length = std::stoull(*length);
  }
  if (const std::string* encoding = r.header("Transfer-Encoding")) {
    if (r.content_length) return fail(400, "the request has both Content-Length and Transfer-Encoding: send one");
    if (r.minor_version == 0) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (r.count("Transfer-Encoding") > 1 || !equal_ignoring_case(*encoding, "chunked")) {
      return fail(501, "Transfer-Encoding other than chunked is not supported: send chunked or Content-Length");
    }
    r.chunked = true;
  }
  if (r.content_length && *r.content_length > limits_.max_body_bytes) {
    return fail(413, "the body has " + std::to_string(*r.content_length) + " bytes: at most " +
                         std::to_string(limits_.max_body_bytes));
  }
  if (const std::string* expect = r.header("Expect"); expect && r.minor_version == 1) {
    if (r.count("Expect") > 1 || !equal_ignoring_case(*expect, "100-continue")) {
      return fail(417, "only Expect: 100-continue is supported");
    }
    r.expect_continue = true;
  }
  bool close = false;
  bool keep_alive = false;
  for (const auto& [name, value] : r.headers) {
    if (!equal_ignoring_case(name, "Connection")) continue;
    std::string options = lowercase(value);
    for (size_t begin = 0; begin <= options.size();) {
      size_t end = std::min(options.find(',', begin), options.size());
      std::string_view option = trim(std::string_view(options).substr(begin, end - begin));
      close = close || option == "close";
      keep_alive = keep_alive || option == "keep-alive";
      begin = end + 1;
    }
  }
  r.keep_alive = !close && (r.minor_version == 1 || keep_alive);
  left_ = r.content_length.value_or(0);
  state_ = r.chunked || left_ > 0 ? State::kBody : State::kComplete;
  return true;
}

void RequestParser::append_body(const char* data, size_t size) {
  body_bytes_ += size;
  if (!discard_) request_.body.append(data, size);
}

size_t RequestParser::feed_body(const char* data, size_t size) {
  if (request_.chunked) return feed_chunked(data, size);
  size_t take = static_cast<size_t>(std::min<uint64_t>(size, left_));
  append_body(data, take);
  left_ -= take;
  if (left_ == 0) state_ = State::kComplete;
  return take;
}

size_t RequestParser::feed_chunked(const char* data, size_t size) {
  size_t used = 0;
  if (chunk_ == Chunk::kData) {
    used = static_cast<size_t>(std::min<uint64_t>(size, left_));
    append_body(data, used);
    left_ -= used;
    if (left_ == 0) chunk_ = Chunk::kDataEnd;
    return used;
  }
  size_t limit = chunk_ == Chunk::kSize      ? kMaxChunkSizeLine
                 : chunk_ == Chunk::kDataEnd ? 0
                                             : limits_.max_header_bytes - std::min(limits_.max_header_bytes, header_bytes_);
  Line taken = take_line(data, size, limit, used);
  if (taken == Line::kTooLong) {
    if (chunk_ == Chunk::kTrailer) {
      fail(431, "the body's trailer exceeds " + std::to_string(limits_.max_header_bytes) + " bytes");
    } else {
      fail(400, chunk_ == Chunk::kSize ? "malformed chunk size line" : "a chunk is longer than its size");
    }
    return used;
  }
  if (taken == Line::kPartial) return used;
  std::string line = std::move(line_);
  line_.clear();
  if (chunk_ == Chunk::kSize) {
    chunk_size_line(line);
  } else if (chunk_ == Chunk::kDataEnd) {
    chunk_ = Chunk::kSize;
  } else if (line.empty()) {
    state_ = State::kComplete;
  } else {
    header_bytes_ += line.size() + 2;  // a trailer field: bounded, otherwise ignored
  }
  return used;
}

bool RequestParser::chunk_size_line(std::string_view line) {
  size_t digits = 0;
  uint64_t chunk = 0;
  while (digits < line.size() && hex_value(line[digits]) >= 0) {
    if (digits == 15) return fail(413, "the body has more than " + std::to_string(limits_.max_body_bytes) + " bytes");
    chunk = chunk * 16 + static_cast<uint64_t>(hex_value(line[digits]));
    ++digits;
  }
  std::string_view rest = trim(line.substr(digits));
  if (digits == 0 || !(rest.empty() || rest[0] == ';')) return fail(400, "malformed chunk size line");
  if (chunk > limits_.max_body_bytes - std::min(limits_.max_body_bytes, body_bytes_)) {
    return fail(413, "the body has more than " + std::to_string(limits_.max_body_bytes) + " bytes");
  }
  left_ = chunk;
  chunk_ = chunk == 0 ? Chunk::kTrailer : Chunk::kData;
  header_bytes_ = 0;
  return true;
}

}  // namespace tune::serve_detail
