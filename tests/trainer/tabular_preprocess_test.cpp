// The preprocessing pipeline (trainer/tabular/preprocess.h) against values
// computed by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "test_util.h"
#include "trainer/tabular/preprocess.h"
#include "trainer/tabular_test_util.h"

namespace tune::tabular {
namespace {

using tune::testing::TempDir;

class TabularPipeline : public ::testing::Test {
 protected:
  Table csv(const std::string& text) { return read_csv(dir_.write("t" + std::to_string(files_++) + ".csv", text)); }
  std::string path(int file) const { return dir_.file("t" + std::to_string(file) + ".csv"); }

  // Fits `spec` (YAML-like JSON text) on `train` with every column as a feature.
  static Pipeline fitted(const std::string& spec, const Table& train) {
    Pipeline pipeline = Pipeline::from_spec(Json::parse(spec));
    pipeline.fit(train, train.names());
    return pipeline;
  }
  // Column j of a row-major matrix with `width` columns.
  static std::vector<float> column(const std::vector<float>& x, size_t width, size_t j) {
    std::vector<float> out;
    for (size_t i = j; i < x.size(); i += width) out.push_back(x[i]);
    return out;
  }

  TempDir dir_;
  int files_ = 0;
};

MATCHER_P(FloatsNear, expected, "") {
  if (arg.size() != expected.size()) return false;
  for (size_t i = 0; i < arg.size(); ++i)
    if (std::fabs(arg[i] - expected[i]) > 1e-5) return false;
  return true;
}

TEST_F(TabularPipeline, StandardScalerUsesTheMeanAndThePopulationStd) {
  // mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25
  const Pipeline p = fitted(R"([{"standard_scaler": ["a"]}])", csv("a\n1\n2\n3\n4\n"));
  const double s = std::sqrt(1.25);
  EXPECT_THAT(
      p.transform(csv("a\n1\n2\n3\n4\n6.5\n")),
      FloatsNear(std::vector<float>{float(-1.5 / s), float(-0.5 / s), float(0.5 / s), float(1.5 / s), float(4 / s)}));
}

TEST_F(TabularPipeline, ScalersFitValuesNearTheLargestDoubleWithoutOverflow) {
  // Found by the csv fuzz target: the squares (and max - min) overflowed.
  const Table extremes = csv("a,b\n1e308,1e308\n-1e308,-1e308\n0,0\n");
  const Pipeline p = fitted(R"([{"standard_scaler": ["a"]}, {"min_max_scaler": ["b"]}])", extremes);
  const double s = std::sqrt(2.0 / 3.0);  // of 1, -1, 0 (mean 0)
  EXPECT_THAT(p.transform(extremes),
              FloatsNear(std::vector<float>{float(1 / s), 1.0f, float(-1 / s), 0.0f, 0.0f, 0.5f}));
}

TEST_F(TabularPipeline, AValueBeyondFloat32AfterPreprocessingIsAnErrorNamingItsRow) {
  const Pipeline p = fitted("[]", csv("a\n1\n2\n"));
  EXPECT_EQ(config_error([&] { p.transform(csv("a\n1\n1e300\n")); }).what(),
            path(1) + ":3: column 'a' is 1e+300 after preprocessing, beyond float32: scale it (e.g. standard_scaler)");
}

TEST_F(TabularPipeline, MinMaxAndMaxAbsScalersUseTheTrainingRange) {
  const Pipeline p =
      fitted(R"([{"min_max_scaler": ["b"]}, {"max_abs_scaler": ["c"]}])", csv("b,c\n10,-4\n20,2\n30,1\n50,0\n"));
  const std::vector<float> x = p.transform(csv("b,c\n10,-4\n20,2\n30,1\n50,0\n90,8\n"));
  EXPECT_THAT(column(x, 2, 0), FloatsNear(std::vector<float>{0, 0.25, 0.5, 1, 2}));
  EXPECT_THAT(column(x, 2, 1), FloatsNear(std::vector<float>{-1, 0.5, 0.25, 0, 2}));
}

TEST_F(TabularPipeline, ScalersDivideAConstantColumnByOne) {
  const Table train = csv("s,m,z,k\n3,3,0,3\n3,3,0,3\n");
  const Pipeline p = fitted(R"([{"standard_scaler": ["s"]}, {"min_max_scaler": ["m"]},
                                {"max_abs_scaler": ["z", "k"]}])",
                            train);
  // s: (x - 3) / 1; m: (x - 3) / 1; z: x / 1; k: x / 3
  EXPECT_THAT(p.transform(csv("s,m,z,k\n3,3,0,3\n5,5,2,6\n")), FloatsNear(std::vector<float>{0, 0, 0, 1, 2, 2, 2, 2}));
}

