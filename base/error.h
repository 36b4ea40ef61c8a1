// Errors: the one error style of every tune component.
//
// tune reports failures with exceptions (the libtorch style): every exception
// tune throws derives from tune::Error and its what() is one line a user can
// act on. Configuration mistakes are ConfigError (exit status 2 in the CLI);
// when the mistake came from a file, what() starts with "FILE:LINE: ".
//
//   throw tune::ConfigError::at("scheduler.max_t", "max_t must be positive");
//   // the sweep loader rethrows it as "sweep.yaml:7: max_t must be positive"
#pragma once

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

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

  // An error about the value of one key of a sweep ("scheduler.max_t",
  // "data.label", "preprocess[0]"): the sweep loader turns the key path into
  // the file:line of that value.
  static ConfigError at(const std::string& key_path, const std::string& message) {
    ConfigError error(message);
    error.key_path_ = key_path;
    return error;
  }
  // Likewise, about the key itself (unknown or duplicate): the key's line.
  static ConfigError at_key(const std::string& key_path, const std::string& message) {
    ConfigError error = at(key_path, message);
    error.about_key_ = true;
    return error;
  }
  // The key path the error is about; "" when unknown.
  const std::string& key_path() const { return key_path_; }
  bool about_key() const { return about_key_; }

 private:
  static std::string format(const std::string& file, int line, const std::string& message) {
    if (file.empty()) return message;
    if (line <= 0) return file + ": " + message;
    return file + ":" + std::to_string(line) + ": " + message;
  }

  std::string key_path_;
  bool about_key_ = false;
};

// A query named something that does not exist (experiment, trial). Exit status 2.
class NotFoundError : public Error {
 public:
  using Error::Error;
};

// A write failed for want of space (SQLite's SQLITE_FULL, ENOSPC, EDQUOT).
// The driver stops the sweep cleanly on it (the experiment INTERRUPTED, every
// acknowledged result stored) and `tune resume` goes on once there is room.
class DiskFullError : public Error {
 public:
  using Error::Error;
};

// The store stayed locked by another process for the whole busy timeout
// (SQLITE_BUSY): a writer's commit waited for a reader that holds a read
// transaction open (the rollback journal of a store on a network
// filesystem), or for another writer. The transaction is still open: the
// commit may be tried again.
class StoreBusyError : public Error {
 public:
  using Error::Error;
};

// This process had no descriptor left for what it was starting (EMFILE,
// ENFILE): its limit's fault, not the trial's.
class OutOfDescriptorsError : public Error {
 public:
  using Error::Error;
};

// Whether an errno says this process (EMFILE) or the system (ENFILE) has no
// descriptor left.
inline bool is_out_of_descriptors(int error) { return error == EMFILE || error == ENFILE; }

// Whether an OS error says the disk, or the user's quota on it, is full.
inline bool is_disk_full(const std::error_code& code) {
  return code == std::errc::no_space_on_device || code == std::error_condition(EDQUOT, std::generic_category());
}

}  // namespace tune
