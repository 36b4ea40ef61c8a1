#include "trainer/tabular/table.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "base/error.h"
#include "base/names.h"

namespace tune::tabular {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// pandas' default missing-value strings (read_csv na_values), case as
// written: "none" or "na" in lower case can be a real category.
bool missing_token(std::string_view text) {
  static constexpr std::string_view kTokens[] = {"NA",  "N/A",  "n/a",  "NaN", "nan", "-NaN", "-nan",
                                                 "NULL", "null", "None", "<NA>", "#N/A", "#NA"};
  if (text.empty()) return true;
  for (std::string_view token : kTokens) {
    if (text == token) return true;
  }
  return false;
}

bool number_in(std::string_view text, double* value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return false;
  const char* begin = text.data();
  const char* end = begin + text.size();
  // from_chars is the fast path; strtod takes what it does not ("+1", hex).
  double parsed = 0;
  auto [stop, error] = std::from_chars(begin, end, parsed);
  if (error != std::errc() || stop != end) {
    const std::string copy(text);  // strtod needs the terminating NUL
    char* strtod_end = nullptr;
    parsed = std::strtod(copy.c_str(), &strtod_end);
    if (strtod_end != copy.c_str() + copy.size()) return false;
  }
  if (!std::isfinite(parsed)) return false;
  *value = parsed;
  return true;
}

// A file's bytes.
class FileText {
 public:
  explicit FileText(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO: no wait for a writer
    if (fd < 0) fail(path);
    struct stat info {};
    if (::fstat(fd, &info) != 0) fail(path, fd);
    if (S_ISDIR(info.st_mode)) {
      ::close(fd);
      throw ConfigError(path, 0, "cannot read: it is a directory");
    }
    if (!S_ISREG(info.st_mode)) {
      ::close(fd);
      throw ConfigError(path, 0, "cannot read: not a regular file (a device, pipe or socket may never end)");
    }
    if (static_cast<uint64_t>(info.st_size) > kMaxCsvBytes) too_large(path, fd);
    // Read, not mapped: a mapped file truncated by another process while it
    // is parsed would end the process with SIGBUS.
    copy_.reserve(static_cast<size_t>(info.st_size));
    char buffer[1 << 16];
    ssize_t got = 0;
    while ((got = ::read(fd, buffer, sizeof buffer)) != 0) {
      if (got > 0)
        copy_.append(buffer, static_cast<size_t>(got));
      else if (errno != EINTR)
        fail(path, fd);
      if (copy_.size() > kMaxCsvBytes) too_large(path, fd);  // it grew while being read
    }
    ::close(fd);
    text_ = copy_;
  }
  FileText(const FileText&) = delete;
  FileText& operator=(const FileText&) = delete;

  std::string_view text() const { return text_; }

 private:
  [[noreturn]] static void too_large(const std::string& path, int fd) {
    ::close(fd);
    throw ConfigError(path, 0, "cannot read: larger than " + std::to_string(kMaxCsvBytes >> 20) +
                                   " MiB (tune holds the table in memory: sample it, or train from files with a command trainable)");
  }

  [[noreturn]] static void fail(const std::string& path, int fd = -1) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    throw ConfigError(path, 0, std::string("cannot read: ") + std::strerror(error));
  }

  std::string copy_;
  std::string_view text_;
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_line_end(char c) { return c == '\n' || c == '\r'; }

// RFC 4180 rows, one at a time, as views: into the file's text, or for a
// quoted cell with "" escapes into the parser's own copy. Every character is
// looked at a bounded number of times, so reading is linear in the file's size.
class CsvParser {
 public:
  CsvParser(std::string_view text, const std::string& path, size_t start) : text_(text), path_(path), pos_(start) {}

  // The next row's cells and the line where it starts; false at the end of
  // the input. Lines without characters are skipped. The views live until
  // the next call (and as long as the text).
  bool next_row(std::vector<std::string_view>& cells, int64_t& line) {
    unescaped_.clear();
    while (pos_ < text_.size() && is_line_end(text_[pos_])) consume_line_end();
    if (pos_ >= text_.size()) return false;
    line = line_;
    cells.clear();
    while (true) {
      cells.push_back(read_cell());
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size()) consume_line_end();
      return true;
    }
  }

 private:
  void consume_line_end() {
    if (text_[pos_] == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') ++pos_;
    ++pos_;
    ++line_;
  }

  void skip_blanks() {
    while (pos_ < text_.size() && is_blank(text_[pos_])) ++pos_;
  }

  std::string_view read_cell() {
    skip_blanks();
    if (pos_ < text_.size() && text_[pos_] == '"') {
      const std::string_view cell = read_quoted();
      skip_blanks();
      if (pos_ < text_.size() && text_[pos_] != ',' && !is_line_end(text_[pos_]))
        throw ConfigError(path_, static_cast<int>(line_), "unexpected text after the closing quote of a cell");
      return cell;
    }
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != ',' && !is_line_end(text_[pos_])) ++pos_;
    size_t end = pos_;
    while (end > start && is_blank(text_[end - 1])) --end;
    return text_.substr(start, end - start);
  }

