// The JSON type every tune component uses for configs, results and options.
//
//   tune::Json config = {{"lr", 0.01}, {"model", {{"width", 64}}}};
//
// nlohmann::json: objects keep their keys sorted (std::map), numbers keep
// their integer/float kind.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
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

}  // namespace tune
