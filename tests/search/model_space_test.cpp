// ModelSpace: the unit-cube encoding of every domain kind, and trial scoring.
#include "search/model_space.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "search/sobol.h"
#include "base/error.h"

namespace tune::internal {
namespace {

SearchSpace every_kind() {
  SearchSpace space;
  space.add("u", uniform(-2, 3))
      .add("qu", quniform(0, 1, 0.1))
      .add("lu", loguniform(1e-4, 1))
      .add("qlu", qloguniform(1, 100, 5))
      .add("ri", randint(-3, 4))
      .add("qri", qrandint(10, 100, 10))
      .add("lri", lograndint(1, 1000))
      .add("qlri", qlograndint(2, 64, 2))
      .add("n", randn(5, 2))
      .add("qn", qrandn(0, 1, 0.5))
      .add("c", choice({"a", 1, Json::array({1, 2}), nullptr}))
      .add("one", choice({"only"}))
      .constant("k", 42);
  return space;
}

TEST(ModelSpace, SampledConfigsSurviveEncodeDecode) {
  // Every value a domain can produce (within randn's +-4 sd window) decodes
  // from its own encoding unchanged.
  const SearchSpace space = every_kind();
  ModelSpace model(space, "bayes");
  EXPECT_EQ(model.unit_dims(), 10 + 4);  // 10 numeric + one-hot of 4 (a single choice takes none)
  std::mt19937_64 rng(1);
  for (int k = 0; k < 300; ++k) {
    Json config = space.resolve(0, rng);
    if (std::fabs(config["n"].get<double>() - 5) > 8 || std::fabs(config["qn"].get<double>()) > 4) continue;
    auto u = model.encode(config);
    ASSERT_TRUE(u) << config;
    for (double v : *u) EXPECT_TRUE(v >= 0 && v <= 1) << config;
    Json back = model.decode(*u);
    for (const char* key : {"qu", "qlu", "ri", "qri", "lri", "qlri", "qn", "c", "one", "k"}) EXPECT_EQ(back[key], config[key]) << key;
    for (const char* key : {"u", "lu", "n"}) EXPECT_NEAR(back[key].get<double>(), config[key].get<double>(), 1e-9 * std::max(1.0, std::fabs(config[key].get<double>())));
  }
}

TEST(ModelSpace, AnyPointOfTheCubeDecodesToAValidConfigAndSnapsIdempotently) {
  const SearchSpace space = every_kind();
  ModelSpace model(space, "bayes");
  SobolSequence sobol(model.unit_dims(), 3);
  for (uint64_t i = 0; i < 500; ++i) {
    std::vector<double> u = sobol.point(i);
    Json c = model.decode(u);
    EXPECT_TRUE(c["u"].get<double>() >= -2 && c["u"].get<double>() < 3);
    EXPECT_NEAR(c["qu"].get<double>() * 10, std::round(c["qu"].get<double>() * 10), 1e-9);
    EXPECT_TRUE(c["lu"].get<double>() >= 1e-4 && c["lu"].get<double>() < 1);
    EXPECT_TRUE(c["ri"].is_number_integer() && c["ri"] >= -3 && c["ri"] <= 3) << c;
    EXPECT_TRUE(c["qri"].get<int64_t>() % 10 == 0 && c["qri"] >= 10 && c["qri"] <= 100) << c;
    EXPECT_TRUE(c["lri"] >= 1 && c["lri"] <= 999) << c;
    EXPECT_TRUE(c["qlri"].get<int64_t>() % 2 == 0 && c["qlri"] >= 2 && c["qlri"] <= 64) << c;
    EXPECT_EQ(c["one"], "only");
    EXPECT_EQ(c["k"], 42);
    std::vector<double> snapped = model.snap_unit(u);
    EXPECT_EQ(model.decode(snapped), c);
    EXPECT_EQ(model.snap_unit(snapped), snapped);
    EXPECT_EQ(*model.encode(c), snapped);
  }
}

TEST(ModelSpace, DiscreteValuesGetEqualShares) {
  SearchSpace space;
  space.add("r", randint(0, 4));
  ModelSpace model(space, "tpe");
  // randint(0, 4) -> 0..3, each owning a quarter of [0, 1].
  EXPECT_EQ(model.decode({0.01})["r"], 0);
  EXPECT_EQ(model.decode({0.26})["r"], 1);
  EXPECT_EQ(model.decode({0.74})["r"], 2);
  EXPECT_EQ(model.decode({0.99})["r"], 3);
}

TEST(ModelSpace, RejectsGridSearchAndForeignValues) {
  SearchSpace grid;
  grid.add("g", grid_search({1, 2}));
  EXPECT_THROW(ModelSpace(grid, "tpe"), ConfigError);
  SearchSpace space;
  space.add("c", choice({"a", "b"})).add("x", uniform(0, 1));
  ModelSpace model(space, "bayes");
  EXPECT_FALSE(model.encode(Json{{"c", "z"}, {"x", 0.5}}).has_value());
  EXPECT_FALSE(model.encode(Json{{"c", "a"}, {"x", "high"}}).has_value());
  EXPECT_FALSE(model.encode(Json{{"c", "a"}}).has_value());
}

TEST(ScoreTrials, OrientsFlagsFailuresAndMarksEarlyStoppedTrials) {
  std::vector<Observation> obs = {
      {3, Json{{"x", 1}}, Json{{"acc", 0.9}, {"training_iteration", 10}}, false},
      {1, Json{{"x", 2}}, Json{{"acc", 0.5}, {"training_iteration", 2}}, false},
      {2, Json{{"x", 3}}, Json{{"acc", 0.7}, {"training_iteration", 10}}, true},
      {4, Json{{"x", 4}}, Json{{"acc", "nan"}}, false},
      {0, Json{{"x", 5}}, Json{{"nested", {{"acc", 0.1}}}, {"training_iteration", 10}}, false},
  };
  auto scored = score_trials(obs, "acc", "max");
  ASSERT_EQ(scored.size(), 5u);
  EXPECT_EQ(scored[0].index, 0);  // sorted by index
  EXPECT_FALSE(scored[0].ok);      // the metric is not at the top level
  EXPECT_TRUE(scored[1].ok);
  EXPECT_DOUBLE_EQ(scored[1].loss, -0.5);
  EXPECT_TRUE(scored[1].below_full_budget);
  EXPECT_FALSE(scored[2].ok);  // error
  EXPECT_TRUE(scored[3].ok);
  EXPECT_FALSE(scored[3].below_full_budget);
  EXPECT_FALSE(scored[4].ok);  // not a number
  auto nested = score_trials(obs, "nested.acc", "min");
  EXPECT_TRUE(nested[0].ok);
  EXPECT_DOUBLE_EQ(nested[0].loss, 0.1);
}

}  // namespace
}  // namespace tune::internal

namespace tune {
namespace {

TEST(SobolSequence, BatchesEqualSinglePointsAndFillTheCubeEvenly) {
  SobolSequence sobol(3, 17);
  auto batch = sobol.points(5, 64);
  for (size_t k = 0; k < batch.size(); ++k) EXPECT_EQ(batch[k], sobol.point(5 + k)) << k;
  // An aligned block of 2^m Sobol points puts exactly one point in each of
  // the 2^m dyadic slabs of every coordinate (the digital shift permutes
  // slabs but keeps the property). Boost's engine skips the all-zero first
  // point, so index i is Sobol point i + 1: indices 63..126 are the block
  // 64..127.
  auto first = sobol.points(63, 64);
  for (int j = 0; j < 3; ++j) {
    std::vector<int> slab(64, 0);
    for (const auto& p : first) slab[static_cast<size_t>(p[static_cast<size_t>(j)] * 64)]++;
    for (int count : slab) EXPECT_EQ(count, 1);
  }
  EXPECT_NE(SobolSequence(3, 18).point(0), sobol.point(0));
  EXPECT_THROW(SobolSequence(0, 1), Error);
}

}  // namespace
}  // namespace tune
