// Internal: a sweep file's text -> SweepSpec, keeping where each key was
// written so that any later ConfigError carrying a key path
// (ConfigError::at) is reported at its file:line.
//
//   LoadedSweep loaded = read_sweep_file("sweep.yaml");  // structure and types
//   loaded.spec.name = "other";                          // CLI overrides
//   try { prepare(loaded.spec); } catch (const ConfigError& e) { throw loaded.source->locate(e); }
//
// Reading checks structure and types (unknown keys, wrong types, domains,
// points_to_evaluate); the semantic checks (search and scheduler options,
// the trainable, the slots) run once, afterwards, in prepare_sweep.
#pragma once

#include <memory>
#include <string>

#include "base/error.h"
#include "search/search_space.h"
#include "tuner/spec/sweep_spec.h"
#include "tuner/spec/yaml_document.h"

namespace tune::internal {

// Where a sweep's keys are written.
class SweepSource {
 public:
  SweepSource(std::string file, SourceMap lines, int root_line)
      : file_(std::move(file)), lines_(std::move(lines)), root_line_(root_line) {}
  const std::string& file() const { return file_; }

  // `error` as "file:line: message". Errors about the scheduler point at the
  // scheduler block ("scheduler: " before the message), errors about the
  // search block as a whole at it ("search: ..."), others at their key path's
  // value (or key, for ConfigError::at_key). An error without a key path, or
  // one whose path the file does not have, gets "file: message".
  ConfigError locate(const ConfigError& error) const;

 private:
  std::string file_;
  SourceMap lines_;
  int root_line_;
};

struct LoadedSweep {
  SweepSpec spec;
  std::shared_ptr<const SweepSource> source;
};

// Throws ConfigError with file:line. A relative data.path or trainable.cwd
// is relative to `relative_to` when given, else to the file's own folder
// (`tune submit`'s batch script runs a copy of the file from elsewhere).
LoadedSweep read_sweep(const std::string& yaml_text, const std::string& file, const std::string& relative_to = "");
LoadedSweep read_sweep_file(const std::string& path, const std::string& relative_to = "");

// A YAML document holding just a param_space mapping (tests, tools).
SearchSpace parse_param_space(const std::string& yaml_text, const std::string& file);

}  // namespace tune::internal
