#include "search/search_space.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "base/error.h"

namespace tune {
namespace {

using ::testing::HasSubstr;

TEST(SearchSpaceResolve, BuildsNestedConfigsFromDottedPaths) {
  SearchSpace space;
  space.add("model.width", qrandint(16, 256, 16)).add("lr", loguniform(1e-5, 1e-1)).constant("model.depth", 3);
  std::mt19937_64 rng(7);
  Json config = space.resolve(0, rng);
  ASSERT_TRUE(config["model"].is_object());
  EXPECT_EQ(config["model"]["depth"], 3);
  EXPECT_EQ(config["model"]["width"].get<int64_t>() % 16, 0);
  EXPECT_TRUE(config["lr"].is_number_float());
  EXPECT_EQ(config.size(), 2u);
}

TEST(SearchSpaceAdd, RejectsDuplicateAndOverlappingPaths) {
  SearchSpace space;
  space.add("a.b", uniform(0, 1));
  EXPECT_THROW(space.add("a.b", uniform(0, 1)), ConfigError);
  EXPECT_THROW(space.constant("a.b", 1), ConfigError);
  EXPECT_THROW(space.constant("a", 1), ConfigError);
  EXPECT_THROW(space.add("a.b.c", uniform(0, 1)), ConfigError);
  EXPECT_THROW(space.add("x..y", uniform(0, 1)), ConfigError);
  EXPECT_NO_THROW(space.add("a.c", uniform(0, 1)));
  EXPECT_NO_THROW(space.add("ab", uniform(0, 1)));
}

TEST(SearchSpaceGridSize, IsTheProductOfTheGridParameterSizes) {
  SearchSpace space;
  EXPECT_EQ(space.grid_size(), 1);
  space.add("a", grid_search({1, 2})).add("x", uniform(0, 1)).add("b", grid_search({"x", "y", "z"}));
  EXPECT_EQ(space.grid_size(), 6);
}

TEST(SearchSpaceResolve, VariesTheFirstGridParameterSlowest) {
  SearchSpace space;
  space.add("a", grid_search({1, 2})).add("b", grid_search({"x", "y", "z"}));
  std::mt19937_64 rng(1);
  std::vector<std::pair<int, std::string>> got;
  for (int i = 0; i < 6; ++i) {
    Json c = space.resolve(i, rng);
    got.emplace_back(c["a"].get<int>(), c["b"].get<std::string>());
  }
  std::vector<std::pair<int, std::string>> want = {{1, "x"}, {1, "y"}, {1, "z"}, {2, "x"}, {2, "y"}, {2, "z"}};
  EXPECT_EQ(got, want);
  EXPECT_THROW(space.resolve(6, rng), Error);
  EXPECT_THROW(space.resolve(-1, rng), Error);
}

TEST(SearchSpaceResolve, FixedValuesOverrideSampledAndGridValues) {
  SearchSpace space;
  space.add("opt", grid_search({"sgd", "adam"})).add("block.depth", randint(1, 4)).add("block.width", randint(1, 4));
  std::mt19937_64 rng(3);
  Json config = space.resolve(0, rng, Json{{"opt", "rmsprop"}, {"block", {{"depth", 99}}}});
  EXPECT_EQ(config["opt"], "rmsprop");
  EXPECT_EQ(config["block"]["depth"], 99);
  EXPECT_GE(config["block"]["width"].get<int>(), 1);  // still sampled
  EXPECT_LT(config["block"]["width"].get<int>(), 4);
}

TEST(SearchSpaceResolve, SameSeedGivesTheSameConfig) {
  SearchSpace space;
  space.add("x", uniform(0, 1)).add("y", randn()).add("z", choice({1, 2, 3, 4, 5, 6, 7}));
  std::mt19937_64 a(11), b(11), c(12);
  Json first = space.resolve(0, a);
  EXPECT_EQ(first, space.resolve(0, b));
  EXPECT_NE(first, space.resolve(0, c));
}

TEST(SearchSpaceJson, RoundTripsPreservingDeclarationOrder) {
  SearchSpace space;
  space.add("z", grid_search({1, 2})).add("a", grid_search({"p", "q"})).add("m.lr", loguniform(1e-4, 1e-2));
  space.add("m.w", qrandint(8, 64, 8)).constant("epochs", 3).constant("tags", Json{{"k", "v"}});
  SearchSpace back = SearchSpace::from_json(Json::parse(space.to_json().dump()));
  EXPECT_EQ(back.to_json(), space.to_json());
  for (int i = 0; i < 4; ++i) {
    std::mt19937_64 r1(i), r2(i);
    EXPECT_EQ(space.resolve(i, r1), back.resolve(i, r2));
  }
}

TEST(SearchSpaceJson, AcceptsTheNestedObjectForm) {
  SearchSpace space = SearchSpace::from_json(
      Json::parse(R"({"lr": {"loguniform": [1e-5, 0.1]}, "model": {"w": {"randint": [1, 4]}, "act": "relu"}})"));
  ASSERT_EQ(space.parameters().size(), 2u);
  EXPECT_EQ(space.parameters()[1].path, "model.w");
  ASSERT_EQ(space.constants().size(), 1u);
  EXPECT_EQ(space.constants()[0].first, "model.act");
}

TEST(SearchSpacePaths, SetFindAndFlattenAgree) {
  Json object = Json::object();
  set_path(object, "a.b.c", 1);
  set_path(object, "a.d", "x");
  set_path(object, "e", Json::array());
  EXPECT_EQ(object, Json::parse(R"({"a": {"b": {"c": 1}, "d": "x"}, "e": []})"));
  ASSERT_NE(find_path(object, "a.b.c"), nullptr);
  EXPECT_EQ(*find_path(object, "a.b.c"), 1);
  EXPECT_EQ(*find_path(object, "a.b"), Json({{"c", 1}}));
  EXPECT_EQ(find_path(object, "a.x"), nullptr);
  EXPECT_EQ(find_path(object, "a.d.z"), nullptr);
  EXPECT_EQ(flatten(object), Json::parse(R"({"a.b.c": 1, "a.d": "x", "e": []})"));
  EXPECT_THROW(set_path(object, "a.d.z", 1), ConfigError);
}

}  // namespace
}  // namespace tune