TEST_F(TabularPipeline, ScalersIgnoreMissingCellsWhenFitting) {
  // The mean and std of 1 and 3 only: 2 and 1.
  const Pipeline p = fitted(R"([{"standard_scaler": ["x"]}, {"simple_imputer": ["x"]}])", csv("x\n1\nNA\n3\n"));
  // Steps in order: scaled [-1, missing, 1], then the imputer fills the mean of the scaled values (0).
  EXPECT_THAT(p.transform(csv("x\n1\nNA\n3\n")), FloatsNear(std::vector<float>{-1, 0, 1}));
}

TEST_F(TabularPipeline, StepsRunInOrderOnThePreviousOutput) {
  // Imputer first: [1, 2, 3]; mean 2, std sqrt(2/3).
  const Pipeline p = fitted(R"([{"simple_imputer": ["x"]}, {"standard_scaler": ["x"]}])", csv("x\n1\nNA\n3\n"));
  const float s = static_cast<float>(std::sqrt(2.0 / 3.0));
  EXPECT_THAT(p.transform(csv("x\n1\nNA\n3\n")), FloatsNear(std::vector<float>{-1 / s, 0, 1 / s}));
}

TEST_F(TabularPipeline, NormalizerScalesEachRowsListedColumns) {
  const Table rows = csv("a,b,c\n3,4,9\n0,0,9\n-3,4,9\n");
  EXPECT_THAT(fitted(R"([{"normalizer": ["a", "b"]}])", rows).transform(rows),
              FloatsNear(std::vector<float>{0.6f, 0.8f, 9, 0, 0, 9, -0.6f, 0.8f, 9}));
  EXPECT_THAT(fitted(R"([{"normalizer": {"columns": ["a", "b"], "norm": "l1"}}])", rows).transform(rows),
              FloatsNear(std::vector<float>{3 / 7.f, 4 / 7.f, 9, 0, 0, 9, -3 / 7.f, 4 / 7.f, 9}));
  EXPECT_THAT(fitted(R"([{"normalizer": {"columns": ["a", "b"], "norm": "max"}}])", rows).transform(rows),
              FloatsNear(std::vector<float>{0.75f, 1, 9, 0, 0, 9, -0.75f, 1, 9}));
}

TEST_F(TabularPipeline, OneHotReplacesAColumnAtItsPositionAndZeroesUnknownCategories) {
  const Pipeline p = fitted(R"([{"one_hot": ["pay"]}])", csv("a,pay,b\n1,cash,5\n2,card,6\n3,cash,7\n4,other,8\n"));
  EXPECT_EQ(p.output_names(), (std::vector<std::string>{"a", "pay=card", "pay=cash", "pay=other", "b"}));
  EXPECT_THAT(p.transform(csv("a,pay,b\n1,card,5\n2,crypto,6\n")),
              FloatsNear(std::vector<float>{1, 1, 0, 0, 5, 2, 0, 0, 0, 6}));
}

TEST_F(TabularPipeline, OneHotOfANumericColumnSortsItsCategoriesNumerically) {
  const Pipeline p = fitted(R"([{"one_hot": ["n"]}])", csv("n\n10\n2\n2.5\n"));
  EXPECT_EQ(p.output_names(), (std::vector<std::string>{"n=2", "n=2.5", "n=10"}));
  EXPECT_THAT(p.transform(csv("n\n10\n7\n")), FloatsNear(std::vector<float>{0, 0, 1, 0, 0, 0}));
}

