// The JSON type every tune component uses for configs, results and options.
//
//   tune::Json config = {{"lr", 0.01}, {"model", {{"width", 64}}}};
//
// nlohmann::json: objects keep their keys sorted (std::map), numbers keep
// their integer/float kind.
#pragma once

#include <nlohmann/json.hpp>

namespace tune {

using Json = nlohmann::json;

}  // namespace tune
