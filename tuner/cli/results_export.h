// `tune results EXP --csv|--json`: every result an experiment's trials
// reported (not only each trial's last), one row per result, for pandas,
// DuckDB or a spreadsheet. Columns (docs/SCHEMA.md, "Exporting results"):
//
//   trial_index, attempt, iteration, time   which trial, which start of it,
//                                           its training_iteration, unix seconds
//   <metric>...                             every key any result reported
//                                           (the experiment's metric first);
//                                           a metric named like one of the
//                                           four above, or starting config/ or
//                                           metrics/, is written metrics/<name>
//                                           (no two keys share a column)
//   config/<param>...                       the trial's flattened config in
//                                           effect for that result (PBT
//                                           exploits change it mid-trial)
//
// Rows are ordered by trial, then as reported. A NaN metric (null in the
// store) is an empty CSV cell / JSON null. Control bytes in CSV cells are
// written as JSON escapes (\u0000), never raw. --json writes an array of flat
// objects with the same keys, one per line. Reads one snapshot of the store
// read-only (safe while a sweep runs); memory does not grow with the results.
//
//   tune::cli::QueryOptions q;
//   q.experiment = "branin-random";
//   q.format = "csv";
//   tune::cli::export_results(q, std::cout);
#pragma once

#include <ostream>

#include "tuner/cli/queries.h"

namespace tune::cli {

// Throws NotFoundError for a missing store or experiment, ConfigError for a
// format other than csv or json. Returns the exit status (0).
int export_results(const QueryOptions& options, std::ostream& out);

}  // namespace tune::cli