TEST_F(TabularPipeline, OrdinalNumbersSortedCategoriesAndGivesUnknownMinusOne) {
  const Pipeline p = fitted(R"([{"ordinal": ["vendor"]}])", csv("vendor\nb\na\nc\na\n"));
  EXPECT_EQ(p.output_names(), (std::vector<std::string>{"vendor"}));
  EXPECT_THAT(p.transform(csv("vendor\nb\na\nc\nzz\n")), FloatsNear(std::vector<float>{1, 0, 2, -1}));
}

TEST_F(TabularPipeline, ACategoricalColumnGivenAsNumbersMatchesItsTextCategories) {
  const Pipeline p = fitted(R"([{"one_hot": ["v"]}])", csv("v\n1\n2\nx\n"));
  EXPECT_EQ(p.input_schema()[0].kind, Kind::kCategorical);
  EXPECT_THAT(p.transform(csv("v\n2\n1\n")), FloatsNear(std::vector<float>{0, 1, 0, 1, 0, 0}));
}

TEST_F(TabularPipeline, ImputerStrategiesFillFromTheTrainingValues) {
  // Present values 1, 2, 10, 10: mean 5.75, median (2 + 10) / 2 = 6, most frequent 10.
  const Table train = csv("x\n1\nNA\n2\n10\n10\n");
  const Table query = csv("x\nNA\n4\n");
  EXPECT_THAT(fitted(R"([{"simple_imputer": ["x"]}])", train).transform(query),
              FloatsNear(std::vector<float>{5.75, 4}));
  EXPECT_THAT(fitted(R"([{"simple_imputer": {"columns": ["x"], "strategy": "median"}}])", train).transform(query),
              FloatsNear(std::vector<float>{6, 4}));
  EXPECT_THAT(
      fitted(R"([{"simple_imputer": {"columns": ["x"], "strategy": "most_frequent"}}])", train).transform(query),
      FloatsNear(std::vector<float>{10, 4}));
  EXPECT_THAT(fitted(R"([{"simple_imputer": {"columns": ["x"], "strategy": "constant", "value": -7}}])", train)
                  .transform(query),
              FloatsNear(std::vector<float>{-7, 4}));
}

TEST_F(TabularPipeline, ImputerFillsCategoricalColumnsWithTheMostFrequentOrAConstant) {
  const Table train = csv("c\nb\na\nNA\nb\na\n");  // a and b tie: the smaller wins
  const Table query = csv("c\na\nNA\nb\n");
  EXPECT_THAT(
      fitted(R"([{"simple_imputer": {"columns": ["c"], "strategy": "most_frequent"}}, {"ordinal": ["c"]}])", train)
          .transform(query),
      FloatsNear(std::vector<float>{0, 0, 1}));
  const Pipeline constant = fitted(
      R"([{"simple_imputer": {"columns": ["c"], "strategy": "constant", "value": "none yet"}}, {"one_hot": ["c"]}])",
      train);
  EXPECT_EQ(constant.output_names(), (std::vector<std::string>{"c=a", "c=b", "c=none yet"}));
  EXPECT_THAT(constant.transform(query), FloatsNear(std::vector<float>{1, 0, 0, 0, 0, 1, 0, 1, 0}));
}

