// The `tune report` and `tune results` commands: option parsing (Boost) in
// front of tune::write_report (tuner/report/report.h) and tune::cli::export_results
// (tuner/cli/results_export.h). Bad options and unknown experiments throw
// ConfigError / NotFoundError (main prints one line and exits 2).
#pragma once

#include <string>
#include <vector>

namespace tune::cli {

// tune report EXP [EXP...] --output FILE [--storage DIR] [--metric M] [--mode min|max]
int report_command(const std::vector<std::string>& args);
// tune results EXP --csv|--json [--storage DIR]
int results_command(const std::vector<std::string>& args);

}  // namespace tune::cli
