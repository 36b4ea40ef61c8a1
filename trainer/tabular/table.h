// Tables of a user's data: a CSV file read into typed columns, or the JSON
// rows of a serve request, both with the location of every row for messages.
//
//   tune::tabular::Table table = tune::tabular::read_csv("/data/trips.csv");
//   const tune::tabular::Column* fare = table.find("fare_amount");
//   if (fare && fare->kind == tune::tabular::Kind::kNumeric && fare->missing[0])
//     throw tune::ConfigError(table.where(0) + ": fare_amount is missing");
//
// A Table is a plain value (copyable, no hidden state); reading one is
// linear in the size of the file. Nothing here is shared between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"

namespace tune::tabular {

enum class Kind { kNumeric, kCategorical };

// "numeric" / "categorical", and back (throws tune::Error for anything else).
std::string kind_name(Kind kind);
Kind kind_from_name(const std::string& name);

struct Column {
  std::string name;
  // Numeric when every non-missing cell parses as a number (strtod, the
  // whole cell, finite); a column of missing cells only is numeric.
  Kind kind = Kind::kNumeric;
  std::vector<double> numbers;       // kNumeric: the value; NaN where missing. Empty for kCategorical.
  std::vector<std::string> strings;  // kCategorical: the cell text; "" where missing. Empty for kNumeric.
  // 1 where the cell is missing: empty, or one of pandas' default missing
  // strings (see is_missing_token). Always one entry per row.
  std::vector<uint8_t> missing;

  int64_t size() const { return static_cast<int64_t>(missing.size()); }
};

struct Table {
  std::string source;  // the CSV's path (for messages); "request" for JSON input
  std::vector<Column> columns;
  // The source line of each row (header = line 1; a row whose quoted cells
  // span lines has the line where it starts). Empty for JSON input.
  std::vector<int64_t> lines;

  // Rows (0 for a table without columns).
  int64_t rows() const;
  // The column called `name`, or nullptr if absent. The pointer lives as
  // long as `columns` is not resized.
  const Column* find(const std::string& name) const;
  // The column names, in order.
  std::vector<std::string> names() const;
  // "path:line" of row r (or "request: instance r" for JSON input), for messages.
  std::string where(int64_t row) const;
};

// True for a cell text that means "missing": empty, or one of pandas'
// default missing strings, case as written: NA, N/A, n/a, NaN, nan, -NaN,
// -nan, NULL, null, None, <NA>, #N/A, #NA ("none" is a category).
bool is_missing_token(const std::string& text);
// The number a cell text spells (strtod over the whole text, finite), or
// false. Leading/trailing spaces are not accepted.
bool parse_number(const std::string& text, double* value);
// A number as category text: the shortest text that reads back as the same
// double ("1", "0.5", "1e+20"), so a number column used as categories and a
// JSON number name the same category.
std::string number_text(double value);
// " (did you mean 'X'?)" for the closest of `names` to `word` (tune::did_you_mean),
// falling back to a name that starts with or contains `word` ("fare" ->
// "fare_amount"), then to a name of 3+ characters `word` starts with; ""
// when none fits.
std::string did_you_mean_column(const std::string& word, const std::vector<std::string>& names);
// A JSON value's kind for messages: "null", "a bool", "a number", "a string",
// "an array", "an object".
std::string json_kind(const Json& value);

// Reads a CSV file with a header row: RFC 4180 (comma separator, "..."
// quoting with "" escapes, quoted newlines, CRLF or LF (a lone CR ends a
// line too), optional final newline), a UTF-8 BOM skipped, cells trimmed of surrounding spaces and tabs
// when unquoted (and around the quotes of a quoted cell). Lines with no
// characters at all are skipped. Column kinds are detected as described at
// Column.
//
// Reads only a regular file of at most kMaxCsvBytes (a device such as
// /dev/zero, a pipe or a socket is refused: it may never end).
// Throws tune::ConfigError (one line, "PATH:LINE: message" where a line
// applies) for: a missing/unreadable file ("PATH: cannot read ..."), one that
// is not a regular file or is larger than kMaxCsvBytes, an empty file, a header with an empty or duplicate column name, no data rows,
// a ragged row ("PATH:17: row has 5 cells, the header has 6"), an
// unterminated quote, text after a closing quote.
Table read_csv(const std::string& path);
inline constexpr size_t kMaxCsvBytes = size_t{1} << 30;  // 1 GiB: the table is held in memory
// The same for CSV text already in memory; `path` names it in messages.
Table parse_csv(std::string_view text, const std::string& path);

// Column kinds a model expects (saved with the fitted pipeline).
struct ColumnSchema {
  std::string name;
  Kind kind;
};

// Rows from JSON instances (serve requests): `instances` must be an array of
// objects; each object maps column name -> number | string | bool | null
// (null = missing). The result has exactly `schema`'s columns in that order,
// source "request" and no lines; a key absent from an instance is a missing
// cell. Numeric columns take numbers, bools (1/0) and strings that parse as a
// number or are a missing token; categorical columns take strings (a missing
// token is missing), numbers (number_text) and bools ("true"/"false").
//
// Throws tune::ConfigError, one line naming the instance index and key, for:
// not an array / not an object, an unknown key ("instance 3: unknown feature
// 'fare' (did you mean 'fare_amount'?)"), a string where a numeric column is
// expected (unless it parses as a number), a nested array/object value.
Table table_from_json(const Json& instances, const std::vector<ColumnSchema>& schema);

}  // namespace tune::tabular