TEST_F(TabularPipeline, ColumnsNoStepMentionsPassThrough) {
  const Pipeline p = fitted(R"([{"max_abs_scaler": ["b"]}])", csv("a,b\n1.5,2\n-3,4\n"));
  EXPECT_EQ(p.output_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_THAT(p.transform(csv("a,b\n7.25,2\n")), FloatsNear(std::vector<float>{7.25, 0.5}));
  EXPECT_EQ(Pipeline::from_spec(Json()).mentioned_columns(), std::vector<std::string>{});
}

TEST_F(TabularPipeline, MentionedColumnsListsEachNameOnceInOrder) {
  const Pipeline p = Pipeline::from_spec(Json::parse(
      R"([{"simple_imputer": {"columns": ["b", "a"]}}, {"standard_scaler": ["a", "c"]}, {"one_hot": ["d"]}])"));
  EXPECT_EQ(p.mentioned_columns(), (std::vector<std::string>{"b", "a", "c", "d"}));
  EXPECT_FALSE(p.fitted());
}

TEST_F(TabularPipeline, FitUsesOnlyTheFeaturesInTheirOrder) {
  Pipeline p = Pipeline::from_spec(Json());
  p.fit(csv("a,b,c\n1,2,x\n"), {"b", "a"});
  EXPECT_EQ(p.output_names(), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(p.input_schema().size(), 2u);
  EXPECT_THAT(p.transform(csv("c,a,b\ny,5,6\n")), FloatsNear(std::vector<float>{6, 5}));
}

TEST_F(TabularPipeline, AnUnencodedCategoricalColumnIsAnError) {
  const Table train = csv("fare,payment_type\n1,cash\n");
  EXPECT_STREQ(config_error([&] { fitted("null", train); }).what(),
               "column 'payment_type' is categorical: add it to one_hot or ordinal");
}

TEST_F(TabularPipeline, AMissingValueNoImputerFillsNamesItsLine) {
  const Table train = csv("a,fare_amount\n1,2\n2,NA\n");
  EXPECT_EQ(std::string(config_error([&] { fitted(R"([{"standard_scaler": ["fare_amount"]}])", train); }).what()),
            path(0) + ":3: column 'fare_amount' has a missing value: add a simple_imputer for it");
  EXPECT_EQ(std::string(config_error([&] { fitted(R"([{"one_hot": ["a"]}])", csv("a\nx\n\n\"\"\n")); }).what()),
            path(1) + ":4: column 'a' has a missing value: add a simple_imputer for it");
}

TEST_F(TabularPipeline, AMissingValueAtTransformTimeNamesItsRow) {
  const Pipeline p = fitted(R"([{"standard_scaler": ["x"]}])", csv("x\n1\n2\n"));
  const Table request = table_from_json(Json::parse(R"([{"x": 1}, {"x": null}])"), p.input_schema());
  EXPECT_STREQ(
      config_error([&] { p.transform(request); }).what(),
      "request: instance 1: column 'x' has a missing value and the preprocessing has no simple_imputer for it");
}

TEST_F(TabularPipeline, TransformNeedsEveryInputColumnOfItsKind) {
  const Pipeline p = fitted(R"([{"standard_scaler": ["fare_amount"]}])", csv("fare_amount\n1\n2\n"));
  EXPECT_EQ(std::string(config_error([&] { p.transform(csv("fare\n1\n")); }).what()),
            path(1) + ": no column 'fare_amount', which the model needs (did you mean 'fare'?)");
  EXPECT_EQ(std::string(config_error([&] { p.transform(csv("fare_amount\n1\n2\nabc\n")); }).what()),
            path(2) + ":4: column 'fare_amount' must be a number, got 'abc'");
}

TEST_F(TabularPipeline, FitNamesTheStepOfAnAbsentColumn) {
  const Table train = csv("fare_amount,tip\n1,2\n");
  ConfigError e = config_error([&] { fitted(R"([{"standard_scaler": ["fare"]}])", train); });
  EXPECT_EQ(std::string(e.what()),
            "preprocess[0].standard_scaler: no column 'fare' in " + path(0) + " (did you mean 'fare_amount'?)");
  EXPECT_EQ(e.key_path(), "preprocess[0].standard_scaler");
  Pipeline p = Pipeline::from_spec(Json::parse(R"([{"max_abs_scaler": ["tip"]}])"));
  EXPECT_STREQ(config_error([&] { p.fit(train, {"fare_amount"}); }).what(),
               "preprocess[0].max_abs_scaler: column 'tip' is not one of the features");
  EXPECT_STREQ(config_error([&] { p.fit(train, {"fare"}); }).what(),
               ("no column 'fare' in " + path(0) + " (did you mean 'fare_amount'?)").c_str());
  const Table pay = csv("pay\ncash\n");
  EXPECT_STREQ(config_error([&] { fitted(R"([{"one_hot": ["pay"]}, {"ordinal": ["pay"]}])", pay); }).what(),
               "preprocess[1].ordinal: no column 'pay' here: an earlier step replaced it");
}

TEST_F(TabularPipeline, AScalerOnACategoricalColumnIsAnError) {
  ConfigError e =
      config_error([&] { fitted(R"([{"one_hot": ["a"]}, {"standard_scaler": ["b"]}])", csv("a,b\nx,y\n")); });
  EXPECT_STREQ(e.what(),
               "preprocess[1].standard_scaler: column 'b' is categorical: standard_scaler needs numbers (encode it "
               "with one_hot or ordinal first)");
  EXPECT_EQ(e.key_path(), "preprocess[1].standard_scaler");
}

TEST_F(TabularPipeline, AnImputerThatCannotFillIsAnError) {
  EXPECT_STREQ(config_error([&] { fitted(R"([{"simple_imputer": ["c"]}])", csv("c\nx\nNA\n")); }).what(),
               "preprocess[0].simple_imputer: strategy mean needs numbers; column 'c' is categorical (use "
               "most_frequent or constant)");
  EXPECT_STREQ(config_error([&] { fitted(R"([{"simple_imputer": ["c"]}])", csv("c,d\nNA,1\n")); }).what(),
               "preprocess[0].simple_imputer: column 'c' has no value in the training rows to compute the mean from "
               "(use strategy constant)");
  EXPECT_STREQ(config_error([&] {
                 fitted(R"([{"simple_imputer": {"columns": ["c"], "strategy": "constant", "value": "x"}}])",
                        csv("c\n1\n"));
               }).what(),
               "preprocess[0].simple_imputer: value 'x' is not a number, but column 'c' is numeric");
}

// The key path and message of the ConfigError from_spec(spec) throws.
std::pair<std::string, std::string> spec_error(const std::string& spec) {
  const ConfigError e = config_error([&] { Pipeline::from_spec(Json::parse(spec)); });
  return {e.key_path(), e.what()};
}

TEST(TabularPipelineSpec, RejectsMalformedEntriesWithTheirKeyPaths) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(spec_error(R"({"standard_scaler": ["a"]})"),
            P("preprocess", "preprocess must be a list of preprocessors, got an object"));
  EXPECT_EQ(
      spec_error(R"([{"standard_scaler": ["a"]}, "one_hot"])"),
      P("preprocess[1]", "preprocess[1]: must be a one-key mapping like {standard_scaler: [x, y]}, got a string"));
  EXPECT_EQ(spec_error(R"([{"one_hot": ["a"], "ordinal": ["b"]}])"),
            P("preprocess[0]",
              "preprocess[0]: must be a one-key mapping like {standard_scaler: [x, y]}, got a "
              "mapping with 2 keys"));
  EXPECT_EQ(spec_error(R"([{"standard_scalar": ["a"]}])"),
            P("preprocess[0].standard_scalar",
              "preprocess[0]: unknown preprocessor 'standard_scalar' (did you mean 'standard_scaler'?)"));
  EXPECT_EQ(spec_error(R"([{"pca": ["a"]}])").second,
            "preprocess[0]: unknown preprocessor 'pca' (known: simple_imputer, standard_scaler, min_max_scaler, "
            "max_abs_scaler, normalizer, one_hot, ordinal)");
}

TEST(TabularPipelineSpec, RejectsBadColumnLists) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(spec_error(R"([{}, {"one_hot": []}])").first, "preprocess[0]");
  EXPECT_EQ(spec_error(R"([{"one_hot": []}])"),
            P("preprocess[0].one_hot", "preprocess[0].one_hot: must name at least one column"));
  EXPECT_EQ(spec_error(R"([{"one_hot": ["a", 3]}])"),
            P("preprocess[0].one_hot[1]", "preprocess[0].one_hot[1]: a column name must be a non-empty string, got 3"));
  EXPECT_EQ(spec_error(R"([{"one_hot": "a"}])"), P("preprocess[0].one_hot",
                                                   "preprocess[0].one_hot: must be a list of column names or a mapping "
                                                   "{columns: [...], ...}, got a string"));
  EXPECT_EQ(spec_error(R"([{"ordinal": {"columns": "a"}}])"),
            P("preprocess[0].ordinal.columns",
              "preprocess[0].ordinal.columns: must be a list of column names, got a string"));
  EXPECT_EQ(spec_error(R"([{"ordinal": {"strategy": "mean"}}])"),
            P("preprocess[0].ordinal", "preprocess[0].ordinal: missing columns: (the list of columns it applies to)"));
  EXPECT_EQ(spec_error(R"([{"ordinal": ["a", "a"]}])"),
            P("preprocess[0].ordinal[1]", "preprocess[0].ordinal[1]: column 'a' is listed twice"));
}

