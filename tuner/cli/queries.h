// The query half of the `tune` command line: experiments, trials, best,
// status. Each reads the store read-only (WAL), so it works while a sweep runs.
// Each returns the process exit status and throws tune::Error subclasses for
// bad input (the caller prints one line and exits 2).
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "storage/store.h"

namespace tune::cli {

struct QueryOptions {
  std::string storage = "./tune_results";  // results directory
  std::string experiment;                   // EXP argument
  std::string format = "table";             // table | json | csv
  // trials: sort key (trial, status, iter, a param or a metric), descending
  // order, filters like "status=ERROR", "loss<0.5", "opt!=sgd", row limit.
  std::string sort;
  bool descending = false;
  std::vector<std::string> filters;
  int limit = 0;
  // best: defaults come from the experiment.
  std::string metric, mode, scope = "last";
};

int list_experiments(const QueryOptions& options, std::ostream& out);
int list_trials(const QueryOptions& options, std::ostream& out);
int show_best(const QueryOptions& options, std::ostream& out);
int show_status(const QueryOptions& options, std::ostream& out);

// A CSV cell: quoted (with "" for ") when it holds a comma, quote, newline
// or control byte; control bytes other than tab and newline are written as
// JSON escapes (\u0000, \r), never raw.
std::string csv_cell(const std::string& text);
}  // namespace tune::cli
