// Internal: a command trainable's spec (`trainable: {command: [...], cwd,
// env, stop_grace_s, log_max_mb}` in a sweep file) and its "{config.path}" placeholders.
// Header-only: the sweep reader and validation (tune_spec) and the trainable
// that runs the program (tune_core) both use it.
//
//   command: [python3, train.py, --lr, "{lr}", --width, "{model.width}"]
//
// "{path}" is replaced by the trial config's value at that dotted path
// (strings as they are, numbers and booleans as JSON writes them, lists and
// mappings as JSON); "{{" and "}}" are literal braces.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/json.h"

namespace tune::internal {

struct CommandSpec {
  std::vector<std::string> argv;            // argv[0]: a program on PATH or a path
  std::string cwd;                          // absolute
  std::map<std::string, std::string> env;   // added to the trial's environment
  double stop_grace_s = 10;                 // SIGTERM, then SIGKILL after this
  // Each of a rank's stdout.log and stderr.log moves to .1 past this many
  // MB and starts over: a program that prints without end keeps at most
  // twice this per log on disk.
  double log_max_mb = 64;

  Json to_json() const {
    return {{"argv", argv}, {"cwd", cwd}, {"env", env}, {"stop_grace_s", stop_grace_s}, {"log_max_mb", log_max_mb}};
  }
  static CommandSpec from_json(const Json& json) {
    CommandSpec spec;
    spec.argv = json.at("argv").get<std::vector<std::string>>();
    spec.cwd = json.value("cwd", std::string());
    if (json.contains("env") && json["env"].is_object())
      spec.env = json["env"].get<std::map<std::string, std::string>>();
    spec.stop_grace_s = json.value("stop_grace_s", spec.stop_grace_s);
    spec.log_max_mb = json.value("log_max_mb", spec.log_max_mb);
    return spec;
  }
};

// The placeholders of `text` in order ("lr", "model.width"); throws Error on
// an unmatched brace or an empty placeholder.
inline std::vector<std::string> placeholder_paths(const std::string& text) {
  std::vector<std::string> paths;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      ++i;  // "{{" or "}}": a literal brace
      continue;
    }
    if (c == '}') throw Error("unmatched '}' in '" + text + "' (write '}}' for a literal brace)");
    if (c != '{') continue;
    const size_t close = text.find('}', i + 1);
    if (close == std::string::npos) throw Error("unmatched '{' in '" + text + "' (write '{{' for a literal brace)");
    std::string path = text.substr(i + 1, close - i - 1);
    if (path.empty() || path.find('{') != std::string::npos)
      throw Error("bad placeholder in '" + text + "': write {name} or {section.name}");
    paths.push_back(std::move(path));
    i = close;
  }
  return paths;
}

// The value at a dotted path of a config, or nullptr.
inline const Json* config_value(const Json& config, const std::string& path) {
  const Json* at = &config;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at->is_object() || !at->contains(key)) return nullptr;
    at = &(*at)[key];
    if (dot == std::string::npos) return at;
    start = dot + 1;
  }
}

inline std::string placeholder_text(const Json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// `text` with its placeholders replaced from `config`; throws Error naming
// a path the config does not have.
inline std::string substitute(const std::string& text, const Json& config) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = text.find('}', i + 1);
    if (close == std::string::npos) throw Error("unmatched '{' in '" + text + "'");
    const std::string path = text.substr(i + 1, close - i - 1);
    const Json* value = config_value(config, path);
    if (!value) throw Error("placeholder {" + path + "} in '" + text + "': the trial's config has no '" + path + "'");
    out += placeholder_text(*value);
    i = close;
  }
  return out;
}

}  // namespace tune::internal
