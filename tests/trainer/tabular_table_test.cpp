// Reading CSV files and JSON rows into tables (trainer/tabular/table.h).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

#include "base/error.h"
#include "test_util.h"
#include "trainer/tabular/table.h"

namespace tune::tabular {
namespace {

using tune::testing::TempDir;

// The what() of the ConfigError `body` throws ("" if it throws none).
template <class F>
std::string config_error(F body) {
  try {
    body();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

class TabularCsv : public ::testing::Test {
 protected:
  Table read(const std::string& text) { return read_csv(dir_.write("data.csv", text)); }
  std::string error_of(const std::string& text) {
    const std::string path = dir_.write("data.csv", text);
    return config_error([&] { read_csv(path); });
  }
  std::string path() const { return dir_.file("data.csv"); }

  TempDir dir_;
};

TEST_F(TabularCsv, ReadsQuotedCellsWithCommasNewlinesAndEscapedQuotes) {
  const Table table = read("name,note\n\"Smith, J\",\"said \"\"hi\"\"\nthen left\"\nplain,\"\"\n");
  ASSERT_EQ(table.rows(), 2);
  const Column& name = *table.find("name");
  const Column& note = *table.find("note");
  EXPECT_EQ(name.kind, Kind::kCategorical);
  EXPECT_EQ(name.strings, (std::vector<std::string>{"Smith, J", "plain"}));
  EXPECT_EQ(note.strings[0], "said \"hi\"\nthen left");
  EXPECT_EQ(note.missing, (std::vector<uint8_t>{0, 1}));  // "" is an empty cell
}

TEST_F(TabularCsv, RecordsTheLineWhereEachRowStarts) {
  const Table table = read("a,b\n1,\"x\ny\nz\"\n2,w\n\n3,v\n");
  EXPECT_EQ(table.lines, (std::vector<int64_t>{2, 5, 7}));
  EXPECT_EQ(table.where(1), path() + ":5");
}

TEST_F(TabularCsv, ReadsCrlfLineEndingsAndNoFinalNewline) {
  const Table table = read("a,b\r\n1,x\r\n2,\"y\r\nz\"\r\n3,w");
  ASSERT_EQ(table.rows(), 3);
  EXPECT_EQ(table.find("a")->numbers, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(table.find("b")->strings, (std::vector<std::string>{"x", "y\r\nz", "w"}));
  EXPECT_EQ(table.lines, (std::vector<int64_t>{2, 3, 5}));
}

TEST_F(TabularCsv, SkipsAUtf8ByteOrderMark) {
  const Table table = read("\xEF\xBB\xBFid,v\n1,2\n");
  ASSERT_NE(table.find("id"), nullptr);
  EXPECT_EQ(table.columns[0].name, "id");
}

TEST_F(TabularCsv, TrimsUnquotedCellsButKeepsSpacesInsideQuotes) {
  const Table table = read(" a , b \n  x y  , \" z \" \n");
  EXPECT_EQ(table.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(table.find("a")->strings[0], "x y");
  EXPECT_EQ(table.find("b")->strings[0], " z ");
}

TEST_F(TabularCsv, TreatsPandasMissingStringsAsMissing) {
  const Table table = read("x\n1\n\"\"\nNA\nn/a\nnan\nNULL\nNone\n2.5\n");
  const Column& x = table.columns[0];
  EXPECT_EQ(x.kind, Kind::kNumeric);
  EXPECT_EQ(x.missing, (std::vector<uint8_t>{0, 1, 1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(x.numbers[0], 1);
  EXPECT_TRUE(std::isnan(x.numbers[3]));
  EXPECT_EQ(x.numbers[7], 2.5);
}

TEST_F(TabularCsv, LowerCaseNoneAndNaAreCategoriesNotMissing) {
  const Table table = read("internet\ndsl\nnone\nna\nNone\n");
  const Column& internet = table.columns[0];
  EXPECT_EQ(internet.kind, Kind::kCategorical);
  EXPECT_EQ(internet.missing, (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(internet.strings[1], "none");
}

TEST_F(TabularCsv, AColumnIsNumericOnlyWhenEveryPresentCellIsAFiniteNumber) {
  const Table table = read("n,e,t,inf,gone\n1,1e3,1,inf,NA\n-2.5,+4,x,2,\n");
  EXPECT_EQ(table.find("n")->kind, Kind::kNumeric);
  EXPECT_EQ(table.find("e")->numbers, (std::vector<double>{1000, 4}));
  EXPECT_EQ(table.find("t")->kind, Kind::kCategorical);
  EXPECT_EQ(table.find("t")->strings, (std::vector<std::string>{"1", "x"}));  // the text, as written
  EXPECT_TRUE(table.find("t")->numbers.empty());
  EXPECT_EQ(table.find("inf")->kind, Kind::kCategorical);
  EXPECT_EQ(table.find("gone")->kind, Kind::kNumeric);  // nothing but missing cells
  EXPECT_EQ(table.find("gone")->missing, (std::vector<uint8_t>{1, 1}));
}

TEST_F(TabularCsv, AColumnThatTurnsCategoricalLateKeepsTheTextOfEarlierRows) {
  const Table table = read("a,b\n1,\"2\"\n2,NA\n3, 4.50 \n4,\"say \"\"x\"\"\"\n5,7\n");
  const Column& b = *table.find("b");
  EXPECT_EQ(table.find("a")->kind, Kind::kNumeric);
  EXPECT_EQ(b.kind, Kind::kCategorical);
  EXPECT_EQ(b.strings, (std::vector<std::string>{"2", "", "4.50", "say \"x\"", "7"}));
  EXPECT_EQ(b.missing, (std::vector<uint8_t>{0, 1, 0, 0, 0}));
}

TEST_F(TabularCsv, ARaggedRowNamesItsLine) {
  EXPECT_EQ(error_of("a,b\n1,2\n1,2,3\n"), path() + ":3: row has 3 cells, the header has 2");
  EXPECT_EQ(error_of("a,b\n1,2\n\"x\ny\"\n"), path() + ":3: row has 1 cell, the header has 2");
}

TEST_F(TabularCsv, AMissingFileCannotBeRead) {
  const std::string missing = dir_.file("nope.csv");
  EXPECT_EQ(config_error([&] { read_csv(missing); }), missing + ": cannot read: No such file or directory");
  EXPECT_EQ(config_error([&] { read_csv(dir_.path()); }), dir_.path() + ": cannot read: it is a directory");
}

// Issue 30, 7: data: {path: /dev/zero} was read without a limit (2.2 GB,
// then std::bad_alloc, or forever).
TEST_F(TabularCsv, OnlyARegularFileOfBoundedSizeIsRead) {
  EXPECT_EQ(config_error([&] { read_csv("/dev/zero"); }),
            "/dev/zero: cannot read: not a regular file (a device, pipe or socket may never end)");
  const std::string fifo = dir_.file("pipe.csv");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(config_error([&] { read_csv(fifo); }),
            fifo + ": cannot read: not a regular file (a device, pipe or socket may never end)")
      << "refused before it is opened for reading (which would wait for a writer)";
  // Larger than the bound: refused by its size (sparse: nothing is written).
  const std::string big = dir_.file("big.csv");
  { std::ofstream(big) << "a\n1\n"; }
  std::filesystem::resize_file(big, kMaxCsvBytes + 1);
  EXPECT_EQ(config_error([&] { read_csv(big); }),
            big + ": cannot read: larger than 1024 MiB (tune holds the table in memory: sample it, or train from "
                  "files with a command trainable)");
}

TEST_F(TabularCsv, AnEmptyFileIsAnError) {
  EXPECT_EQ(error_of(""), path() + ": the file is empty");
  EXPECT_EQ(error_of("\xEF\xBB\xBF\n\r\n"), path() + ": the file is empty");
}

TEST_F(TabularCsv, AHeaderNeedsUniqueNonEmptyNames) {
  EXPECT_EQ(error_of("a,,c\n1,2,3\n"), path() + ":1: column 2 of the header has no name");
  EXPECT_EQ(error_of("a,b,a\n1,2,3\n"), path() + ":1: duplicate column name 'a' (columns 1 and 3)");
}

TEST_F(TabularCsv, AHeaderWithoutDataRowsIsAnError) {
  EXPECT_EQ(error_of("a,b\n"), path() + ": no data rows: the file has only a header");
}

TEST_F(TabularCsv, AnUnterminatedQuoteNamesTheLineWhereItStarts) {
  EXPECT_EQ(error_of("a,b\n1,2\n3,\"oops\n4,5\n"),
            path() + ":3: unterminated quote: the quoted cell starting here never ends");
}

TEST_F(TabularCsv, TextAfterAClosingQuoteIsAnError) {
  EXPECT_EQ(error_of("a\n\"x\"y\n"), path() + ":2: unexpected text after the closing quote of a cell");
}

TEST_F(TabularCsv, ReadsAHundredThousandRowsOfTwentyColumns) {
  const std::string file = dir_.file("big.csv");
  {
    std::ofstream out(file);
    for (int j = 0; j < 20; ++j) out << (j ? "," : "") << "c" << j;
    out << "\n";
    for (int i = 0; i < 100000; ++i) {
      for (int j = 0; j < 20; ++j)
        out << (j ? "," : "") << (j == 19 ? (i % 3 ? "x" : "y") : std::to_string(i * 0.5 + j));
      out << "\n";
    }
  }
  const Table table = read_csv(file);
  ASSERT_EQ(table.rows(), 100000);
  EXPECT_EQ(table.find("c3")->numbers[99999], 99999 * 0.5 + 3);
  EXPECT_EQ(table.find("c19")->kind, Kind::kCategorical);
  EXPECT_EQ(table.lines.back(), 100001);
}

// A cell written the way a careful CSV writer does: always quoted.
std::string quoted(const std::string& cell) {
  std::string out = "\"";
  for (char c : cell) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

RC_GTEST_PROP(TabularCsvRoundTrip, ReadsBackAnyQuotedTextCells, ()) {
  const int columns = *rc::gen::inRange(1, 5);
  const auto cell =
      rc::gen::container<std::string>(rc::gen::element('a', 'b', ' ', ',', '"', '\n', '\r', 'N', 'A', '1'));
  const auto rows = *rc::gen::resize(20, rc::gen::nonEmpty(rc::gen::container<std::vector<std::vector<std::string>>>(
                                             rc::gen::container<std::vector<std::string>>(columns, cell))));
  TempDir dir;
  std::string text;
  for (int j = 0; j < columns; ++j) text += (j ? "," : "") + std::string("c") + std::to_string(j);
  text += "\r\n";
  for (size_t j = 0; j < static_cast<size_t>(columns); ++j)
    text += (j ? "," : "") + quoted("text");  // keeps columns categorical
  for (const auto& row : rows) {
    text += "\n";
    for (size_t j = 0; j < row.size(); ++j) text += (j ? "," : "") + quoted(row[j]);
  }
  const Table table = read_csv(dir.write("p.csv", text));
  RC_ASSERT(table.rows() == static_cast<int64_t>(rows.size() + 1));
  for (size_t j = 0; j < static_cast<size_t>(columns); ++j) {
    const Column& column = table.columns[j];
    RC_ASSERT(column.kind == Kind::kCategorical);
    for (size_t i = 0; i < rows.size(); ++i) {
      const bool missing = is_missing_token(rows[i][j]);
      RC_ASSERT(column.missing[i + 1] == (missing ? 1 : 0));
      RC_ASSERT(column.strings[i + 1] == (missing ? std::string() : rows[i][j]));
    }
  }
}

RC_GTEST_PROP(TabularCsvRoundTrip, ReadsBackAnyFiniteNumberWrittenInFull, (const std::vector<double>& values)) {
  RC_PRE(!values.empty());
  TempDir dir;
  std::string text = "x\n";
  for (double v : values) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.17g\n", std::isfinite(v) ? v : 0.0);
    text += buffer;
  }
  const Table table = read_csv(dir.write("n.csv", text));
  RC_ASSERT(table.columns[0].kind == Kind::kNumeric);
  for (size_t i = 0; i < values.size(); ++i)
    RC_ASSERT(table.columns[0].numbers[i] == (std::isfinite(values[i]) ? values[i] : 0.0));
}

TEST(TabularTable, WhereNamesTheFileLineOrTheRequestInstance) {
  Table csv;
  csv.source = "trips.csv";
  csv.lines = {2, 4};
  EXPECT_EQ(csv.where(1), "trips.csv:4");
  Table request;
  request.source = "request";
  EXPECT_EQ(request.where(3), "request: instance 3");
}

TEST(TabularTable, NumberTextIsTheShortestTextThatReadsBack) {
  EXPECT_EQ(number_text(1), "1");
  EXPECT_EQ(number_text(0.5), "0.5");
  EXPECT_EQ(number_text(-3), "-3");
  EXPECT_EQ(number_text(0.1), "0.1");
}

const std::vector<ColumnSchema> kTripSchema = {{"fare_amount", Kind::kNumeric}, {"payment_type", Kind::kCategorical}};

TEST(TabularJson, ReadsNumbersStringsBoolsAndNulls) {
  const Json instances = Json::parse(R"([
      {"fare_amount": 12.5, "payment_type": "cash"},
      {"fare_amount": "7", "payment_type": 2},
      {"fare_amount": true, "payment_type": false},
      {"fare_amount": null, "payment_type": "NA"},
      {}])");
  const Table table = table_from_json(instances, kTripSchema);
  EXPECT_EQ(table.source, "request");
  EXPECT_TRUE(table.lines.empty());
  ASSERT_EQ(table.rows(), 5);
  const Column& fare = table.columns[0];
  const Column& payment = table.columns[1];
  EXPECT_EQ(fare.name, "fare_amount");
  EXPECT_EQ(fare.kind, Kind::kNumeric);
  EXPECT_EQ(fare.missing, (std::vector<uint8_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ(fare.numbers[0], 12.5);
  EXPECT_EQ(fare.numbers[1], 7);
  EXPECT_EQ(fare.numbers[2], 1);
  EXPECT_TRUE(std::isnan(fare.numbers[4]));
  EXPECT_EQ(payment.kind, Kind::kCategorical);
  EXPECT_EQ(payment.strings, (std::vector<std::string>{"cash", "2", "false", "", ""}));
  EXPECT_EQ(payment.missing, (std::vector<uint8_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ(table.where(4), "request: instance 4");
}

TEST(TabularJson, AnUnknownKeyNamesTheInstanceAndSuggestsTheFeature) {
  const Json instances = Json::parse(R"([{}, {}, {}, {"fare": 1}])");
  EXPECT_EQ(config_error([&] { table_from_json(instances, kTripSchema); }),
            "instance 3: unknown feature 'fare' (did you mean 'fare_amount'?)");
  EXPECT_EQ(config_error([&] { table_from_json(Json::parse(R"([{"paymant_type": "x"}])"), kTripSchema); }),
            "instance 0: unknown feature 'paymant_type' (did you mean 'payment_type'?)");
  EXPECT_EQ(config_error([&] { table_from_json(Json::parse(R"([{"zzz": 1}])"), kTripSchema); }),
            "instance 0: unknown feature 'zzz' (features: fare_amount, payment_type)");
}

TEST(TabularJson, RejectsWhatIsNotAnArrayOfFlatObjects) {
  EXPECT_EQ(config_error([] { table_from_json(Json::object(), kTripSchema); }),
            "instances must be an array of objects, got an object");
  EXPECT_EQ(config_error([] { table_from_json(Json::parse("[{}, 3]"), kTripSchema); }),
            "instance 1: must be an object mapping feature names to values, got a number");
  EXPECT_EQ(config_error([] { table_from_json(Json::parse(R"([{"payment_type": [1]}])"), kTripSchema); }),
            "instance 0: feature 'payment_type' must be a number, string, bool or null, got an array");
  EXPECT_EQ(config_error([] { table_from_json(Json::parse(R"([{"fare_amount": {"a": 1}}])"), kTripSchema); }),
            "instance 0: feature 'fare_amount' must be a number, string, bool or null, got an object");
}

TEST(TabularJson, TextInANumericColumnMustBeANumber) {
  EXPECT_EQ(config_error([] { table_from_json(Json::parse(R"([{}, {"fare_amount": "cheap"}])"), kTripSchema); }),
            "instance 1: feature 'fare_amount' must be a number, got \"cheap\"");
}

}  // namespace
}  // namespace tune::tabular
