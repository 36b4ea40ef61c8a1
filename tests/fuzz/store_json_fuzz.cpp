// Fuzz target: the JSON columns of a store (docs/SCHEMA.md) holding any text,
// as a corrupt, hand-edited or hostile tune.db would.
//
// Input: one byte choosing the column, then its text. Every input first goes
// through the results scanner (storage/json_scan.cpp, the fast path of
// result_columns) and is checked against nlohmann::json where both accept it.
// Then the text is written into the chosen column of a small store (every
// other column holds what tune writes) and read back the ways tune reads it:
// the Store's reads, result_columns, best_trial, `tune trials` (--json, with
// a filter), `tune best`, `tune status` and, for the spec, what `tune resume`
// does with it. Only tune::Error (NotFoundError, ConfigError, "store:
// malformed JSON in ...") is expected.
#include <SQLiteCpp/SQLiteCpp.h>
#include <stdlib.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "storage/analysis.h"
#include "storage/internal/json_scan.h"
#include "storage/store.h"
#include "trainer/session.h"
#include "tuner/cli/queries.h"
#include "tuner/driver/prepare.h"
#include "tuner/spec/sweep_spec.h"

using tune::Json;

namespace {

struct Column {
  const char* table;
  const char* column;
  std::string valid;  // what tune writes there
};

struct Fixture {
  std::string dir;
  std::unique_ptr<tune::Store> store;
  std::unique_ptr<SQLite::Database> raw;  // a second connection that writes any text
  int64_t experiment = 0, trial = 0, donor = 0;
  std::vector<Column> columns;

  Fixture() {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string pattern = std::string(base) + "/tune-fuzz-store-XXXXXX";
    if (!mkdtemp(pattern.data())) tune::fuzz::finding("setup", "mkdtemp failed");
    dir = pattern;
    store = tune::Store::open(dir);
    const tune::SweepSpec spec = tune::parse_sweep(
        "name: e\ntrainable: branin\nmetric: loss\nmode: min\nnum_samples: 2\n"
        "param_space:\n  x1: {uniform: [-5, 10]}\n  opt: {choice: [sgd, adam]}\n",
        "seed.yaml");
    tune::ExperimentRecord e;
    e.name = "e";
    e.status = "FINISHED";
    e.metric = "loss";
    e.mode = "min";
    e.spec = spec.to_json();
    e.searcher_state = Json{{"suggested", 2}};
    experiment = store->create_experiment(e);
    const Json config = {{"x1", 1.5}, {"opt", "sgd"}};
    trial = store->add_trial(experiment, 0, config);
    donor = store->add_trial(experiment, 1, {{"x1", 2.5}, {"opt", "adam"}});
    const Json metrics = {{"loss", 0.25}, {"training_iteration", 1}};
    store->add_result(trial, 1, 1, metrics, 10.0);
    store->add_result(donor, 1, 1, {{"loss", 0.5}, {"training_iteration", 1}}, 11.0);
    store->add_event(experiment, trial, "trial_started", {{"attempt", 1}}, 10.0);
    tune::ExploitRecord x;
    x.trial_id = trial;
    x.donor_trial_id = donor;
    x.iteration = 1;
    x.donor_iteration = 1;
    x.old_config = config;
    x.new_config = config;
    store->add_exploit(x);
    raw = std::make_unique<SQLite::Database>(tune::Store::database_path(dir), SQLite::OPEN_READWRITE);
    raw->exec("PRAGMA busy_timeout = 5000");
    columns = {{"results", "metrics_json", metrics.dump()},
               {"trials", "config_json", config.dump()},
               {"trials", "last_result_json", metrics.dump()},
               {"events", "detail_json", Json{{"attempt", 1}}.dump()},
               {"experiments", "spec_json", e.spec.dump()},
               {"experiments", "searcher_state", e.searcher_state.dump()},
               {"exploits", "new_config_json", config.dump()}};
  }
  ~Fixture() {
    raw.reset();
    store.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  // Every column back to what tune wrote, then `text` into column `chosen`.
  void write(size_t chosen, const std::string& text) {
    SQLite::Transaction transaction(*raw);
    for (size_t i = 0; i < columns.size(); ++i) {
      SQLite::Statement s(*raw, std::string("UPDATE ") + columns[i].table + " SET " + columns[i].column + " = ?");
      s.bind(1, i == chosen ? text : columns[i].valid);
      s.exec();
    }
    transaction.commit();
  }
};

Fixture* fixture = nullptr;

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// The scanner against a real parser, where both accept the text.
void check_scanner(const std::string& text) {
  const std::vector<std::string> keys = {"loss", "acc", "training_iteration", "loss"};
  double out[4];
  if (!tune::storage_internal::scan_numbers(text, keys, out)) return;
  const Json parsed = tune::parse_json(text);  // as the store reads it (bounded nesting)
  if (parsed.is_discarded()) return;  // unasked-for values are not checked
  tune::fuzz::check(parsed.is_object(), "scan_numbers accepted a non-object: " + text);
  for (size_t k = 0; k < keys.size(); ++k) {
    auto it = parsed.find(keys[k]);
    const double want = it != parsed.end() && it->is_number() ? it->get<double>() : NAN;
    tune::fuzz::check(same(out[k], want), "scan_numbers disagrees on '" + keys[k] + "' in " + text);
  }
}

void read_back(const std::string& text) {
  tune::Store& store = *fixture->store;
  auto e = store.find_experiment("e");
  tune::fuzz::check(e.has_value(), "experiment gone");
  (void)store.experiments();
  for (const auto& t : store.trials(e->id)) {
    (void)store.results(t.id);
    (void)tune::best_checkpoint(store, t.id, "min");
  }
  (void)store.events(e->id);
  (void)store.exploits(e->id);
  const tune::ResultColumns columns = store.result_columns(e->id, {"loss", "training_iteration", "acc"});
  size_t visited = 0;
  store.for_each_result(e->id, [&](const tune::ResultRecord&) { ++visited; });
  tune::fuzz::check(visited == columns.size(), "for_each_result and result_columns disagree");
  for (const char* scope : {"last", "all", "avg", "last-5-avg"}) (void)tune::best_trial(store, *e, "loss", "min", scope);

  tune::cli::QueryOptions options;
  options.storage = fixture->dir;
  options.experiment = "e";
  std::ostringstream out;
  options.format = "json";
  options.sort = "loss";
  (void)tune::cli::list_trials(options, out);
  options.format = "table";
  options.filters = {"opt=sgd", "loss<1"};
  try {
    (void)tune::cli::list_trials(options, out);
  } catch (const tune::ConfigError&) {
    // "'opt' is not numeric" and the like: a filter on a corrupt cell
  }
  options.filters.clear();
  (void)tune::cli::show_best(options, out);
  (void)tune::cli::show_status(options, out);
  (void)tune::cli::list_experiments(options, out);
  (void)text;

  // `tune resume e`: the spec from the store, prepared again.
  tune::SweepSpec spec = tune::SweepSpec::from_json(e->spec);
  spec.name = "e";
  tune::RunConfig run;
  run.storage_path = fixture->dir;
  run.slots = 8;
  run.use_slurm_allocation = false;
  run.verbose = false;
  (void)tune::internal::prepare_sweep(std::move(spec), run, {}, nullptr, nullptr, /*resume=*/true);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tune::register_builtin_trainables();
  static Fixture instance;
  fixture = &instance;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  check_scanner(text);
  fixture->write(data[0] % fixture->columns.size(), text);
  tune::fuzz::accept_errors([&] { read_back(text); });
  return 0;
}
