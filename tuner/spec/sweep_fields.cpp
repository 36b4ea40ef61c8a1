#include "tuner/spec/sweep_fields.h"

#include <limits>

#include "base/error.h"
#include "base/json.h"

namespace tune::internal {
namespace {

constexpr double kMaxInt = std::numeric_limits<int>::max();

template <class T>
T integer_from(const Json& value, const std::string& path) {
  try {
    return json_integer<T>(value);
  } catch (const Error&) {
    throw ConfigError("invalid sweep spec JSON: \"" + path + "\" is not an integer in range: " + value.dump());
  }
}

}  // namespace

const std::vector<SweepField>& sweep_fields() {
  // clang-format off
  static const std::vector<SweepField> fields = {
    {"", "num_samples", [](SweepSpec& s) -> SweepField::Member { return &s.num_samples; }, 1, kMaxInt, false, "a positive integer", {}},
    {"", "max_concurrent_trials", [](SweepSpec& s) -> SweepField::Member { return &s.max_concurrent_trials; }, 0, kMaxInt, false, "a non-negative integer", {}},
    {"resources", "workers", [](SweepSpec& s) -> SweepField::Member { return &s.resources.workers; }, 1, kMaxInt, false, "a positive integer", {}},
    {"resources", "cpus_per_worker", [](SweepSpec& s) -> SweepField::Member { return &s.resources.cpus_per_worker; }, 1, kMaxInt, false, "a positive integer", {}},
    {"resources", "use_mpi", [](SweepSpec& s) -> SweepField::Member { return &s.resources.use_mpi; }, 0, 0, false, "", {}},
    {"resources", "gpus_per_worker", [](SweepSpec& s) -> SweepField::Member { return &s.resources.gpus_per_worker; }, 0, kMaxInt, false, "a non-negative integer", {}},
    {"resources", "placement", [](SweepSpec& s) -> SweepField::Member { return &s.resources.placement; }, 0, 0, false, "", {"pack", "spread"}},
    {"stop", "training_iteration", [](SweepSpec& s) -> SweepField::Member { return &s.stop.training_iteration; }, 1, kMaxInt, false, "a positive integer", {}},
    {"stop", "time_budget_s", [](SweepSpec& s) -> SweepField::Member { return &s.stop.time_budget_s; }, 0, 0, true, "", {}},
    {"checkpoint", "num_to_keep", [](SweepSpec& s) -> SweepField::Member { return &s.checkpoint.num_to_keep; }, 0, kMaxInt, false, "a non-negative integer", {}},
    {"checkpoint", "score_attribute", [](SweepSpec& s) -> SweepField::Member { return &s.checkpoint.score_attribute; }, 0, 0, false, "", {}},
    {"checkpoint", "score_order", [](SweepSpec& s) -> SweepField::Member { return &s.checkpoint.score_order; }, 0, 0, false, "", {}},
    {"checkpoint", "shared_filesystem", [](SweepSpec& s) -> SweepField::Member { return &s.checkpoint.shared_filesystem; }, 0, 0, false, "", {}},
    {"failure", "max_failures", [](SweepSpec& s) -> SweepField::Member { return &s.failure.max_failures; }, -1, kMaxInt, false, "an integer >= -1", {}},
    {"failure", "result_timeout_s", [](SweepSpec& s) -> SweepField::Member { return &s.failure.result_timeout_s; }, 0, 0, true, "", {}},
    {"failure", "max_host_failures", [](SweepSpec& s) -> SweepField::Member { return &s.failure.max_host_failures; }, 1, kMaxInt, false, "a positive integer", {}},
    {"failure", "host_timeout_s", [](SweepSpec& s) -> SweepField::Member { return &s.failure.host_timeout_s; }, 2, 3600, false, "", {}},
    {"failure", "start_timeout_s", [](SweepSpec& s) -> SweepField::Member { return &s.failure.start_timeout_s; }, 2, 86400, false, "", {}},
    {"failure", "host_check_interval_s", [](SweepSpec& s) -> SweepField::Member { return &s.failure.host_check_interval_s; }, 1, 86400, false, "", {}},
  };
  // clang-format on
  return fields;
}

std::vector<std::string> sweep_field_keys(const std::string& section) {
  std::vector<std::string> keys;
  for (const SweepField& f : sweep_fields())
    if (f.section == section) keys.push_back(f.key);
  return keys;
}

void fields_to_json(const SweepSpec& spec, Json& json) {
  // The members are only read: the table's accessors are shared with the readers.
  SweepSpec& s = const_cast<SweepSpec&>(spec);
  for (const SweepField& f : sweep_fields()) {
    Json& out = f.section.empty() ? json : json[f.section];
    std::visit(
        [&](auto* member) {
          using T = std::decay_t<decltype(*member)>;
          if constexpr (std::is_same_v<T, std::optional<double>> || std::is_same_v<T, std::optional<int64_t>>) {
            out[f.key] = *member ? Json(**member) : Json();
          } else {
            out[f.key] = *member;
          }
        },
        f.member(s));
  }
}

void fields_from_json(const Json& json, SweepSpec& spec) {
  for (const SweepField& f : sweep_fields()) {
    const Json* in = &json;
    if (!f.section.empty()) {
      auto it = json.find(f.section);
      if (it == json.end() || !it->is_object()) continue;
      in = &*it;
    }
    auto it = in->find(f.key);
    if (it == in->end()) continue;
    const Json& value = *it;
    std::visit(
        [&](auto* member) {
          using T = std::decay_t<decltype(*member)>;
          if constexpr (std::is_same_v<T, std::optional<double>>) {
            *member = value.is_null() ? std::nullopt : std::optional<double>(value.get<double>());
          } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
            *member = value.is_null() ? std::nullopt : std::optional<int64_t>(integer_from<int64_t>(value, f.path()));
          } else if (value.is_null()) {
            return;
          } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) {
            *member = integer_from<T>(value, f.path());
          } else {
            *member = value.get<T>();
          }
        },
        f.member(spec));
  }
}

}  // namespace tune::internal
