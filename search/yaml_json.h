// Internal YAML -> JSON conversion shared by SearchSpace::from_yaml and the
// sweep file parser (not public API).
#pragma once

#include <string>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace tune::internal {

// Converts with YAML 1.2 core-schema type inference: plain scalars become
// int64, double, bool (true/false) or null (null, ~, empty); everything else,
// and every quoted scalar, stays a string. Mappings become objects.
nlohmann::json yaml_to_json(const YAML::Node& node);

// 1-based line of the node, or 0 when yaml-cpp has no position for it.
int yaml_line(const YAML::Node& node);

// "a mapping", "a list", "a scalar", "null": for "must be a mapping, got ...".
std::string yaml_kind(const YAML::Node& node);

// Compact one-line rendering of a JSON value for messages: strings unquoted.
std::string describe(const nlohmann::json& value);

}  // namespace tune::internal
