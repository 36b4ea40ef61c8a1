// The table of SweepSpec's scalar keys (tuner/spec/sweep_fields.h): every row
// is read from a sweep file, checked against its range at file:line, kept by
// the JSON round trip, and defaults to the struct's own value.
#include "tuner/spec/sweep_fields.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "base/error.h"
#include "tuner/spec/sweep_reader.h"

namespace tune::internal {
namespace {

// A value of the field's type other than its default, within its range, as
// YAML text and as the member's value (in JSON).
struct Sample {
  std::string yaml;
  Json value;
};

Sample other_value(const SweepField& f) {
  SweepSpec defaults;
  return std::visit(
      [&](auto* member) -> Sample {
        using T = std::decay_t<decltype(*member)>;
        if constexpr (std::is_same_v<T, bool>) {
          return {*member ? "false" : "true", !*member};
        } else if constexpr (std::is_same_v<T, std::string>) {
          const std::string v = !f.choices.empty() ? f.choices.back() : f.key == "score_order" ? "max" : "val_loss";
          return {v, v};
        } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t> ||
                             std::is_same_v<T, std::optional<int64_t>>) {
          const int64_t v = static_cast<int64_t>(f.min) + 3;
          return {std::to_string(v), v};
        } else {
          const double v = f.max > f.min ? (f.min + f.max) / 2 + 0.5 : f.min + 2.5;
          std::ostringstream text;
          text << v;
          return {text.str(), v};
        }
      },
      f.member(defaults));
}

const std::string kSweep = "trainable: branin\nparam_space:\n  x: {uniform: [0, 1]}\n";

std::string sweep_with(const SweepField& f, const std::string& value) {
  std::string text = kSweep;
  if (f.section.empty()) return text + f.key + ": " + value + "\n";
  return text + f.section + ":\n  " + f.key + ": " + value + "\n";
}

Json member_json(const SweepField& f, SweepSpec& spec) {
  Json j;
  fields_to_json(spec, j);
  return f.section.empty() ? j[f.key] : j[f.section][f.key];
}

TEST(SweepFields, EveryKeyIsReadFromAFileAndKeptByTheJsonRoundTrip) {
  std::set<std::string> paths;
  for (const SweepField& f : sweep_fields()) {
    SCOPED_TRACE(f.path());
    EXPECT_TRUE(paths.insert(f.path()).second) << "a key is in the table twice";
    const Sample sample = other_value(f);
    SweepSpec defaults;
    ASSERT_NE(member_json(f, defaults), sample.value) << "the sample must differ from the default";

    LoadedSweep loaded = read_sweep(sweep_with(f, sample.yaml), "sweep.yaml");
    EXPECT_EQ(member_json(f, loaded.spec), sample.value) << "read from the file";

    const SweepSpec back = SweepSpec::from_json(loaded.spec.to_json());
    SweepSpec copy = back;
    EXPECT_EQ(member_json(f, copy), sample.value) << "kept by to_json/from_json";

    // Absent from the file, the struct's default.
    LoadedSweep plain = read_sweep(kSweep, "sweep.yaml");
    EXPECT_EQ(member_json(f, plain.spec), member_json(f, defaults));
  }
  EXPECT_GE(paths.size(), 18u);
}

TEST(SweepFields, AValueOutsideItsRangeIsAnErrorAtItsLine) {
  int checked = 0;
  for (const SweepField& f : sweep_fields()) {
    SCOPED_TRACE(f.path());
    SweepSpec defaults;
    std::vector<std::string> bad;
    std::visit(
        [&](auto* member) {
          using T = std::decay_t<decltype(*member)>;
          if constexpr (std::is_same_v<T, bool>) {
            bad = {"3", "[1]"};
          } else if constexpr (std::is_same_v<T, std::string>) {
            bad = {"[a, b]"};
            if (!f.choices.empty()) bad.push_back("nowhere");
          } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t> ||
                               std::is_same_v<T, std::optional<int64_t>>) {
            bad = {std::to_string(static_cast<int64_t>(f.min) - 1), "2.5", "'x'",
                   std::to_string(static_cast<int64_t>(f.max) + 1)};
          } else {
            std::ostringstream below;
            below << f.min - (f.exclusive_min ? 0 : 1);
            bad = {below.str(), "'x'", ".nan"};
            if (f.max > f.min) {
              std::ostringstream above;
              above << f.max + 1;
              bad.push_back(above.str());
            }
          }
        },
        f.member(defaults));
    for (const std::string& value : bad) {
      SCOPED_TRACE(value);
      // The key sits on line 4 (top level) or 5 (in its section).
      const std::string line = f.section.empty() ? "sweep.yaml:4:" : "sweep.yaml:5:";
      try {
        LoadedSweep loaded = read_sweep(sweep_with(f, value), "sweep.yaml");
        ADD_FAILURE() << "accepted";
      } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.rfind(line, 0), 0u) << what;
        EXPECT_NE(what.find(f.key), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
        checked += 1;
      }
    }
  }
  EXPECT_GE(checked, 50);
}

TEST(SweepFields, EachSectionsValidKeysAreTheTables) {
  EXPECT_EQ(sweep_field_keys("failure"), (std::vector<std::string>{"max_failures", "result_timeout_s", "max_host_failures",
                                                                    "host_timeout_s", "start_timeout_s", "host_check_interval_s"}));
  try {
    read_sweep(kSweep + "failure:\n  max_host_failure: 3\n", "sweep.yaml");
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'max_host_failures'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tune::internal
