#include "search/search_space.h"

#include <algorithm>
#include <limits>
#include <set>

#include "base/error.h"

namespace tune {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

bool is_prefix(const std::string& prefix, const std::string& path) {
  return path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 && path[prefix.size()] == '.';
}

bool is_domain_name(const std::string& key) {
  const auto& names = domain_names();
  return std::find(names.begin(), names.end(), key) != names.end();
}

std::string join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}


}  // namespace

// Throws if `path` is malformed or overlaps a path already in the space: two
// parameters "a" and "a.b" could not both be set in one nested config.
// O(depth log n) with the sorted index of used paths.
void SearchSpace::check_new_path(const std::string& path) const {
  const std::vector<std::string> parts = split_path(path);
  for (const auto& part : parts)
    if (part.empty()) throw ConfigError("invalid parameter path '" + path + "'");
  if (used_.count(path)) throw ConfigError("duplicate parameter '" + path + "'");
  std::string prefix;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {  // an existing "a" under a new "a.b"
    prefix = join(prefix, parts[i]);
    if (used_.count(prefix)) throw ConfigError("parameter '" + path + "' overlaps parameter '" + prefix + "'");
  }
  auto below = used_.lower_bound(path + ".");  // an existing "a.b" under a new "a"
  if (below != used_.end() && is_prefix(path, *below))
    throw ConfigError("parameter '" + path + "' overlaps parameter '" + *below + "'");
}

SearchSpace& SearchSpace::add(const std::string& path, Domain domain) {
  check_new_path(path);
  domain.validate();
  used_.insert(path);
  parameters_.push_back({path, std::move(domain)});
  return *this;
}

SearchSpace& SearchSpace::constant(const std::string& path, Json value) {
  check_new_path(path);
  used_.insert(path);
  constants_.emplace_back(path, std::move(value));
  return *this;
}

int64_t SearchSpace::grid_size() const {
  int64_t size = 1;
  for (const auto& p : parameters_) {
    if (p.domain.kind != Domain::Kind::kGrid) continue;
    auto n = static_cast<int64_t>(p.domain.values.size());
    if (n > 0 && size > std::numeric_limits<int64_t>::max() / n)
      throw ConfigError("the grid_search parameters have too many combinations");
    size *= n;
  }
  return size;
}

template <class Rng>
Json SearchSpace::resolve(int64_t grid_index, Rng& rng, const Json& fixed) const {
  if (!fixed.is_object() && !fixed.is_null()) throw ConfigError("a fixed config must be an object, got " + fixed.dump());
  const int64_t size = grid_size();
  if (grid_index < 0 || grid_index >= size)
    throw Error("grid index " + std::to_string(grid_index) + " out of range [0, " + std::to_string(size) + ")");

  // Mixed-radix digits of grid_index, the last grid parameter varying fastest.
  std::vector<size_t> digit(parameters_.size(), 0);
  for (size_t i = parameters_.size(); i-- > 0;) {
    const Domain& d = parameters_[i].domain;
    if (d.kind != Domain::Kind::kGrid) continue;
    auto n = static_cast<int64_t>(d.values.size());
    digit[i] = static_cast<size_t>(grid_index % n);
    grid_index /= n;
  }

  Json config = Json::object();
  for (const auto& [path, value] : constants_) set_path(config, path, value);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const Parameter& p = parameters_[i];
    if (fixed.is_object() && find_path(fixed, p.path)) continue;  // set by the overlay below
    set_path(config, p.path,
             p.domain.kind == Domain::Kind::kGrid ? p.domain.values[digit[i]] : p.domain.sample(rng));
  }
  if (fixed.is_object()) {
    const Json overlay = flatten(fixed);
    for (const auto& [path, value] : overlay.items()) set_path(config, path, value);
  }
  return config;
}

template Json SearchSpace::resolve(int64_t, std::mt19937_64&, const Json&) const;
template Json SearchSpace::resolve(int64_t, SplitMix64&, const Json&) const;

namespace {

void parse_json(SearchSpace& space, const Json& object, const std::string& prefix) {
  for (const auto& [key, value] : object.items()) {
    const std::string path = join(prefix, key);
    if (value.is_object() && value.size() == 1 && is_domain_name(value.begin().key())) {
      space.add(path, make_domain(value.begin().key(), value.begin().value()));
    } else if (value.is_object() && !value.empty()) {
      parse_json(space, value, path);
    } else {
      space.constant(path, value);
    }
  }
}

}  // namespace

// A list rather than an object: nlohmann::json objects sort their keys, and the
// declaration order decides the grid order and the seeded sample stream.
//   [{"path": "lr", "domain": {"loguniform": [1e-5, 0.1]}}, {"path": "epochs", "constant": 3}]
Json SearchSpace::to_json() const {
  Json out = Json::array();
  for (const auto& p : parameters_) out.push_back({{"path", p.path}, {"domain", p.domain.to_json()}});
  for (const auto& [path, value] : constants_) out.push_back({{"path", path}, {"constant", value}});
  return out;
}

// Also accepts the nested object form ({"lr": {"loguniform": [..]}, "model": {...}}),
// in which case parameters are declared in key order.
SearchSpace SearchSpace::from_json(const Json& json) {
  SearchSpace space;
  if (json.is_object()) {
    parse_json(space, json, "");
    return space;
  }
  if (!json.is_array()) throw ConfigError("a search space must be a JSON array or object, got " + json.dump());
  for (const auto& entry : json) {
    if (!entry.is_object() || !entry.contains("path") || !entry["path"].is_string())
      throw ConfigError("invalid search space entry " + entry.dump());
    const std::string path = entry["path"].get<std::string>();
    if (entry.contains("domain")) {
      const Json& d = entry["domain"];
      if (!d.is_object() || d.size() != 1) throw ConfigError("invalid domain for '" + path + "': " + d.dump());
      space.add(path, make_domain(d.begin().key(), d.begin().value()));
    } else if (entry.contains("constant")) {
      space.constant(path, entry["constant"]);
    } else {
      throw ConfigError("search space entry for '" + path + "' has neither domain nor constant");
    }
  }
  return space;
}

void set_path(Json& object, const std::string& path, Json value) {
  Json* node = &object;
  for (const auto& part : split_path(path)) {
    if (node->is_null()) *node = Json::object();
    if (!node->is_object()) throw ConfigError("cannot set '" + path + "': '" + part + "' is inside a non-object value");
    node = &(*node)[part];
  }
  *node = std::move(value);
}

const Json* find_path(const Json& object, const std::string& path) {
  const Json* node = &object;
  for (const auto& part : split_path(path)) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(part);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

namespace {
void flatten_into(const Json& value, const std::string& prefix, Json& out) {
  if (value.is_object() && (!value.empty() || prefix.empty())) {
    for (const auto& [key, child] : value.items()) flatten_into(child, join(prefix, key), out);
  } else {
    out[prefix] = value;
  }
}
}  // namespace

Json flatten(const Json& object) {
  if (!object.is_object()) return object;
  Json out = Json::object();
  flatten_into(object, "", out);
  return out;
}

}  // namespace tune
