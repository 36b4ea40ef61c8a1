#include "tuner/cli/report_command.h"

#include <iostream>

#include <boost/program_options.hpp>

#include "base/error.h"
#include "tuner/report/report.h"
#include "tuner/cli/results_export.h"

namespace tune::cli {
namespace {

namespace po = boost::program_options;

// Parses `args`; false when --help was asked (and printed).
bool parse(const char* usage, const std::vector<std::string>& args, po::options_description& options,
           po::variables_map& vm) {
  options.add_options()("help,h", "show this help");
  po::positional_options_description positionals;
  positionals.add("experiment", -1);
  po::store(po::command_line_parser(args).options(options).positional(positionals).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: " << usage << "\n" << options;
    return false;
  }
  return true;
}

}  // namespace

int report_command(const std::vector<std::string>& args) {
  std::vector<std::string> experiments;
  std::string storage, output;
  ReportOptions report;
  po::options_description options("options");
  options.add_options()("experiment", po::value(&experiments)->multitoken(), "experiment names")(
      "output,o", po::value(&output), "HTML file to write (required)")(
      "storage", po::value(&storage)->default_value("./tune_results"), "results directory")(
      "metric", po::value(&report.metric), "metric to plot (default: each experiment's)")(
      "mode", po::value(&report.mode), "min or max (default: each experiment's)")(
      "max-curve-points", po::value(&report.max_curve_points)->default_value(report.max_curve_points),
      "learning-curve points kept per experiment (longer curves are downsampled)");
  po::variables_map vm;
  if (!parse("tune report EXP [EXP...] --output report.html [OPTIONS]", args, options, vm)) return 0;
  if (experiments.empty()) throw ConfigError("tune report: missing experiment argument");
  if (output.empty()) throw ConfigError("tune report: missing --output FILE (e.g. --output report.html)");
  if (report.mode.size() && report.mode != "min" && report.mode != "max") {
    throw ConfigError("--mode must be min or max, got '" + report.mode + "'");
  }
  write_report(storage, experiments, output, report);
  std::cout << "wrote " << output << "\n";
  return 0;
}

int results_command(const std::vector<std::string>& args) {
  QueryOptions q;
  std::vector<std::string> experiments;
  bool csv = false, json = false;
  po::options_description options("options");
  options.add_options()("experiment", po::value(&experiments), "experiment name")(
      "storage", po::value(&q.storage)->default_value("./tune_results"), "results directory")(
      "csv", po::bool_switch(&csv), "CSV with a header row")("json", po::bool_switch(&json), "a JSON array of rows");
  po::variables_map vm;
  if (!parse("tune results EXP --csv|--json [OPTIONS]", args, options, vm)) return 0;
  if (experiments.size() != 1) throw ConfigError("tune results: name one experiment");
  if (csv == json) throw ConfigError("tune results: choose one of --csv and --json");
  q.experiment = experiments.front();
  q.format = csv ? "csv" : "json";
  return export_results(q, std::cout);
}

}  // namespace tune::cli