TEST(TabularPipelineSpec, RejectsBadOptions) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(spec_error(R"([{"simple_imputer": {"columns": ["a"], "strategy": "avg"}}])"),
            P("preprocess[0].simple_imputer.strategy",
              "preprocess[0].simple_imputer.strategy must be one of mean, median, most_frequent, constant, got 'avg'"));
  EXPECT_EQ(spec_error(R"([{"simple_imputer": {"columns": ["a"], "strategy": "constant"}}])"),
            P("preprocess[0].simple_imputer.strategy",
              "preprocess[0].simple_imputer: strategy constant needs value: (the fill value)"));
  EXPECT_EQ(spec_error(R"([{"simple_imputer": {"columns": ["a"], "value": 1}}])").second,
            "preprocess[0].simple_imputer: value: is only used with strategy: constant");
  EXPECT_EQ(spec_error(R"([{"normalizer": {"columns": ["a"], "norm": "l3"}}])"),
            P("preprocess[0].normalizer.norm", "preprocess[0].normalizer.norm must be one of l1, l2, max, got 'l3'"));
  EXPECT_EQ(spec_error(R"([{"standard_scaler": {"columns": ["a"], "with_mean": false}}])"),
            P("preprocess[0].standard_scaler.with_mean",
              "preprocess[0].standard_scaler: unknown option 'with_mean' (valid keys: columns)"));
  EXPECT_EQ(spec_error(R"([{"normalizer": {"columns": ["a"], "nrom": "l1"}}])").second,
            "preprocess[0].normalizer: unknown option 'nrom' (did you mean 'norm'?)");
}

