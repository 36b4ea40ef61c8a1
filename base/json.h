// The JSON type every tune component uses for configs, results and options.
//
//   tune::Json config = {{"lr", 0.01}, {"model", {{"width", 64}}}};
//
// nlohmann::json: objects keep their keys sorted (std::map), numbers keep
// their integer/float kind.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>

#include "base/error.h"

namespace tune {

using Json = nlohmann::json;

// `value` as the integer type T. What a peer or a store holds may be a float
// or out of T's range where tune wrote an integer; nlohmann's get<T>() would
// convert that with undefined behaviour, this throws Error instead.
template <class T>
T json_integer(const Json& value) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  bool fits = false;
  if (value.is_number_unsigned()) {
    fits = value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  } else if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    fits = v < 0 ? std::is_signed_v<T> && v >= static_cast<int64_t>(std::numeric_limits<T>::min())
                 : static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  }
  if (!fits) throw Error("expected an integer in range, got " + value.dump());
  return value.get<T>();
}

// `object[key]` as T where `object` is an object holding `key` with a value
// of T's kind (a number for arithmetic T, a string for std::string, the same
// kind for Json); `fallback` otherwise. For details tune wrote itself but a
// hand-edited store may hold anything: nlohmann's value() would throw a
// type_error there.
//
//   const int attempt = json_field(event.detail, "attempt", 0);
template <class T>
T json_field(const Json& object, std::string_view key, T fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  if constexpr (std::is_same_v<T, Json>) {
    return it->type() == fallback.type() || fallback.is_null() ? *it : fallback;
  } else if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->template get<bool>() : fallback;
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) return fallback;
    try {
      return json_integer<T>(*it);
    } catch (const Error&) {
      return fallback;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    return it->is_number() ? it->template get<T>() : fallback;
  } else {
    static_assert(std::is_same_v<T, std::string>, "json_field: a number, bool, std::string or Json");
    return it->is_string() ? it->template get<std::string>() : fallback;
  }
}

// How deep JSON from outside tune may nest. Every value tune reads from a
// program, a worker, an HTTP client, a file or a store column is parsed with
// parse_json: nlohmann builds values iteratively, but copies and destroys
// them recursively, so a 60,000-deep array would overflow the stack of
// whichever thread touched it next.
inline constexpr int kMaxJsonDepth = 128;

// Parses `text`; returns a discarded value (is_discarded()) when it is not
// JSON, holds a NUL byte (nlohmann would take it for the end and drop what
// follows) or opens more than `max_depth` arrays or objects at once (`[[1]]`
// is 2 deep, `1` is 0), and then says which in `*why` (one line: "nested
// deeper than 128 levels", "a NUL byte at offset 11 (JSON has none)", "parse
// error at line 1, column 9: ...", "number overflow parsing '1e400'") when
// `why` is given. Never throws for bad input.
// The stream form reads `in` to its end first (bound its size yourself).
//
//   Json value = parse_json(line, kMaxJsonDepth, &why);
//   if (value.is_discarded()) fail("not JSON: " + why);
Json parse_json(std::string_view text, int max_depth = kMaxJsonDepth, std::string* why = nullptr);
Json parse_json(std::istream& in, int max_depth = kMaxJsonDepth, std::string* why = nullptr);

// What a JSON file written outside tune's control may hold (a checkpoint's
// state.json).
inline constexpr size_t kMaxJsonFileBytes = size_t{1} << 30;

// The JSON in the file at `path`, parsed as parse_json does; discarded (and
// `*why` says so) if it cannot be read, is not a regular file, holds more
// than `max_bytes` or is not JSON.
Json read_json_file(const std::string& path, size_t max_bytes = kMaxJsonFileBytes, int max_depth = kMaxJsonDepth,
                    std::string* why = nullptr);

// value.dump() with invalid UTF-8 replaced by U+FFFD (what the store
// writes), the same text apart from how a float is spelt: the shortest one
// that reads back to the same double (std::to_chars), always with a '.' or an
// exponent so that it reads back as a float; NaN and infinities as null, as
// nlohmann writes them. Every JSON column of the store is written so: on a
// result's metrics it takes 5.5k instructions against nlohmann's 8.1k
// (plain ASCII strings are copied whole).
std::string dump_json(const Json& value);

// `text` for a one-line message or a store's text column: control bytes and
// DEL written as JSON strings write them (\n, \t, \u0000, \u007f),
// everything else as it is; longer than `max_bytes`, cut there with "...".
//
//   throw Error("the program printed `" + one_line(line, 80) + "`, ...");
std::string one_line(std::string_view text, size_t max_bytes = std::string::npos);

}  // namespace tune
