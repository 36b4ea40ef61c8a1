// Internal: the one table of SweepSpec's fixed scalar keys (the top-level
// counts, resources, stop's two criteria, checkpoint, failure). The sweep
// file reader (its key lists, ranges and defaults), SweepSpec::to_json and
// SweepSpec::from_json all walk it, so a new key is one row here plus its
// member and comment in sweep_spec.h. Defaults are the struct's own (a
// default-constructed SweepSpec); no reader writes one of its own.
//
//   for (const SweepField& f : sweep_fields()) if (f.section == "failure") ...
//   std::visit([](auto* member) { ... }, field.member(spec));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tuner/spec/sweep_spec.h"

namespace tune::internal {

struct SweepField {
  using Member = std::variant<int*, int64_t*, bool*, double*, std::string*, std::optional<double>*,
                              std::optional<int64_t>*>;
  std::string section;  // "" (top level), "resources", "stop", "checkpoint" or "failure"
  std::string key;
  Member (*member)(SweepSpec& spec);
  // What the file may hold (numbers and integers; a string with `choices`
  // must be one of them). `exclusive_min`: greater than `min`, not equal.
  double min = 0, max = 0;
  bool exclusive_min = false;
  std::string says;  // "a positive integer": the error's wording for an integer
  std::vector<std::string> choices;

  std::string path() const { return section.empty() ? key : section + "." + key; }
};

const std::vector<SweepField>& sweep_fields();
// The keys of one section, in the table's order (its "valid keys").
std::vector<std::string> sweep_field_keys(const std::string& section);

// The table's members of `spec` into `json` (sections as nested objects;
// an unset optional is null) and back (missing or null keys keep their
// values; a wrong type or an integer out of range throws ConfigError).
void fields_to_json(const SweepSpec& spec, Json& json);
void fields_from_json(const Json& json, SweepSpec& spec);

}  // namespace tune::internal
