// From a sweep's data: and preprocess: to training arrays (trainer/tabular/dataset.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "base/error.h"
#include "test_util.h"
#include "trainer/tabular/dataset.h"
#include "trainer/tabular_test_util.h"

namespace tune::tabular {
namespace {

using tune::testing::TempDir;

// Rows i = 0..n-1: x = i, pay = cash|card|other by i % 3, y = 1 when i % 10 < 3 (30%).
std::string trips_csv(int n) {
  std::string text = "x,pay,y\n";
  const char* pays[] = {"cash", "card", "other"};
  for (int i = 0; i < n; ++i) text += std::to_string(i) + "," + pays[i % 3] + "," + (i % 10 < 3 ? "1" : "0") + "\n";
  return text;
}

class TabularPrepare : public ::testing::Test {
 protected:
  // A setup over a fresh CSV file holding `text` (fresh files keep tests apart in prepare()'s cache).
  Json setup(const std::string& text, Json data = Json::object(), Json preprocess = Json()) {
    data["path"] = dir_.write("d" + std::to_string(files_++) + ".csv", text);
    if (!data.contains("label")) data["label"] = "y";
    return {{"data", data}, {"preprocess", preprocess}};
  }
  std::string path(int file) const { return dir_.file("d" + std::to_string(file) + ".csv"); }