  std::string_view read_quoted() {
    const int64_t start_line = line_;
    const size_t start = ++pos_;  // after the opening quote
    std::string* copy = nullptr;  // only a cell with "" escapes needs one
    while (true) {
      const size_t quote = text_.find('"', pos_);
      if (quote == std::string_view::npos)
        throw ConfigError(path_, static_cast<int>(start_line),
                          "unterminated quote: the quoted cell starting here never ends");
      line_ += std::count(text_.begin() + static_cast<std::ptrdiff_t>(pos_),
                          text_.begin() + static_cast<std::ptrdiff_t>(quote), '\n');
      const bool escaped = quote + 1 < text_.size() && text_[quote + 1] == '"';
      if (!escaped && !copy) {
        pos_ = quote + 1;
        return text_.substr(start, quote - start);
      }
      if (!copy) copy = &unescaped_.emplace_back();
      copy->append(text_.substr(pos_, quote - pos_));
      pos_ = quote + 1;
      if (!escaped) return *copy;
      *copy += '"';
      ++pos_;
    }
  }

  std::string_view text_;
  const std::string& path_;
  size_t pos_;
  int64_t line_ = 1;
  std::deque<std::string> unescaped_;  // a deque: its strings never move
};

std::vector<std::string> read_header(CsvParser& parser, const std::string& path) {
  std::vector<std::string_view> cells;
  int64_t line = 0;
  if (!parser.next_row(cells, line)) throw ConfigError(path, 0, "the file is empty");
  std::vector<std::string> names(cells.begin(), cells.end());
  std::unordered_map<std::string, size_t> seen;
  for (size_t j = 0; j < names.size(); ++j) {
    if (names[j].empty())
      throw ConfigError(path, static_cast<int>(line), "column " + std::to_string(j + 1) + " of the header has no name");
    auto [it, fresh] = seen.emplace(names[j], j);
    if (!fresh)
      throw ConfigError(path, static_cast<int>(line),
                        "duplicate column name '" + names[j] + "' (columns " + std::to_string(it->second + 1) +
                            " and " + std::to_string(j + 1) + ")");
  }
  return names;
}

// One column while the rows stream in: numeric until a present cell is no
// number; then categorical, with the text of the rows before that cell
// filled in by a second pass (fill_texts), usually over the first row only.
struct ColumnBuilder {
  Column column;
  int64_t categorical_from = -1;  // the row where it turned categorical

  void add(std::string_view text, int64_t row) {
    const bool missing = missing_token(text);
    column.missing.push_back(missing);
    if (column.kind == Kind::kCategorical) {
      column.strings.emplace_back(missing ? std::string_view() : text);
      return;
    }
    double number = kNaN;
    if (missing || number_in(text, &number)) {
      column.numbers.push_back(number);
      return;
    }
    column.kind = Kind::kCategorical;
    categorical_from = row;
    std::vector<double>().swap(column.numbers);
    column.strings.resize(static_cast<size_t>(row));  // filled in by fill_texts()
    column.strings.emplace_back(text);
  }
};

// The second pass: the text of rows before each column turned categorical.
void fill_texts(std::vector<ColumnBuilder>& columns, CsvParser parser) {
  int64_t rows = 0;
  for (const ColumnBuilder& c : columns) rows = std::max(rows, c.categorical_from);
  std::vector<std::string_view> cells;
  int64_t line = 0;
  for (int64_t row = 0; row < rows && parser.next_row(cells, line); ++row) {
    for (size_t j = 0; j < columns.size(); ++j) {
      Column& column = columns[j].column;
      if (row < columns[j].categorical_from && !column.missing[static_cast<size_t>(row)])
        column.strings[static_cast<size_t>(row)] = cells[j];
    }
  }
}

std::string instance_prefix(size_t i) { return "instance " + std::to_string(i) + ": "; }

// Sets the last cell of `column` from a JSON value (the cell starts missing).
void set_cell(Column& column, const Json& value, size_t instance, const std::string& key) {
  if (value.is_null()) return;
  if (value.is_structured())
    throw ConfigError(instance_prefix(instance) + "feature '" + key + "' must be a number, string, bool or null, got " +
                      json_kind(value));
  const bool is_missing = value.is_string() && is_missing_token(value.get<std::string>());
  if (is_missing) return;
  column.missing.back() = 0;
  if (column.kind == Kind::kNumeric) {
    double number = 0;
    if (value.is_boolean()) {
      number = value.get<bool>() ? 1 : 0;
    } else if (value.is_number()) {
      number = value.get<double>();
    } else if (!parse_number(value.get<std::string>(), &number)) {
      throw ConfigError(instance_prefix(instance) + "feature '" + key + "' must be a number, got " + value.dump());
    }
    column.numbers.back() = number;
    return;
  }
  if (value.is_string())
    column.strings.back() = value.get<std::string>();
  else if (value.is_boolean())
    column.strings.back() = value.get<bool>() ? "true" : "false";
  else
    column.strings.back() = number_text(value.get<double>());
}

