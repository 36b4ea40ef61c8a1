#include "tuner/spec/yaml_document.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "base/error.h"
#include "base/json.h"

namespace tune::internal {
namespace {

bool all_digits(const std::string& s, size_t from) {
  if (from >= s.size()) return false;
  for (size_t i = from; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool is_decimal(const std::string& s) {
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++frac_digits;
    if (int_digits == 0 && frac_digits == 0) return false;
  } else if (int_digits == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    return all_digits(s, i);
  }
  return i == s.size();
}

// YAML 1.2 core schema for a plain (unquoted) scalar.
OrderedJson plain_scalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const size_t sign = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (all_digits(s, sign)) {
    errno = 0;
    const long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno != ERANGE) return static_cast<int64_t>(v);
    if (s[0] != '-') {
      errno = 0;
      const unsigned long long u = std::strtoull(s.c_str(), nullptr, 10);
      if (errno != ERANGE) return static_cast<uint64_t>(u);
    }
    return std::strtod(s.c_str(), nullptr);  // beyond 64 bits: a float, as YAML loaders do
  }
  if (is_decimal(s)) return std::strtod(s.c_str(), nullptr);
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf" || s == "+.Inf" || s == "+.INF")
    return std::numeric_limits<double>::infinity();
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF") return -std::numeric_limits<double>::infinity();
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::numeric_limits<double>::quiet_NaN();
  return s;
}

bool valid_utf8(const std::string& s) {
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t extra;
    uint32_t code;
    if (c >= 0xc2 && c <= 0xdf) {
      extra = 1, code = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2, code = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3, code = c & 0x07;
    } else {
      return false;
    }
    if (n - i <= extra) return false;
    for (size_t k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(s[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = (code << 6) | (next & 0x3f);
    }
    if ((extra == 2 && (code < 0x800 || (code >= 0xd800 && code <= 0xdfff))) ||
        (extra == 3 && (code < 0x10000 || code > 0x10ffff)))
      return false;
    i += extra + 1;
  }
  return true;
}

// Builds the document from parser events. A frame per open mapping or list.
class Builder : public YAML::EventHandler {
 public:
  Builder(std::string file, const YamlLimits& limits, YamlDocument& doc, const std::string& text)
      : file_(std::move(file)), limits_(limits), doc_(doc), text_(text) {}

  bool started() const { return started_; }
  int document_line() const { return document_line_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    started_ = true;
    document_line_ = mark.line + 1;
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const int line = line_of(mark);
    budget(line, 1);
    Node node{OrderedJson(nullptr), line, anchor, 1, {}};
    node.null = true;
    add(std::move(node));
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const int line = line_of(mark);
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {
      for (const auto& frame : frames_)
        if (frame.anchor == anchor) fail(line, "alias *" + anchor_name(anchor) + " refers to a node that contains it (recursive)");
      fail(line, "unknown alias");
    }
    budget(line, it->second.nodes);
    add(Node{it->second.value, line, 0, it->second.nodes, {}});
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    const int line = line_of(mark);
    if (!valid_utf8(value)) fail(line, "text is not valid UTF-8");
    // yaml-cpp ends a quoted scalar left open at the end of the file there,
    // swallowing the keys after it: an error at the quote's line instead.
    if (tag == "!" && !mark.is_null() && !quote_closed(static_cast<size_t>(mark.pos)))
      fail(line, "unterminated quoted string (no closing quote before the end of the file)");
    budget(line, 1);
    Node node{OrderedJson(nullptr), line, anchor, 1, {}};
    node.quoted = tag == "!" || tag == "tag:yaml.org,2002:str";
    node.value = node.quoted ? OrderedJson(value) : plain_scalar(value);
    node.text = value;
    add(std::move(node));
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(OrderedJson::array(), line_of(mark), anchor);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(OrderedJson::object(), line_of(mark), anchor);
  }
  void OnMapEnd() override { close(); }

  void OnAnchor(const YAML::Mark&, const std::string& name) override { last_anchor_name_ = name; }

 private:
  struct Frame {
    OrderedJson value;
    std::string path;
    int line = 0;
    YAML::anchor_t anchor = 0;
    std::string anchor_name;
    size_t nodes = 1;
    // Mappings: the key waiting for its value, and the keys seen so far.
    bool has_key = false;
    std::string key;
    int key_line = 0;
    bool merge_key = false;
    std::unordered_set<std::string> keys;
    // `<<` sources, with the position in `value` they are spliced in at.
    std::vector<std::pair<size_t, OrderedJson>> merges;
  };
  struct Anchored {
    OrderedJson value;
    size_t nodes = 1;
  };
  // A finished value on its way into its parent.
  struct Node {
    OrderedJson value;
    int line = 0;
    YAML::anchor_t anchor = 0;
    size_t nodes = 1;     // values in it (already charged to the budget)
    std::string text;     // scalars: as written (a key's name)
    bool quoted = false;  // scalars
    bool null = false;    // an empty value
  };

  [[noreturn]] void fail(int line, const std::string& message) const { throw ConfigError(file_, line, message); }
  // Whether the quoted scalar whose opening quote is at `pos` of the text is
  // closed ('' in single quotes and \" in double quotes are no ends).
  bool quote_closed(size_t pos) const {
    if (pos >= text_.size() || (text_[pos] != '"' && text_[pos] != '\'')) return true;  // not where we think
    const char quote = text_[pos];
    for (size_t i = pos + 1; i < text_.size(); ++i) {
      if (quote == '"' && text_[i] == '\\') {
        ++i;
      } else if (text_[i] == quote) {
        if (quote == '\'' && i + 1 < text_.size() && text_[i + 1] == '\'') {
          ++i;
        } else {
          return true;
        }
      }
    }
    return false;
  }

  static int line_of(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.line + 1; }

  std::string anchor_name(YAML::anchor_t anchor) const {
    auto it = names_.find(anchor);
    return it == names_.end() ? std::to_string(anchor) : it->second;
  }

  void budget(int line, size_t nodes) {
    nodes_ += nodes;
    if (nodes_ > limits_.max_nodes)
      fail(line, "the document has more than " + std::to_string(limits_.max_nodes) +
                     " values once its aliases are expanded");
  }

  // The path a new child of the innermost frame gets.
  std::string child_path() const {
    if (frames_.empty()) return "";
    const Frame& top = frames_.back();
    if (top.value.is_array()) return top.path + "[" + std::to_string(top.value.size()) + "]";
    return top.path.empty() ? top.key : top.path + "." + top.key;
  }

  void open(OrderedJson empty, int line, YAML::anchor_t anchor) {
    if (static_cast<int>(frames_.size()) >= limits_.max_depth)
      fail(line, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    if (!frames_.empty() && frames_.back().value.is_object() && !frames_.back().has_key)
      fail(line, std::string("keys must be strings, got ") + (empty.is_object() ? "a mapping" : "a list"));
    budget(line, 1);
    Frame frame;
    frame.value = std::move(empty);
    frame.path = child_path();
    frame.line = line;
    frame.anchor = anchor;
    if (anchor) names_[anchor] = last_anchor_name_;
    frames_.push_back(std::move(frame));
  }

  void close() {
    Frame frame = std::move(frames_.back());
    frames_.pop_back();
    if (frame.value.is_object() && frame.has_key) fail(frame.key_line, "key '" + frame.key + "' has no value");
    if (!frame.merges.empty()) splice_merges(frame);
    add(Node{std::move(frame.value), frame.line, frame.anchor, frame.nodes, {}});
  }

  // `<<: *defaults` (or a list of them): the merged mappings' keys that the
  // mapping does not set itself, in place of the `<<` key.
  void splice_merges(Frame& frame) {
    OrderedJson merged = OrderedJson::object();
    using Entries = OrderedJson::object_t::Container;
    const Entries& own = frame.value.get_ref<OrderedJson::object_t&>();
    size_t next = 0;
    auto copy_own = [&](size_t until) {
      for (; next < until && next < own.size(); ++next) append(merged, own[next].first, own[next].second);
    };
    std::unordered_set<std::string> inherited;
    for (auto& [position, source] : frame.merges) {
      copy_own(position);
      for (const auto& [key, value] : source.items()) {
        if (frame.keys.count(key) || !inherited.insert(key).second) continue;
        append(merged, key, value);
        doc_.lines.record(frame.path.empty() ? key : frame.path + "." + key, {frame.line, frame.line});
      }
    }
    copy_own(frame.value.size());
    frame.value = std::move(merged);
  }

  void add(Node node) {
    if (node.anchor) {
      names_.emplace(node.anchor, last_anchor_name_);
      anchors_[node.anchor] = {node.value, node.nodes};
    }
    if (frames_.empty()) {
      doc_.root = std::move(node.value);
      doc_.root_line = std::max(1, node.line);
      return;
    }
    Frame& top = frames_.back();
    top.nodes += node.nodes;
    if (top.value.is_array()) {
      doc_.lines.record(child_path(), {0, node.line});
      top.value.push_back(std::move(node.value));
      return;
    }
    if (!top.has_key) {  // this node is a key
      if (node.value.is_structured()) fail(node.line, "keys must be strings");
      top.key = node.null ? "" : node.text;
      top.key_line = node.line;
      top.has_key = true;
      top.merge_key = !node.quoted && node.text == "<<";
      return;
    }
    top.has_key = false;
    if (top.merge_key) {
      merge_from(top, node.value, top.key_line);
      return;
    }
    if (!top.keys.insert(top.key).second) fail(top.key_line, "duplicate key '" + top.key + "'");
    doc_.lines.record(child_path(), {top.key_line, node.null ? top.key_line : node.line});
    append(top.value, top.key, std::move(node.value));
  }

  void merge_from(Frame& frame, const OrderedJson& value, int line) {
    const std::string what = "<< (merge) takes a mapping or a list of mappings";
    if (value.is_object()) {
      frame.merges.emplace_back(frame.value.size(), value);
    } else if (value.is_array()) {
      for (const auto& item : value) {
        if (!item.is_object()) fail(line, what);
        frame.merges.emplace_back(frame.value.size(), item);
      }
    } else {
      fail(line, what);
    }
  }

  // Adds a key known to be new: ordered_json's own insert searches linearly.
  static void append(OrderedJson& object, const std::string& key, OrderedJson value) {
    using Entries = OrderedJson::object_t::Container;
    static_cast<Entries&>(object.get_ref<OrderedJson::object_t&>()).emplace_back(key, std::move(value));
  }

  std::string file_;
  const YamlLimits& limits_;
  YamlDocument& doc_;
  const std::string& text_;  // the whole file, for quote_closed
  std::vector<Frame> frames_;
  std::map<YAML::anchor_t, Anchored> anchors_;
  std::map<YAML::anchor_t, std::string> names_;
  std::string last_anchor_name_;
  size_t nodes_ = 0;
  bool started_ = false;
  int document_line_ = 1;
};

}  // namespace

const SourceMap::Lines* SourceMap::find(const std::string& path) const {
  std::string p = path;
  while (true) {
    auto it = lines_.find(p);
    if (it != lines_.end()) return &it->second;
    const size_t cut = p.find_last_of(".[");
    if (cut == std::string::npos || cut == 0) return nullptr;
    p.resize(cut);
  }
}

YamlDocument parse_yaml_document(const std::string& text, const std::string& file, const YamlLimits& limits) {
  if (text.size() > limits.max_bytes)
    throw ConfigError(file, 0, "file is larger than " + std::to_string(limits.max_bytes >> 20) + " MiB");
  if (text.find('\0') != std::string::npos) throw ConfigError(file, 0, "not a text file (it holds NUL bytes)");
  YamlDocument doc;
  std::istringstream in(text);
  try {
    YAML::Parser parser(in);
    Builder builder(file, limits, doc, text);
    parser.HandleNextDocument(builder);
    YamlDocument rest;
    Builder second(file, limits, rest, text);
    if (parser.HandleNextDocument(second) && !rest.root.is_null())
      throw ConfigError(file, second.document_line(),
                        "a sweep file holds one YAML document; a second one starts here");
  } catch (const YAML::ParserException& e) {
    throw ConfigError(file, e.mark.is_null() ? 0 : e.mark.line + 1, e.msg);
  }
  return doc;
}

std::string read_text_file(const std::string& path, size_t max_bytes) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw ConfigError(path, 0, std::string("cannot read file: ") + std::strerror(errno));
  std::string text;
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) {
    text.append(buffer, n);
    if (text.size() > max_bytes) {
      std::fclose(f);
      throw ConfigError(path, 0, "file is larger than " + std::to_string(max_bytes >> 20) + " MiB");
    }
  }
  const int error = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (error) throw ConfigError(path, 0, std::string("cannot read file: ") + std::strerror(error));
  return text;
}

Json to_json(const OrderedJson& value) {
  if (value.is_object()) {
    Json out = Json::object();
    for (const auto& [key, child] : value.items()) out[key] = to_json(child);
    return out;
  }
  if (value.is_array()) {
    Json out = Json::array();
    for (const auto& child : value) out.push_back(to_json(child));
    return out;
  }
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) return value.get<double>();
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_string()) return value.get<std::string>();
  return nullptr;
}

std::string describe_kind(const OrderedJson& value) {
  if (value.is_object()) return "a mapping";
  if (value.is_array()) return "a list";
  if (value.is_null()) return "nothing";
  // Quoted on one line and cut: a multi-line or long scalar must not make the error span lines.
  return "'" + one_line(value.is_string() ? value.get<std::string>() : value.dump(), 80) + "'";
}

}  // namespace tune::internal
