#include "tuner/exec/result_line.h"

#include <cstring>
#include <limits>
#include <string>

#include "base/error.h"

namespace tune::internal {
namespace {

// NaN and the infinities become marker strings before parsing (outside
// strings only), then numbers again, wherever they are.
const char* const kNames[] = {"-Infinity", "Infinity", "NaN"};
const char* const kMarks[] = {"\"\\u0001-inf\"", "\"\\u0001inf\"", "\"\\u0001nan\""};

void unmark(Json& value) {
  if (value.is_structured()) {
    for (auto& item : value) unmark(item);  // depth bounded by the parse
  } else if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (s == "\x01nan") value = std::numeric_limits<double>::quiet_NaN();
    else if (s == "\x01inf") value = std::numeric_limits<double>::infinity();
    else if (s == "\x01-inf") value = -std::numeric_limits<double>::infinity();
  }
}

}  // namespace

Json parse_result_line(std::string_view text) {
  std::string clean;
  clean.reserve(text.size());
  bool in_string = false, marked = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      clean += c;
      if (c == '\\' && i + 1 < text.size()) clean += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (int k = 0; k < 3 && !replaced; ++k) {
      const size_t n = std::strlen(kNames[k]);
      if (text.compare(i, n, kNames[k]) == 0) {
        clean += kMarks[k];
        i += n - 1;
        replaced = marked = true;
      }
    }
    if (!replaced) clean += c;
  }
  std::string why;
  Json result = parse_json(clean, kMaxResultDepth, &why);
  const std::string shown = "the program printed `@tune " + one_line(text, 80) + "`, which ";
  const std::string expected = " (a result is one JSON object: @tune {\"loss\": 0.5})";
  if (result.is_discarded()) throw Error(shown + "tune cannot read: " + one_line(why) + expected);
  if (!result.is_object()) throw Error(shown + "is not a JSON object" + expected);
  if (marked) unmark(result);
  return result;
}

}  // namespace tune::internal