std::string unknown_feature_hint(const std::string& key, const std::vector<std::string>& names) {
  const std::string hint = did_you_mean_column(key, names);
  if (!hint.empty() || names.size() > 20) return hint;
  return " (features: " + join_names(names) + ")";
}

}  // namespace

std::string json_kind(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a bool";
    default:
      return "a number";
  }
}

std::string kind_name(Kind kind) { return kind == Kind::kNumeric ? "numeric" : "categorical"; }

Kind kind_from_name(const std::string& name) {
  if (name == "numeric") return Kind::kNumeric;
  if (name == "categorical") return Kind::kCategorical;
  throw Error("unknown column kind '" + name + "' (numeric or categorical)");
}

int64_t Table::rows() const { return columns.empty() ? 0 : columns.front().size(); }

const Column* Table::find(const std::string& name) const {
  for (const Column& column : columns)
    if (column.name == name) return &column;
  return nullptr;
}

std::vector<std::string> Table::names() const {
  std::vector<std::string> out;
  out.reserve(columns.size());
  for (const Column& column : columns) out.push_back(column.name);
  return out;
}

std::string Table::where(int64_t row) const {
  if (lines.empty() || row < 0 || row >= static_cast<int64_t>(lines.size()))
    return source + ": instance " + std::to_string(row);
  return source + ":" + std::to_string(lines[static_cast<size_t>(row)]);
}

bool is_missing_token(const std::string& text) { return missing_token(text); }

bool parse_number(const std::string& text, double* value) { return number_in(text, value); }

std::string number_text(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string did_you_mean_column(const std::string& word, const std::vector<std::string>& names) {
  const std::string hint = did_you_mean(word, names);
  if (!hint.empty() || word.size() < 3) return hint;
  for (const std::string& name : names)
    if (name.rfind(word, 0) == 0) return " (did you mean '" + name + "'?)";
  for (const std::string& name : names)
    if (name.find(word) != std::string::npos) return " (did you mean '" + name + "'?)";
  for (const std::string& name : names)
    if (name.size() >= 3 && word.rfind(name, 0) == 0) return " (did you mean '" + name + "'?)";
  return "";
}

Table read_csv(const std::string& path) {
  const FileText file(path);
  return parse_csv(file.text(), path);
}

Table parse_csv(std::string_view text, const std::string& path) {
  const size_t start = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  CsvParser parser(text, path, start);
  const std::vector<std::string> names = read_header(parser, path);
  const CsvParser data_start = parser;
  // Reserving for every line keeps the columns from being copied as they grow.
  const auto lines_at_most = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  std::vector<ColumnBuilder> columns(names.size());
  for (size_t j = 0; j < names.size(); ++j) {
    columns[j].column.name = names[j];
    columns[j].column.numbers.reserve(lines_at_most);
    columns[j].column.missing.reserve(lines_at_most);
  }
  Table table;
  table.source = path;
  table.lines.reserve(lines_at_most);
  std::vector<std::string_view> row;
  int64_t line = 0;
  while (parser.next_row(row, line)) {
    if (row.size() != names.size())
      throw ConfigError(path, static_cast<int>(line),
                        "row has " + std::to_string(row.size()) + (row.size() == 1 ? " cell" : " cells") +
                            ", the header has " + std::to_string(names.size()));
    const auto index = static_cast<int64_t>(table.lines.size());
    for (size_t j = 0; j < row.size(); ++j) columns[j].add(row[j], index);
    table.lines.push_back(line);
  }
  if (table.lines.empty()) throw ConfigError(path, 0, "no data rows: the file has only a header");
  fill_texts(columns, data_start);
  table.columns.reserve(names.size());
  for (ColumnBuilder& column : columns) table.columns.push_back(std::move(column.column));
  return table;
}

Table table_from_json(const Json& instances, const std::vector<ColumnSchema>& schema) {
  if (!instances.is_array()) throw ConfigError("instances must be an array of objects, got " + json_kind(instances));
  Table table;
  table.source = "request";
  std::unordered_map<std::string, size_t> index;
  std::vector<std::string> names;
  for (const ColumnSchema& column : schema) {
    index.emplace(column.name, table.columns.size());
    names.push_back(column.name);
    table.columns.push_back(Column{column.name, column.kind, {}, {}, {}});
  }
  for (size_t i = 0; i < instances.size(); ++i) {
    const Json& instance = instances[i];
    if (!instance.is_object())
      throw ConfigError(instance_prefix(i) + "must be an object mapping feature names to values, got " +
                        json_kind(instance));
    for (Column& column : table.columns) {
      column.missing.push_back(1);
      if (column.kind == Kind::kNumeric)
        column.numbers.push_back(kNaN);
      else
        column.strings.emplace_back();
    }
    for (const auto& item : instance.items()) {
      auto it = index.find(item.key());
      if (it == index.end())
        throw ConfigError(instance_prefix(i) + "unknown feature '" + item.key() + "'" +
                          unknown_feature_hint(item.key(), names));
      set_cell(table.columns[it->second], item.value(), i, item.key());
    }
  }
  return table;
}

}  // namespace tune::tabular
