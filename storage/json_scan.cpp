// A single pass over an object's text: keys compared raw, values skipped by
// their first character (strings and nested containers respect escapes).
#include "storage/internal/json_scan.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace tune::storage_internal {
namespace {

bool ends_scalar(char c) {
  return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

class Cursor {
 public:
  explicit Cursor(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\t' || *p_ == '\r')) ++p_;
  }
  bool at_end() const { return p_ >= end_; }
  char peek() const { return p_ < end_ ? *p_ : '\0'; }
  bool eat(char c) {
    skip_space();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }

  // A string's raw contents (between the quotes); `escaped` says whether a
  // backslash occurs in it. The cursor must be on the opening quote.
  bool string(std::string_view* contents, bool* escaped) {
    if (peek() != '"') return false;
    const char* start = ++p_;
    *escaped = false;
    // Most strings hold no backslash: find the closing quote at once.
    const void* quote = std::memchr(p_, '"', static_cast<size_t>(end_ - p_));
    if (quote && !std::memchr(p_, '\\', static_cast<size_t>(static_cast<const char*>(quote) - p_))) {
      p_ = static_cast<const char*>(quote);
      *contents = std::string_view(start, static_cast<size_t>(p_ - start));
      ++p_;
      return true;
    }
    while (p_ < end_ && *p_ != '"') {
      if (*p_ == '\\') {
        *escaped = true;
        if (++p_ >= end_) return false;
      }
      ++p_;
    }
    if (p_ >= end_) return false;
    *contents = std::string_view(start, static_cast<size_t>(p_ - start));
    ++p_;
    return true;
  }

  // Skips any value; with `number`, sets it to the value when that is a
  // number, else NaN (unwanted numbers are not parsed).
  bool value(double* number) {
    skip_space();
    if (number) *number = NAN;
    const char c = peek();
    if (c == '"') {
      std::string_view ignored;
      bool escaped;
      return string(&ignored, &escaped);
    }
    if (c == '{' || c == '[') return container();
    const char* start = p_;
    while (p_ < end_ && !ends_scalar(*p_)) ++p_;
    if (p_ == start) return false;
    if (c == '-' || (c >= '0' && c <= '9')) {
      if (!number) return true;
      double parsed;
      auto [at, error] = std::from_chars(start, p_, parsed);
      if (error != std::errc() || at != p_) return false;
      *number = parsed;
      return true;
    }
    const std::string_view word(start, static_cast<size_t>(p_ - start));
    return word == "null" || word == "true" || word == "false";
  }

 private:
  // Nested objects and arrays only need their extent.
  bool container() {
    int depth = 0;
    while (p_ < end_) {
      const char c = *p_;
      if (c == '"') {
        std::string_view ignored;
        bool escaped;
        if (!string(&ignored, &escaped)) return false;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) {
          ++p_;
          return true;
        }
      }
      ++p_;
    }
    return false;
  }

  const char* p_;
  const char* end_;
};

}  // namespace

bool scan_numbers(std::string_view text, const std::vector<std::string>& keys, double* out) {
  for (size_t k = 0; k < keys.size(); ++k) out[k] = NAN;
  Cursor cursor(text);
  if (!cursor.eat('{')) return false;
  if (cursor.eat('}')) {
    cursor.skip_space();
    return cursor.at_end();
  }
  do {
    cursor.skip_space();
    std::string_view key;
    bool escaped;
    if (!cursor.string(&key, &escaped) || escaped || !cursor.eat(':')) return false;
    size_t wanted = keys.size();
    for (size_t k = 0; k < keys.size(); ++k) {
      if (keys[k] == key) wanted = k;
    }
    if (!cursor.value(wanted < keys.size() ? &out[wanted] : nullptr)) return false;
    // A key asked for twice gets the value too.
    for (size_t k = 0; k < wanted; ++k) {
      if (keys[k] == key) out[k] = out[wanted];
    }
  } while (cursor.eat(','));
  if (!cursor.eat('}')) return false;
  cursor.skip_space();
  return cursor.at_end();
}

}  // namespace tune::storage_internal
