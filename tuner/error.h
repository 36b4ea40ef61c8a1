// Error types shared by every tune component.
//
// tune reports failures with exceptions (the libtorch style): every exception
// tune throws derives from tune::Error and its what() is one line a user can
// act on. Configuration mistakes are ConfigError, whose what() starts with
// "FILE:LINE: " when the mistake came from a file.
#pragma once

#include <stdexcept>
#include <string>

namespace tune {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad sweep file, search space or option. Exit status 2 in the CLI.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(message) {}
  // "file:line: message" (line is 1-based; 0 means unknown and is omitted).
  ConfigError(const std::string& file, int line, const std::string& message)
      : Error(format(file, line, message)) {}

  // An error about one key of a sweep ("scheduler.max_t", "data.label",
  // "preprocess[0]"): the sweep loader turns the key path into file:line.
  static ConfigError at(const std::string& key_path, const std::string& message) {
    ConfigError error(message);
    error.key_path_ = key_path;
    return error;
  }
  // The key path the error is about; "" when unknown.
  const std::string& key_path() const { return key_path_; }

 private:
  std::string key_path_;

  static std::string format(const std::string& file, int line, const std::string& message) {
    if (file.empty()) return message;
    if (line <= 0) return file + ": " + message;
    return file + ":" + std::to_string(line) + ": " + message;
  }
};

// A query named something that does not exist (experiment, trial). Exit status 2.
class NotFoundError : public Error {
 public:
  using Error::Error;
};

}  // namespace tune
