// The sweep file's param_space syntax: domains, nesting, constants, YAML 1.2
// scalars, and errors at the parameter's line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "base/error.h"
#include "tuner/spec/sweep_reader.h"

namespace tune {
namespace {

using ::testing::HasSubstr;

std::string yaml_error(const std::string& text) {
  try {
    internal::parse_param_space(text, "space.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SearchSpaceFromYaml, ParsesDomainsNestingAndConstants) {
  auto space = internal::parse_param_space((R"(
x0: {uniform: [-5, 10]}
opt: {grid_search: [sgd, adam]}
block:
  depth: {randint: [1, 4]}
  act: relu
layers: [64, 32]
lr: {loguniform: {lower: 1.0e-5, upper: 0.1}}
note: {comment: hello}
)"),
                                      "space.yaml");
  std::vector<std::string> paths;
  for (const auto& p : space.parameters()) paths.push_back(p.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"x0", "opt", "block.depth", "lr"}));
  EXPECT_EQ(space.parameters()[1].domain.values, (std::vector<Json>{"sgd", "adam"}));
  EXPECT_EQ(space.parameters()[3].domain.low, 1e-5);
  ASSERT_EQ(space.constants().size(), 3u);
  EXPECT_EQ(space.constants()[0], (std::pair<std::string, Json>{"block.act", "relu"}));
  EXPECT_EQ(space.constants()[1].second, Json({64, 32}));
  EXPECT_EQ(space.constants()[2].first, "note.comment");
  EXPECT_EQ(space.grid_size(), 2);
}

TEST(SearchSpaceFromYaml, InfersScalarTypesLikeYaml12) {
  auto space = internal::parse_param_space((R"(
i: 42
f: 1.5e-3
t: true
n: ~
s: "42"
y: yes
big: 1e400x
)"),
                                      "space.yaml");
  std::map<std::string, Json> c(space.constants().begin(), space.constants().end());
  EXPECT_TRUE(c["i"].is_number_integer());
  EXPECT_TRUE(c["f"].is_number_float());
  EXPECT_EQ(c["t"], true);
  EXPECT_TRUE(c["n"].is_null());
  EXPECT_EQ(c["s"], "42");
  EXPECT_EQ(c["y"], "yes");
  EXPECT_EQ(c["big"], "1e400x");
}

TEST(SearchSpaceFromYaml, ReportsAMisspelledDomainWithItsLine) {
  EXPECT_EQ(yaml_error("x: {uniform: [0, 1]}\nlr: {loguniorm: [1.0e-5, 0.1]}\n"),
            "space.yaml:2: unknown domain 'loguniorm' for parameter 'lr' (did you mean 'loguniform'?)");
  EXPECT_EQ(yaml_error("model:\n  lr:\n    loguniorm: [1, 2]\n"),
            "space.yaml:3: unknown domain 'loguniorm' for parameter 'model.lr' (did you mean 'loguniform'?)");
}

TEST(SearchSpaceFromYaml, PrefixesDomainErrorsWithTheParameterLine) {
  EXPECT_EQ(yaml_error("a: 1\n\nlr: {loguniform: [0, 1]}\n"),
            "space.yaml:3: parameter 'lr': loguniform: bounds must be positive, got [0, 1]");
  EXPECT_EQ(yaml_error("b:\n  x: {uniform: [5, 1]}\n"),
            "space.yaml:2: parameter 'b.x': uniform: lower bound 5 must be less than upper bound 1");
  EXPECT_EQ(yaml_error("opt: {grid_search: []}\n"), "space.yaml:1: parameter 'opt': grid_search: needs at least one value");
  EXPECT_EQ(yaml_error("w: {qrandint: [1]}\n"), "space.yaml:1: parameter 'w': qrandint expects [lower, upper, q], got [1]");
}

TEST(SearchSpaceFromYaml, RejectsDuplicatesAndNonMappings) {
  EXPECT_EQ(yaml_error("x: 1\ny: 2\nx: 3\n"), "space.yaml:3: duplicate key 'x'");
  EXPECT_EQ(yaml_error("a.b: 1\na: {b: 2}\n"), "space.yaml:2: duplicate parameter 'a.b'");
  EXPECT_THAT(yaml_error("- 1\n- 2\n"), HasSubstr("space.yaml:1: param_space must be a mapping"));
}

TEST(SearchSpaceFromYaml, KeepsASingleKeyMappingWithAScalarValueAsNesting) {
  // "unifrom: 3" is close to a domain name but its value is no argument list.
  auto space = internal::parse_param_space(("x: {unifrom: 3}\n"), "space.yaml");
  ASSERT_EQ(space.constants().size(), 1u);
  EXPECT_EQ(space.constants()[0].first, "x.unifrom");
}

}  // namespace
}  // namespace tune
