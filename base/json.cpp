#include "base/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <istream>
#include <iterator>

namespace tune {
namespace {

constexpr size_t kMaxWhy = 200;

// Why `text` is refused before parsing, or "": it opens more than
// `max_depth` arrays or objects at once, or holds a NUL byte (no JSON does,
// and nlohmann takes one for the end of the text, which would silently drop
// what follows). A linear scan that skips strings: for any text nlohmann
// accepts (valid JSON) it counts exactly, and it costs a fraction of the
// parse that follows (nlohmann's per-event callback costs about three times
// as much).
std::string refused(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\0') return "a NUL byte at offset " + std::to_string(i) + " (JSON has none)";
    if (in_string) {
      if (c == '\\') {
        if (i + 1 < text.size() && text[i + 1] == '\0') continue;  // reported above, next turn
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return "nested deeper than " + std::to_string(max_depth) + " levels";
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return "";
}

}  // namespace

Json parse_json(std::string_view text, int max_depth, std::string* why) {
  if (std::string reason = refused(text, max_depth); !reason.empty()) {
    if (why) *why = std::move(reason);
    return Json(Json::value_t::discarded);
  }
  try {
    return Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/true);
  } catch (const Json::exception& e) {
    if (why) {
      // nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
      const std::string what = e.what();
      const auto at = what.find("] ");
      *why = at == std::string::npos ? what : what.substr(at + 2);
      // "last read: '...'" quotes the offending token, which may be long.
      if (why->size() > kMaxWhy) *why = why->substr(0, kMaxWhy) + "...";
    }
  }
  return Json(Json::value_t::discarded);
}

Json parse_json(std::istream& in, int max_depth, std::string* why) {
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_json(text, max_depth, why);
}

Json read_json_file(const std::string& path, size_t max_bytes, int max_depth, std::string* why) {
  auto fail = [&](const std::string& reason) {
    if (why) *why = reason;
    return Json(Json::value_t::discarded);
  };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return fail(ec ? ec.message() : "not a regular file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return fail(ec.message());
  if (size > max_bytes) return fail("larger than " + std::to_string(max_bytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  std::string text;
  text.resize(size);
  if (!in.read(text.data(), static_cast<std::streamsize>(size))) return fail("cannot be read");
  return parse_json(text, max_depth, why);
}

std::string one_line(std::string_view text, size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  if (cut) {
    size_t end = max_bytes;  // not inside a UTF-8 sequence
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) --end;
    text = text.substr(0, end);
  }
  std::string out;
  out.reserve(text.size() + (cut ? 3 : 0));
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out += escaped;
    }
  }
  if (cut) out += "...";
  return out;
}

namespace {

void append_json_string(std::string& out, const std::string& text) {
  bool plain = true;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (!plain) {  // escapes and UTF-8 (checked, replaced where invalid): nlohmann's
    out += Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

template <class T>
void append_number(std::string& out, T value) {
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  out.append(buffer, end);
}

void append_json(std::string& out, const Json& value) {
  switch (value.type()) {
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : value.get_ref<const Json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, key);
        out += ':';
        append_json(out, member);
      }
      out += '}';
      return;
    }
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& item : value.get_ref<const Json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json(out, item);
      }
      out += ']';
      return;
    }
    case Json::value_t::string:
      append_json_string(out, value.get_ref<const std::string&>());
      return;
    case Json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::number_integer:
      append_number(out, value.get<int64_t>());
      return;
    case Json::value_t::number_unsigned:
      append_number(out, value.get<uint64_t>());
      return;
    case Json::value_t::number_float: {
      const double number = *value.get_ptr<const Json::number_float_t*>();
      if (!std::isfinite(number)) {
        out += "null";
        return;
      }
      char buffer[40];
      char* end = std::to_chars(buffer, buffer + 32, number).ptr;
      bool fraction = false;  // without '.' or 'e' it would read back as an integer
      for (const char* c = buffer; c < end && !fraction; ++c) fraction = *c == '.' || *c == 'e';
      if (!fraction) {
        *end++ = '.';
        *end++ = '0';
      }
      out.append(buffer, end);
      return;
    }
    case Json::value_t::null:
    case Json::value_t::discarded:
      out += "null";
      return;
    case Json::value_t::binary:
      out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
      return;
  }
}

}  // namespace

std::string dump_json(const Json& value) {
  std::string out;
  out.reserve(128);
  append_json(out, value);
  return out;
}

}  // namespace tune
