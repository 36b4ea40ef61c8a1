// Internal: one `@tune {json}` line a command trainable's program printed,
// as the result it reports (tuner/exec/command_trainable.h has the contract).
//
//   Json metrics = parse_result_line(R"({"loss": 0.5, "acc": NaN})");
//   // {"loss": 0.5, "acc": NaN}: Python's json.dumps writes NaN, Infinity
//   // and -Infinity, which JSON lacks; they are read as those numbers
#pragma once

#include <string_view>

#include "base/json.h"

namespace tune::internal {

// How deep a result may nest: half of what protocol frames and stores take
// (kMaxJsonDepth), so that a result wrapped in a message always passes them.
inline constexpr int kMaxResultDepth = 64;

// The text after "@tune " as a JSON object. Throws Error, one line that
// quotes the start of the text (control bytes escaped) and says why: not
// JSON (with nlohmann's reason: "syntax error ...", "number overflow parsing
// '1e400'"), nested deeper than kMaxResultDepth, or not an object.
Json parse_result_line(std::string_view text);

}  // namespace tune::internal