TEST_F(TabularPipeline, RoundTripsEveryPreprocessorThroughJson) {
  const Table train = csv("a,pay,v,n,m\n1,cash,x,3,4\nNA,card,y,0,1\n7,cash,x,-2,5\n");
  const Pipeline p = fitted(R"([{"simple_imputer": {"columns": ["a"], "strategy": "median"}},
      {"one_hot": ["pay"]}, {"ordinal": ["v"]}, {"normalizer": {"columns": ["n", "m"], "norm": "l1"}},
      {"standard_scaler": ["a"]}, {"min_max_scaler": ["pay=cash"]}, {"max_abs_scaler": ["n"]}])",
                            train);
  const Table query = csv("a,pay,v,n,m\nNA,bitcoin,z,1,1\n3,card,y,2,-3\n");
  const Pipeline back = Pipeline::from_json(Json::parse(p.to_json().dump()));
  EXPECT_TRUE(back.fitted());
  EXPECT_EQ(back.output_names(), p.output_names());
  EXPECT_EQ(back.transform(query), p.transform(query));
  EXPECT_EQ(back.to_json(), p.to_json());
}

TEST_F(TabularPipeline, CopiesAreIndependent) {
  Pipeline p = fitted(R"([{"standard_scaler": ["x"]}])", csv("x\n0\n2\n"));
  Pipeline copy = p;
  copy.fit(csv("x\n10\n30\n"), {"x"});
  const Table query = csv("x\n1\n");
  EXPECT_THAT(p.transform(query), FloatsNear(std::vector<float>{0}));
  EXPECT_THAT(copy.transform(query), FloatsNear(std::vector<float>{-1.9f}));
}

