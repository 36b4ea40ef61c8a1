// SearchSpace: a (possibly nested) configuration whose leaves are constants or
// Domains. A resolved config is a JSON object with the same nesting.
//
// Parameters are addressed by dotted paths ("model.width"). Grid parameters are
// expanded in declaration order, the first one varying slowest (Ray's order).
//
//   tune::SearchSpace space;
//   space.add("x", tune::uniform(-5, 10))
//        .add("opt", tune::grid_search({"sgd", "adam"}))
//        .constant("epochs", 3);
//   std::mt19937_64 rng(7);
//   tune::Json config = space.resolve(/*grid_index=*/1, rng);  // {"x": ..., "opt": "adam", "epochs": 3}
#pragma once

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "search/domain.h"

namespace tune {

struct Parameter {
  std::string path;  // dotted, e.g. "block.depth"
  Domain domain;
};

class SearchSpace {
 public:
  // Adds a sampled parameter. Throws ConfigError if `path` is already used or
  // the domain is invalid.
  SearchSpace& add(const std::string& path, Domain domain);
  // Adds a fixed value.
  SearchSpace& constant(const std::string& path, Json value);

  const std::vector<Parameter>& parameters() const { return parameters_; }
  const std::vector<std::pair<std::string, Json>>& constants() const { return constants_; }

  // Number of grid combinations (1 when there is no grid_search parameter).
  int64_t grid_size() const;

  // Builds one config: grid parameters take combination `grid_index`
  // (0 <= grid_index < grid_size()), other domains are sampled from `rng`.
  // Values present in `fixed` (a possibly nested, partial config such as a
  // points_to_evaluate entry) are taken as given. Rng: std::mt19937_64 or
  // SplitMix64 (search_space.cpp instantiates those two).
  template <class Rng>
  Json resolve(int64_t grid_index, Rng& rng, const Json& fixed = Json::object()) const;

  // Round trip through JSON ({"path": {"uniform": [a, b]}, ...}) for the store.
  Json to_json() const;
  static SearchSpace from_json(const Json& json);

 private:
  void check_new_path(const std::string& path) const;

  std::vector<Parameter> parameters_;
  std::vector<std::pair<std::string, Json>> constants_;
  std::set<std::string> used_;  // every path above, sorted: overlap checks in O(log n)
};

// Sets `value` at dotted `path` inside `object`, creating nested objects.
void set_path(Json& object, const std::string& path, Json value);
// Returns the value at dotted `path` or nullptr (a null Json) when absent.
const Json* find_path(const Json& object, const std::string& path);
// Flattens nested objects to {"a.b": v}.
Json flatten(const Json& object);

}  // namespace tune
