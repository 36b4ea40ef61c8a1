// The HTML report: one self-contained page (scripts, styles and data inline;
// no network access when opened) showing one or more experiments of a store:
// summary, optimization history, learning curves with the scheduler's
// decisions, parallel coordinates, parameter importance and slices, rungs,
// PBT lineage, median-stopping cut-offs, a slot timeline, and with several
// experiments their best-so-far curves side by side. `tune report` writes
// it; the driver can rewrite it during a sweep (`tune run --report`).
//
//   tune::ReportOptions options;
//   tune::write_report("tune_results", {"branin-random"}, "report.html", options);
//
// While any experiment in the report is RUNNING, the page reloads itself
// every `reload_seconds` (keeping the selected trial in location.hash) and
// stops once a rewrite shows none running.
//
// Thread safety: no shared state; each call opens its own read-only
// connection (WAL: it never blocks the sweep that writes the store) and reads
// one consistent snapshot. Failure: throws NotFoundError for a missing store
// or experiment (with a did-you-mean), tune::Error when the output cannot be
// written; the previous file at output_path is then left as it was.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tune {

class Store;

struct ReportOptions {
  // The metric plotted and its direction. Default: each experiment's own.
  std::string metric;
  std::string mode;  // "min" | "max"
  // Points kept over all learning curves of an experiment; longer curves are
  // downsampled (largest-triangle-three-buckets, scheduler marks kept), each
  // trial keeping at least 8. Default 100,000: 1,000 trials keep 100 results
  // each; 10,000 trials x 100 results give a ~3.5 MB page (bench/run report).
  size_t max_curve_points = 100000;
  // Seconds between reloads of an open page while an experiment runs; 0 never.
  double reload_seconds = 5;
};

// Writes the report of `experiments` (at least one) to output_path,
// atomically: the page is written beside it and renamed over it, so a
// browser reloading it never reads half a file. Cost is one pass over the
// experiments' results: call it as often as every few seconds during a sweep.
void write_report(const std::string& storage_path, const std::vector<std::string>& experiments,
                  const std::string& output_path, const ReportOptions& options = {});

// The page as a string, from an open store (for tests and embedding).
// `now` (unix seconds) ends the running trials' intervals; 0 = the clock.
std::string render_report(Store& store, const std::string& storage_path,
                          const std::vector<std::string>& experiments,
                          const ReportOptions& options = {}, double now = 0);

}  // namespace tune