TEST(TabularPipelineState, MalformedStateIsAnError) {
  EXPECT_THROW(Pipeline::from_json(Json::object()), Error);
  EXPECT_THROW(Pipeline::from_json(Json::parse(R"({"version": 2, "steps": [], "input_schema": [], "outputs": []})")),
               Error);
  const Json bad_sizes = Json::parse(R"({"version": 1, "input_schema": [{"name": "x", "kind": "numeric"}],
      "outputs": ["x"], "steps": [{"spec": {"standard_scaler": ["x"]}, "state": {"offset": [0, 1], "scale": [1]}}]})");
  EXPECT_THROW(Pipeline::from_json(bad_sizes), Error);
  const Json bad_outputs = Json::parse(R"({"version": 1, "input_schema": [{"name": "x", "kind": "numeric"}],
      "outputs": ["y"], "steps": []})");
  EXPECT_THROW(Pipeline::from_json(bad_outputs), Error);
  const Json bad_kind = Json::parse(R"({"version": 1, "input_schema": [{"name": "x", "kind": "text"}],
      "outputs": ["x"], "steps": []})");
  EXPECT_THROW(Pipeline::from_json(bad_kind), Error);
  EXPECT_THROW(Pipeline().to_json(), Error);
  EXPECT_THROW(Pipeline().transform(Table()), Error);
}

// A random numeric table (some cells missing) and a pipeline over all of it.
RC_GTEST_PROP(TabularPipelineState, FromJsonOfToJsonTransformsIdentically, ()) {
  const int width = *rc::gen::inRange(1, 5);
  const int rows = *rc::gen::inRange(1, 30);
  const std::vector<std::string> steps = {"standard_scaler", "min_max_scaler", "max_abs_scaler",
                                          "normalizer",      "one_hot",        "ordinal"};
  auto make_table = [&](int n) {
    Table table;
    table.source = "random";
    for (int j = 0; j < width; ++j) {
      Column column{"c" + std::to_string(j), Kind::kNumeric, {}, {}, {}};
      for (int i = 0; i < n; ++i) {
        const bool missing = *rc::gen::inRange(0, 5) == 0;
        column.missing.push_back(missing);
        column.numbers.push_back(missing ? std::nan("") : *rc::gen::inRange(-1000, 1000) / 8.0);
      }
      table.columns.push_back(column);
      table.lines.clear();
    }
    return table;
  };
  Json spec = Json::array();
  std::vector<std::string> all;
  for (int j = 0; j < width; ++j) all.push_back("c" + std::to_string(j));
  const std::vector<std::string> strategies = {"mean", "median", "most_frequent"};
  spec.push_back({{"simple_imputer", {{"columns", all}, {"strategy", *rc::gen::elementOf(strategies)}}}});
  for (int j = 0; j < width; ++j) spec.push_back({{*rc::gen::elementOf(steps), Json::array({all[j]})}});
  const Table train = make_table(rows);
  RC_PRE(std::all_of(train.columns.begin(), train.columns.end(),
                     [](const Column& c) { return std::count(c.missing.begin(), c.missing.end(), 0) > 0; }));
  Pipeline p = Pipeline::from_spec(spec);
  p.fit(train, all);
  const Pipeline back = Pipeline::from_json(Json::parse(p.to_json().dump()));
  const Table query = make_table(*rc::gen::inRange(0, 10));
  const std::vector<float> expected = p.transform(query), got = back.transform(query);
  RC_ASSERT(expected.size() == got.size());
  for (size_t i = 0; i < got.size(); ++i)
    RC_ASSERT((std::isnan(expected[i]) && std::isnan(got[i])) || expected[i] == got[i]);
  RC_ASSERT(p.transform(train) == back.transform(train));
}

}  // namespace
}  // namespace tune::tabular
