// Internal: pull a few numbers out of a JSON object's text without building a
// tree. A report reads one metric from a million results; nlohmann::json
// would allocate every key and value of every row.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tune::storage_internal {

// For each keys[k], sets out[k] to the value of that top-level key in the
// object `text` when it is a JSON number, else NaN (missing, null, a string,
// an object...). A key given twice in the text: the last one counts.
// Returns false, leaving `out` unspecified, when `text` is not an object
// (its structure, strings and literals are checked; numbers only where asked
// for) or a key in it uses escapes; the caller then parses it properly.
bool scan_numbers(std::string_view text, const std::vector<std::string>& keys, double* out);

}  // namespace tune::storage_internal