  TempDir dir_;
  int files_ = 0;
};

TEST_F(TabularPrepare, SplitsRegressionRowsByTheValidFraction) {
  auto data = prepare(setup(trips_csv(100), {{"task", "regression"}, {"valid_fraction", 0.25}},
                            Json::parse(R"([{"one_hot": ["pay"]}])")));
  EXPECT_EQ(data->rows, 100);
  EXPECT_EQ(data->n_valid, 25);
  EXPECT_EQ(data->n_train, 75);
  EXPECT_EQ(data->n_features, 4);
  EXPECT_EQ(data->feature_names, (std::vector<std::string>{"x", "pay=card", "pay=cash", "pay=other"}));
  EXPECT_EQ(data->x_train.size(), 75u * 4);
  EXPECT_EQ(data->x_valid.size(), 25u * 4);
  EXPECT_TRUE(data->classes.empty());
  std::vector<int64_t> all(data->train_rows);
  all.insert(all.end(), data->valid_rows.begin(), data->valid_rows.end());
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(100);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(all, expected);
}

TEST_F(TabularPrepare, RowsOfXAndYFollowTheSplitsRows) {
  auto data = prepare(setup(trips_csv(50), {{"features", {"x"}}}));
  ASSERT_EQ(data->n_features, 1);
  for (int64_t i = 0; i < data->n_train; ++i) {
    const int64_t row = data->train_rows[static_cast<size_t>(i)];
    EXPECT_EQ(data->x_train[static_cast<size_t>(i)], static_cast<float>(row));
    EXPECT_EQ(data->y_train[static_cast<size_t>(i)], row % 10 < 3 ? 1.f : 0.f);
  }
  for (int64_t i = 0; i < data->n_valid; ++i)
    EXPECT_EQ(data->x_valid[static_cast<size_t>(i)], static_cast<float>(data->valid_rows[static_cast<size_t>(i)]));
}

TEST_F(TabularPrepare, StratifiesAClassificationSplitByClass) {
  auto data = prepare(setup(trips_csv(100), {{"features", {"x"}}}));
  EXPECT_EQ(data->classes, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(data->n_valid, 20);  // round(70 * 0.2) + round(30 * 0.2)
  EXPECT_EQ(std::count(data->y_valid.begin(), data->y_valid.end(), 1.f), 6);
  EXPECT_EQ(std::count(data->y_train.begin(), data->y_train.end(), 1.f), 24);
}

TEST_F(TabularPrepare, AClassOfTwoRowsReachesBothPartsAndALoneRowTrains) {
  std::string text = "x,y\n";
  for (int i = 0; i < 20; ++i) text += std::to_string(i) + ",a\n";
  text += "20,b\n21,b\n22,c\n";
  auto data = prepare(setup(text));
  EXPECT_EQ(data->classes, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(data->n_valid, 5);  // 4 of a, 1 of b, none of c
  EXPECT_EQ(std::count(data->y_valid.begin(), data->y_valid.end(), 1.f), 1);
  EXPECT_EQ(std::count(data->y_train.begin(), data->y_train.end(), 1.f), 1);
  EXPECT_EQ(std::count(data->y_train.begin(), data->y_train.end(), 2.f), 1);
}

TEST_F(TabularPrepare, SortsNumericClassesNumericallyAndTextClassesAsText) {
  auto numeric = prepare(setup("x,y\n1,10\n2,2\n3,10\n4,2\n5,10\n6,2\n"));
  EXPECT_EQ(numeric->classes, (std::vector<std::string>{"2", "10"}));
  auto text = prepare(setup("x,y\n1,yes\n2,no\n3,yes\n4,no\n5,yes\n6,no\n"));
  EXPECT_EQ(text->classes, (std::vector<std::string>{"no", "yes"}));
  for (int64_t i = 0; i < text->n_train; ++i)
    EXPECT_EQ(text->y_train[static_cast<size_t>(i)], text->train_rows[static_cast<size_t>(i)] % 2 ? 0.f : 1.f);
}

TEST_F(TabularPrepare, FitsThePipelineOnTheTrainingRowsOnly) {
  auto data = prepare(
      setup(trips_csv(100), {{"features", {"x"}}, {"seed", 3}}, Json::parse(R"([{"standard_scaler": ["x"]}])")));
  double train_mean = 0;
  for (int64_t row : data->train_rows) train_mean += static_cast<double>(row);
  train_mean /= static_cast<double>(data->n_train);
  const double fitted_mean = data->pipeline.to_json()["steps"][0]["state"]["offset"][0].get<double>();
  EXPECT_DOUBLE_EQ(fitted_mean, train_mean);
  EXPECT_NE(fitted_mean, 49.5);  // the mean of all rows
  double scaled_mean = 0;
  for (float v : data->x_train) scaled_mean += v;
  EXPECT_NEAR(scaled_mean / static_cast<double>(data->n_train), 0, 1e-5);
}

TEST_F(TabularPrepare, IsDeterministicForASeedAndDiffersForAnother) {
  const std::string text = trips_csv(60);
  auto first = prepare(setup(text, {{"seed", 7}, {"features", {"x"}}}));
  auto again = prepare(setup(text, {{"seed", 7}, {"features", {"x"}}}));  // another file: not from the cache
  auto other = prepare(setup(text, {{"seed", 8}, {"features", {"x"}}}));
  EXPECT_NE(first.get(), again.get());
  EXPECT_EQ(first->train_rows, again->train_rows);
  EXPECT_EQ(first->x_train, again->x_train);
  EXPECT_NE(first->train_rows, other->train_rows);
}

TEST_F(TabularPrepare, ReturnsTheCachedObjectUntilTheSetupOrTheFileChanges) {
  const Json s = setup(trips_csv(30), {{"features", {"x"}}});
  auto first = prepare(s);
  EXPECT_EQ(prepare(Json::parse(s.dump())).get(), first.get());
  Json other = s;
  other["data"]["seed"] = 5;
  EXPECT_NE(prepare(other).get(), first.get());
  dir_.write("d0.csv", trips_csv(31));
  auto reread = prepare(s);
  EXPECT_NE(reread.get(), first.get());
  EXPECT_EQ(reread->rows, 31);
  EXPECT_EQ(prepare(s).get(), reread.get());
}

TEST_F(TabularPrepare, CheckSetupRaisesWhatPrepareRaises) {
  EXPECT_NO_THROW(check_setup(setup(trips_csv(20), {{"features", {"x"}}})));
  const Json bad = setup(trips_csv(20), {{"label", "tip"}});
  EXPECT_THROW(check_setup(bad), ConfigError);
}

TEST_F(TabularPrepare, NamesAnAbsentLabelOrFeatureColumn) {
  ConfigError label = config_error([&] { prepare(setup("fare_amount,tip_paid\n1,0\n", {{"label", "tip"}})); });
  EXPECT_EQ(std::string(label.what()), path(0) + ": no label column 'tip' (did you mean 'tip_paid'?)");
  EXPECT_EQ(label.key_path(), "data.label");
  ConfigError feature = config_error([&] {
    prepare(setup("fare_amount,tip_paid\n1,0\n", {{"label", "tip_paid"}, {"features", {"fare"}}}));
  });
  EXPECT_EQ(std::string(feature.what()),
            path(1) + ": no column 'fare' for data.features[0] (did you mean 'fare_amount'?)");
  EXPECT_EQ(feature.key_path(), "data.features[0]");
}

// A file that cannot be read is an error about data.path, which a sweep
// file's loader turns into its line.
TEST_F(TabularPrepare, AnUnreadableDataFileIsAnErrorAboutDataPath) {
  const ConfigError device = config_error([&] { prepare({{"data", {{"path", "/dev/zero"}, {"label", "y"}}}}); });
  EXPECT_EQ(std::string(device.what()), "/dev/zero: cannot read: not a regular file (a device, pipe or socket may never end)");
  EXPECT_EQ(device.key_path(), "data.path");
  const ConfigError ragged = config_error([&] { prepare(setup("x,y\n1,0\n1,2,3\n")); });
  EXPECT_EQ(std::string(ragged.what()), path(0) + ":3: row has 3 cells, the header has 2");
  EXPECT_EQ(ragged.key_path(), "data.path");
}

TEST_F(TabularPrepare, AMissingLabelNamesItsLine) {
  EXPECT_EQ(std::string(config_error([&] { prepare(setup("x,y\n1,0\n2,1\n3,NA\n4,1\n")); }).what()),
            path(0) + ":4: the label 'y' is missing");
}

TEST_F(TabularPrepare, RegressionNeedsANumericLabel) {
  EXPECT_EQ(std::string(config_error([&] {
                          prepare(setup("x,y\n1,0.5\n2,abc\n3,1\n", {{"task", "regression"}}));
                        }).what()),
            path(0) + ":3: label 'y' must be a number for task regression, got 'abc'");
}

TEST_F(TabularPrepare, ClassificationNeedsTwoClasses) {
  EXPECT_EQ(std::string(config_error([&] {
                          prepare(setup("x,tip_paid\n1,1\n2,1\n3,1\n", {{"label", "tip_paid"}}));
                        }).what()),
            path(0) + ": label 'tip_paid' has one class (1): classification needs at least 2");
}

TEST_F(TabularPrepare, EachPartNeedsTwoRows) {
  EXPECT_EQ(std::string(config_error([&] {
                          prepare(setup("x,y\n1,1\n2,2\n3,3\n", {{"task", "regression"}}));
                        }).what()),
            path(0) +
                ": 3 rows split into 2 training and 1 validation rows: each part needs at least 2 (more rows, "
                "or another data.valid_fraction)");
}

TEST_F(TabularPrepare, PassesOnPreprocessingErrorsWithTheirKeyPaths) {
  ConfigError e =
      config_error([&] { prepare(setup(trips_csv(20), {}, Json::parse(R"([{"standard_scaler": ["pay"]}])"))); });
  EXPECT_EQ(e.key_path(), "preprocess[0].standard_scaler");
  EXPECT_STREQ(config_error([&] { prepare(setup(trips_csv(20))); }).what(),
               "column 'pay' is categorical: add it to one_hot or ordinal");
  EXPECT_EQ(config_error([&] { prepare(Json::object()); }).key_path(), "data");
}

TEST_F(TabularPrepare, TheSchemaRestoresAPipelineThatTransformsRequestsAlike) {
  auto data = prepare(setup(trips_csv(40), {}, Json::parse(R"([{"one_hot": ["pay"]}, {"standard_scaler": ["x"]}])")));
  const Json schema = data->schema();
  EXPECT_EQ(schema["task"], "classification");
  EXPECT_EQ(schema["label"], "y");
  EXPECT_EQ(schema["classes"], Json::parse(R"(["0", "1"])"));
  EXPECT_EQ(schema["features"], Json::parse(R"(["x", "pay"])"));
  EXPECT_EQ(schema["input_schema"],
            Json::parse(R"([{"name": "x", "kind": "numeric"}, {"name": "pay", "kind": "categorical"}])"));
  EXPECT_EQ(schema["data"],
            Json({{"path", path(0)}, {"rows", 40}, {"train_rows", data->n_train}, {"valid_rows", data->n_valid}}));
  const ModelSchema model = read_model_schema(Json::parse(schema.dump()));
  EXPECT_EQ(model.task, "classification");
  EXPECT_EQ(model.classes, data->classes);
  Json instances = Json::array();
  const char* pays[] = {"cash", "card", "other"};
  for (int64_t row : data->valid_rows) instances.push_back({{"x", row}, {"pay", pays[row % 3]}});
  EXPECT_EQ(model.pipeline.transform(table_from_json(instances, model.pipeline.input_schema())), data->x_valid);
}

TEST(TabularModelSchema, MalformedJsonIsAnError) {
  EXPECT_THROW(read_model_schema(Json::array()), Error);
  EXPECT_THROW(read_model_schema(Json::parse(R"({"task": "regression", "label": "y", "classes": []})")), Error);
  EXPECT_THROW(read_model_schema(Json::parse(R"({"task": "clustering", "label": "y", "classes": [], "pipeline": {}})")),
               Error);
  EXPECT_THROW(read_model_schema(Json::parse(R"({"task": "regression", "label": "y", "classes": [], "pipeline": {}})")),
               Error);
}

TEST(TabularDataSpec, ReadsEveryKeyWithItsDefault) {
  const DataSpec defaults = read_data_spec(Json::parse(R"({"path": "t.csv", "label": "y"})"));
  EXPECT_EQ(defaults.path, "t.csv");
  EXPECT_EQ(defaults.task, "classification");
  EXPECT_TRUE(defaults.features.empty());
  EXPECT_EQ(defaults.valid_fraction, 0.2);
  EXPECT_EQ(defaults.seed, 0u);
  const DataSpec spec = read_data_spec(Json::parse(
      R"({"path": "t.csv", "label": "y", "task": "regression", "features": ["a", "b"], "valid_fraction": 0.5, "seed": 9})"));
  EXPECT_EQ(spec.task, "regression");
  EXPECT_EQ(spec.features, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(spec.valid_fraction, 0.5);
  EXPECT_EQ(spec.seed, 9u);
}

std::pair<std::string, std::string> data_error(const std::string& data) {
  const ConfigError e = config_error([&] { read_data_spec(Json::parse(data)); });
  return {e.key_path(), e.what()};
}

TEST(TabularDataSpec, RejectsBadKeysWithTheirKeyPaths) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(data_error("[1]"), P("data", "data must be a mapping (path, label, ...), got an array"));
  EXPECT_EQ(data_error(R"({"label": "y"})"), P("data.path", "data.path is missing (the CSV file to train on)"));
  EXPECT_EQ(data_error(R"({"path": "t.csv"})"), P("data.label", "data.label is missing (the column to predict)"));
  EXPECT_EQ(data_error(R"({"path": "t.csv", "label": "y", "lable": "z"})"),
            P("data.lable", "data: unknown key 'lable' (did you mean 'label'?)"));
  EXPECT_EQ(data_error(R"({"path": "t.csv", "label": "y", "task": "ranking"})"),
            P("data.task", "data.task must be one of classification, regression, got 'ranking'"));
  EXPECT_EQ(data_error(R"({"path": 3, "label": "y"})"),
            P("data.path", "data.path must be a non-empty string, got '3'"));
  EXPECT_EQ(data_error(R"({"path": "t.csv", "label": "y", "seed": -1})"),
            P("data.seed", "data.seed must be a non-negative integer, got '-1'"));
}

TEST(TabularDataSpec, NeedsAValidFractionStrictlyBetweenZeroAndOne) {
  for (const char* bad : {"0", "1", "1.5", "\"half\""})
    EXPECT_EQ(data_error(std::string(R"({"path": "t.csv", "label": "y", "valid_fraction": )") + bad + "}").first,
              "data.valid_fraction")
        << bad;
  EXPECT_EQ(data_error(R"({"path": "t.csv", "label": "y", "valid_fraction": 1})").second,
            "data.valid_fraction must be a number in (0, 1), got '1'");
}

TEST(TabularDataSpec, RejectsBadFeatureLists) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(data_error(R"({"path": "t.csv", "label": "y", "features": []})"),
            P("data.features", "data.features must be a non-empty list of column names, got a list"));
  EXPECT_EQ(data_error(R"({"path": "t.csv", "label": "y", "features": ["a", "y"]})"),
            P("data.features[1]", "data.features[1]: 'y' is the label; it cannot be a feature"));
  EXPECT_EQ(data_error(R"({"path": "t.csv", "label": "y", "features": ["a", "a"]})"),
            P("data.features[1]", "data.features[1]: 'a' is listed twice"));
}

}  // namespace
}  // namespace tune::tabular
