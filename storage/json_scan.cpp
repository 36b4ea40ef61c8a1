// A single pass over an object's text: keys compared raw, values skipped by
// their first character (strings and nested containers respect escapes).
#include "storage/internal/json_scan.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace tune::storage_internal {
namespace {

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

  // Skips any value; *number is its value when it is a number, else NaN.
  bool value(double* number) {
    skip_space();
    *number = NAN;
    const char c = peek();
    if (c == '"') {
      std::string_view ignored;
      bool escaped;
      return string(&ignored, &escaped);
    }
    if (c == '{' || c == '[') return container();
    const char* start = p_;
    while (p_ < end_ && !std::strchr(",}] \n\t\r", *p_)) ++p_;
    if (p_ == start) return false;
    if (c == '-' || (c >= '0' && c <= '9')) {
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
    double number;
    if (!cursor.value(&number)) return false;
    for (size_t k = 0; k < keys.size(); ++k) {
      if (keys[k] == key) out[k] = number;
    }
  } while (cursor.eat(','));
  if (!cursor.eat('}')) return false;
  cursor.skip_space();
  return cursor.at_end();
}

}  // namespace tune::storage_internal
