// Internal: YAML text -> an ordered JSON document plus where each key path is
// written, for the sweep-file loader. The only place tune reads YAML.
//
//   YamlDocument doc = parse_yaml_document(text, "sweep.yaml");
//   doc.root["param_space"]             // keys in file order
//   doc.lines.find("search.gamma")->value  // 1-based line of that value
//
// Built from yaml-cpp's event parser, not its node tree, so that hostile
// input stays bounded and linear: an alias that refers to a node containing
// it is refused (yaml-cpp's tree would be cyclic), expansion through aliases
// is capped in nodes, nesting in depth, the text in bytes. `<<` merge keys
// are supported. Scalars follow YAML 1.2's core schema: plain 42 -> integer,
// 1.5e-3 -> float, true/false -> bool, ~/null/empty -> null; quoted ones and
// everything else stay strings.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/json.h"

namespace tune::internal {

using OrderedJson = nlohmann::ordered_json;

struct YamlLimits {
  size_t max_bytes = size_t{16} << 20;  // the text
  int max_depth = 64;                   // nested mappings and lists
  size_t max_nodes = 1000000;           // values once aliases are expanded
};

// Where the keys and values of a document are written. Paths join mapping
// keys with '.' and list positions with [i]: "search.gamma",
// "points_to_evaluate[1].x0".
class SourceMap {
 public:
  struct Lines {
    int key = 0;    // the key's line (0 for list items and the root)
    int value = 0;  // the value's first line (the key's line for an empty value)
  };
  void record(const std::string& path, Lines lines) { lines_[path] = lines; }
  // The lines of `path`, or of its nearest recorded parent; nullptr if none.
  const Lines* find(const std::string& path) const;

 private:
  std::unordered_map<std::string, Lines> lines_;
};

struct YamlDocument {
  OrderedJson root;  // null for an empty document
  int root_line = 1;
  SourceMap lines;
};

// Parses the one YAML document in `text`. Throws ConfigError
// ("file:line: ...") for invalid YAML, a duplicate or non-string key, text
// that is not UTF-8, a recursive alias, a second document, or input beyond
// `limits`.
YamlDocument parse_yaml_document(const std::string& text, const std::string& file, const YamlLimits& limits = {});

// The file's text; ConfigError if it cannot be read or is over `max_bytes`.
std::string read_text_file(const std::string& path, size_t max_bytes);

// A document value as tune::Json (object keys sorted). Depth is bounded by
// the parse limits.
Json to_json(const OrderedJson& value);

// "a mapping", "a list", "'text'" or "nothing": how a value is named in
// messages ("must be a mapping, got a list").
std::string describe_kind(const OrderedJson& value);

}  // namespace tune::internal
