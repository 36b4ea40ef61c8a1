#include "base/json.h"

#include <istream>

namespace tune {
namespace {

struct TooDeep {};

template <class Input>
Json parse_bounded(Input&& input, int max_depth, std::string* why) {
  const Json::parser_callback_t limit = [max_depth](int depth, Json::parse_event_t, Json&) {
    if (depth > max_depth) throw TooDeep{};
    return true;
  };
  try {
    return Json::parse(std::forward<Input>(input), limit, /*allow_exceptions=*/true);
  } catch (const TooDeep&) {
    if (why) *why = "nested deeper than " + std::to_string(max_depth) + " levels";
  } catch (const Json::exception& e) {
    if (why) {
      // nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
      const std::string what = e.what();
      const auto at = what.find("] ");
      *why = at == std::string::npos ? what : what.substr(at + 2);
    }
  }
  return Json(Json::value_t::discarded);
}

}  // namespace

Json parse_json(std::string_view text, int max_depth, std::string* why) {
  return parse_bounded(text, max_depth, why);
}

Json parse_json(std::istream& in, int max_depth, std::string* why) { return parse_bounded(in, max_depth, why); }

}  // namespace tune
