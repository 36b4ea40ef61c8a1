// overhead_bench: tune's orchestration overhead, one figure per mode. Each run
// uses a fresh temporary store (removed afterwards unless --keep) and prints
// ONE JSON object on stdout; bench/overhead/run.sh collects them.
//
//   overhead_bench trials  [--trials N] [--slots S]       trivial 1-report trials, in-process
//   overhead_bench mpi     [--trials N] [--slots S]       same, built-in `synthetic` on reused
//                                                         1-rank MPI groups (use_mpi: true)
//   overhead_bench ideal   [--trials N] [--slots S] [--reports R] [--sleep-ms M]
//                                                         R reports per trial, each after an
//                                                         M ms sleep; vs. the ideal wall time and
//                                                         vs. the same sleeps on bare threads
//                                                         (--wait: every report() waits for its
//                                                         commit, RunConfig::run_ahead off;
//                                                         --plain-sleeps: a sleep_for per step,
//                                                         late wakes added up: see Work)
//   overhead_bench results [--trials N] [--slots S] [--reports R]
//                                                         N concurrent trials reporting R times
//                                                         as fast as they can; rows counted in SQL
//   overhead_bench memory  [--trials N] [--slots S]       peak RSS of the driver after N trials
//   overhead_bench store   [--reports N]                  the store alone: one result per
//                                                         transaction, 64 per transaction, empty ones
//   overhead_bench parts   [--trials N] [--slots S] [--reports R]
//                                                         N in-process trials of R reports with
//                                                         the driver's profile on (TUNE_PROFILE,
//                                                         tuner/exec/profile.h) and the progress
//                                                         table every 0.05 s: each part's calls
//                                                         and seconds
//
// Options: --seed N, --keep (leave the temp store), --tmp DIR (parent of the store).
// Throughputs are timed around Tuner::fit() (store open to results loaded),
// not the process start.
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tuner/tuner.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string mode;
  long trials = -1;
  int slots = -1;
  long reports = -1;
  double sleep_ms = 10;
  uint64_t seed = 1;
  bool keep = false;
  bool wait = false;
  bool plain_sleeps = false;
  std::string tmp;
};

[[noreturn]] void usage(const std::string& message) {
  std::cerr << "overhead_bench: " << message
            << "\nusage: overhead_bench trials|mpi|ideal|results|memory|store|parts [--trials N] [--slots S]"
               " [--reports R] [--sleep-ms M] [--seed N] [--tmp DIR] [--keep] [--wait] [--plain-sleeps]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  if (argc < 2) usage("missing mode");
  o.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--trials") o.trials = std::stol(value());
    else if (a == "--slots") o.slots = std::stoi(value());
    else if (a == "--reports") o.reports = std::stol(value());
    else if (a == "--sleep-ms") o.sleep_ms = std::stod(value());
    else if (a == "--seed") o.seed = std::stoull(value());
    else if (a == "--tmp") o.tmp = value();
    else if (a == "--keep") o.keep = true;
    else if (a == "--wait") o.wait = true;
    else if (a == "--plain-sleeps") o.plain_sleeps = true;
    else usage("unknown option " + a);
  }
  return o;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Resident set size now (VmRSS) and at peak (ru_maxrss), MiB.
double rss_now_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}
double rss_peak_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: KiB
}

class TempStore {
 public:
  TempStore(const Options& o, const std::string& mode) : keep_(o.keep) {
    fs::path parent = o.tmp.empty() ? fs::temp_directory_path() : fs::path(o.tmp);
    std::string pattern = (parent / ("tune-bench-" + mode + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) usage("cannot create a temp dir under " + parent.string());
    path_ = pattern;
  }
  ~TempStore() {
    if (keep_) {
      std::cerr << "overhead_bench: store kept at " << path_ << "\n";
    } else {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool keep_;
};

std::string unique_name(const std::string& mode) {
  auto stamp = std::chrono::system_clock::now().time_since_epoch();
  return "bench-" + mode + "-" + std::to_string(getpid()) + "-" +
         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(stamp).count());
}

// The 3-parameter space shared with the Optuna peer (bench/peers/optuna_overhead.py).
// No stop criterion: every trainable here returns after its last report (as
// an Optuna objective does).
tune::SweepSpec base_spec(const Options& o, const std::string& mode, long trials) {
  tune::SweepSpec spec;
  spec.name = unique_name(mode);
  spec.metric = "loss";
  spec.mode = "min";
  spec.num_samples = trials;
  spec.search.seed = o.seed;
  spec.param_space.add("x", tune::uniform(-5, 10))
      .add("y", tune::loguniform(1e-5, 1e-1))
      .add("z", tune::randint(1, 10));
  return spec;
}

tune::RunConfig run_config(const TempStore& store, int slots, bool wait = false) {
  tune::RunConfig run;
  run.storage_path = store.path();
  run.slots = slots;
  run.verbose = false;
  run.run_ahead = !wait;
  return run;
}

double objective(const tune::Json& c) {
  const double x = c["x"].get<double>(), y = c["y"].get<double>();
  const double z = c["z"].get<double>();
  return (x - 2) * (x - 2) + std::log10(y) * std::log10(y) + z;
}

// SELECT over the store's own tables, independently of the Store API.
long long sql_count(const std::string& storage, const std::string& experiment, const std::string& table) {
  sqlite3* db = nullptr;
  const std::string path = tune::Store::database_path(storage);
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::cerr << "cannot open " << path << "\n";
    std::exit(1);
  }
  const std::string sql =
      table == "results"
          ? "SELECT COUNT(*) FROM results r JOIN trials t ON r.trial_id = t.id JOIN experiments e"
            " ON t.experiment_id = e.id WHERE e.name = ?"
          : "SELECT COUNT(*) FROM trials t JOIN experiments e ON t.experiment_id = e.id"
            " WHERE e.name = ? AND t.status = 'TERMINATED'";
  sqlite3_stmt* stmt = nullptr;
  long long count = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(stmt, 1, experiment.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(stmt) == SQLITE_ROW) count = sqlite3_column_int64(stmt, 0);
  } else {
    std::cerr << "sql error: " << sqlite3_errmsg(db) << "\n";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return count;
}

struct Fit {
  double wall_s = 0;
  long long terminated = 0, results = 0;
  size_t size = 0;
};

Fit timed_fit(tune::Tuner& tuner, const std::string& storage, const std::string& name) {
  auto t0 = Clock::now();
  tune::ResultGrid grid = tuner.fit();
  Fit fit;
  fit.wall_s = seconds_since(t0);
  fit.size = grid.size();
  fit.terminated = sql_count(storage, name, "trials");
  fit.results = sql_count(storage, name, "results");
  return fit;
}

tune::Json common(const Options& o, const std::string& benchmark) {
  return {{"benchmark", benchmark}, {"system", "tune"}, {"seed", o.seed}};
}

// 1. Trivial trials, in-process: one report each.
tune::Json bench_trials(const Options& o) {
  const long n = o.trials > 0 ? o.trials : 1000;
  const int slots = o.slots > 0 ? o.slots : 2;
  TempStore store(o, "trials");
  tune::SweepSpec spec = base_spec(o, "trials", n);
  tune::Tuner tuner([](tune::Session& s) { s.report({{"loss", objective(s.config())}}); }, spec,
                    run_config(store, slots));
  Fit fit = timed_fit(tuner, store.path(), spec.name);
  tune::Json out = common(o, "trials_in_process");
  out.update({{"trials", n}, {"slots", slots}, {"wall_s", fit.wall_s}, {"trials_per_s", n / fit.wall_s},
              {"terminated", fit.terminated}, {"results_rows", fit.results}});
  return out;
}

// 1b. Trivial trials on reused 1-rank MPI worker groups (built-in `synthetic`).
tune::Json bench_mpi(const Options& o) {
  const long n = o.trials > 0 ? o.trials : 1000;
  const int slots = o.slots > 0 ? o.slots : 2;
  TempStore store(o, "mpi");
  tune::SweepSpec spec = base_spec(o, "mpi", n);
  spec.trainable = "synthetic";
  spec.resources.workers = 1;
  spec.resources.use_mpi = true;
  spec.param_space.constant("iterations", 1);
  tune::Tuner tuner(spec, run_config(store, slots));
  Fit fit = timed_fit(tuner, store.path(), spec.name);
  tune::Json out = common(o, "trials_mpi");
  out.update({{"trials", n}, {"slots", slots}, {"wall_s", fit.wall_s}, {"trials_per_s", n / fit.wall_s},
              {"terminated", fit.terminated}, {"results_rows", fit.results}});
  return out;
}

// A trial's work in `ideal`: steps of `step` each, timed as fixed work
// rather than as sleeps. A sleep on this kind of VM wakes 0.1-0.3 ms late;
// ten plain sleeps per trial made the trials themselves 1.5-3.5 % longer
// than the ideal, tune or not. Here each step ends `step` of the trial's own
// time after the previous one, so a late wake is taken out of the next step
// (only the last step's stays in the trial), while time the trial spends
// elsewhere (in report(): tune's) is added to the schedule, never absorbed.
// --plain-sleeps: the old way, one sleep_for per step.
class Work {
 public:
  Work(std::chrono::duration<double, std::milli> step, bool plain) : step_(step), plain_(plain) {}
  void begin() { due_ = Clock::now(); }
  void step() {
    if (plain_) {
      std::this_thread::sleep_for(step_);
      return;
    }
    due_ += std::chrono::duration_cast<Clock::duration>(step_);
    std::this_thread::sleep_until(due_);
  }
  // Time spent outside the work (from `since` to now): the schedule moves by it.
  void outside(Clock::time_point since) { due_ += Clock::now() - since; }

 private:
  std::chrono::duration<double, std::milli> step_;
  bool plain_;
  Clock::time_point due_{};
};

// The same work on bare threads: what the steps alone cost on this machine.
double bare_threads_wall(long trials, int slots, long reports, double sleep_ms, bool plain) {
  std::atomic<long> next{0};
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < slots; ++t) {
    threads.emplace_back([&] {
      Work work(std::chrono::duration<double, std::milli>(sleep_ms), plain);
      while (next.fetch_add(1) < trials) {
        work.begin();
        for (long r = 0; r < reports; ++r) work.step();
      }
    });
  }
  for (auto& t : threads) t.join();
  return seconds_since(t0);
}

// 2. Overhead over the ideal: trials of reports x sleep_ms on `slots` threads.
tune::Json bench_ideal(const Options& o) {
  const long n = o.trials > 0 ? o.trials : 200;
  const int slots = o.slots > 0 ? o.slots : 2;
  const long reports = o.reports > 0 ? o.reports : 10;
  const double sleep_ms = o.sleep_ms;
  const double ideal = std::ceil(static_cast<double>(n) / slots) * reports * sleep_ms / 1000.0;
  const double bare = bare_threads_wall(n, slots, reports, sleep_ms, o.plain_sleeps);

  TempStore store(o, "ideal");
  tune::SweepSpec spec = base_spec(o, "ideal", n);
  // Where the time beyond the sleeps goes: inside report() (the round trip to
  // the driver, which commits before answering) vs. between trials.
  std::mutex mutex;
  std::vector<double> report_us, gap_us;
  double in_trial_s = 0;
  tune::Tuner tuner(
      [&, reports, sleep_ms](tune::Session& s) {
        const auto begin = Clock::now();
        Work work(std::chrono::duration<double, std::milli>(sleep_ms), o.plain_sleeps);
        // A thread runs one trial after another: the gap since its last one.
        thread_local std::optional<Clock::time_point> last_end;
        if (last_end) {
          std::lock_guard<std::mutex> lock(mutex);
          gap_us.push_back(std::chrono::duration<double, std::micro>(begin - *last_end).count());
        }
        const double value = objective(s.config());
        std::vector<double> mine;
        mine.reserve(static_cast<size_t>(reports));
        work.begin();
        for (long r = 1; r <= reports; ++r) {
          work.step();
          const auto t0 = Clock::now();
          s.report({{"loss", value / static_cast<double>(r)}});
          mine.push_back(seconds_since(t0) * 1e6);
          work.outside(t0);
        }
        std::lock_guard<std::mutex> lock(mutex);
        report_us.insert(report_us.end(), mine.begin(), mine.end());
        in_trial_s += seconds_since(begin);
        last_end = Clock::now();
      },
      spec, run_config(store, slots, o.wait));
  Fit fit = timed_fit(tuner, store.path(), spec.name);
  // A percentile of sorted samples (0 when there are none).
  auto pct = [](std::vector<double>& samples, double p) {
    std::sort(samples.begin(), samples.end());
    return samples.empty() ? 0.0 : samples[static_cast<size_t>(p * static_cast<double>(samples.size() - 1))];
  };
  double report_total_s = 0;
  for (double us : report_us) report_total_s += us / 1e6;
  tune::Json out = common(o, "overhead_over_ideal");
  out.update({{"trials", n}, {"slots", slots}, {"reports_per_trial", reports}, {"sleep_ms", sleep_ms},
              {"run_ahead", !o.wait}, {"plain_sleeps", o.plain_sleeps}, {"ideal_s", ideal}, {"bare_threads_s", bare}, {"wall_s", fit.wall_s},
              {"overhead_pct", 100.0 * (fit.wall_s - ideal) / ideal},
              {"overhead_vs_bare_pct", 100.0 * (fit.wall_s - bare) / bare},
              {"report_us_mean", report_us.empty() ? 0.0 : report_total_s * 1e6 / report_us.size()},
              {"report_us_p50", pct(report_us, 0.5)}, {"report_us_p99", pct(report_us, 0.99)},
              // a thread's trial end to its next trial's start (the driver in between)
              {"gap_between_trials_us_p50", pct(gap_us, 0.5)},
              // per slot: summed time blocked in report(), and outside any trial
              {"in_report_s_per_slot", report_total_s / slots},
              {"between_trials_s_per_slot", fit.wall_s - in_trial_s / slots},
              {"terminated", fit.terminated}, {"results_rows", fit.results}});
  return out;
}

// 3. Result throughput: concurrent trials reporting as fast as they can.
tune::Json bench_results(const Options& o) {
  const long n = o.trials > 0 ? o.trials : 8;
  const int slots = o.slots > 0 ? o.slots : static_cast<int>(n);
  const long reports = o.reports > 0 ? o.reports : 5000;
  TempStore store(o, "results");
  tune::SweepSpec spec = base_spec(o, "results", n);
  tune::Tuner tuner(
      [reports](tune::Session& s) {
        for (long r = 1; r <= reports; ++r) s.report({{"loss", 1.0 / static_cast<double>(r)}});
      },
      spec, run_config(store, slots));
  Fit fit = timed_fit(tuner, store.path(), spec.name);
  const long long expected = static_cast<long long>(n) * reports;
  tune::Json out = common(o, "result_throughput");
  out.update({{"trials", n}, {"slots", slots}, {"reports_per_trial", reports}, {"wall_s", fit.wall_s},
              {"results_expected", expected}, {"results_rows", fit.results},
              {"results_per_s", static_cast<double>(fit.results) / fit.wall_s},
              {"all_durable", fit.results == expected}, {"terminated", fit.terminated}});
  return out;
}

// 4. Driver memory after many trivial trials.
tune::Json bench_memory(const Options& o) {
  const long n = o.trials > 0 ? o.trials : 10000;
  const int slots = o.slots > 0 ? o.slots : 2;
  const double before_now = rss_now_mib(), before_peak = rss_peak_mib();
  TempStore store(o, "memory");
  tune::SweepSpec spec = base_spec(o, "memory", n);
  tune::Tuner tuner([](tune::Session& s) { s.report({{"loss", objective(s.config())}}); }, spec,
                    run_config(store, slots));
  Fit fit = timed_fit(tuner, store.path(), spec.name);
  tune::Json out = common(o, "driver_memory");
  out.update({{"trials", n}, {"slots", slots}, {"wall_s", fit.wall_s}, {"trials_per_s", n / fit.wall_s},
              {"rss_before_mib", before_now}, {"peak_rss_before_mib", before_peak},
              {"peak_rss_mib", rss_peak_mib()}, {"rss_after_mib", rss_now_mib()},
              {"terminated", fit.terminated}, {"results_rows", fit.results}});
  return out;
}

// 5. The store alone (no driver, no threads): what one durable result costs
// in a transaction of its own (as when trials report one at a time) and in a
// batch of `batch` (as when many trials report at once), plus an empty
// transaction (what the driver's loop commits when it has nothing to launch).
tune::Json bench_store(const Options& o) {
  const long n = o.reports > 0 ? o.reports : 20000;
  const long batch = 64;
  TempStore dir(o, "store");
  auto store = tune::Store::open(dir.path());
  tune::ExperimentRecord experiment;
  experiment.name = unique_name("store");
  experiment.status = "RUNNING";
  experiment.metric = "loss";
  experiment.mode = "min";
  const int64_t id = store->create_experiment(experiment);
  const int64_t trial = store->add_trial(id, 0, {{"x", 1.5}, {"y", 1e-3}, {"z", 3}});
  auto metrics = [](long i) {
    return tune::Json{{"loss", 1.0 / static_cast<double>(i)}, {"training_iteration", i},
                      {"time_this_iter_s", 0.0001}, {"time_total_s", 0.0001 * static_cast<double>(i)},
                      {"timestamp", 1.7e9 + static_cast<double>(i)}};
  };
  long iteration = 0;
  auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) {
    tune::Transaction txn(*store);
    ++iteration;
    store->add_result(trial, iteration, 1, metrics(iteration), 1.7e9);
    txn.commit();
  }
  const double single_us = seconds_since(t0) * 1e6 / static_cast<double>(n);
  t0 = Clock::now();
  for (long i = 0; i < n; i += batch) {
    tune::Transaction txn(*store);
    for (long j = 0; j < batch; ++j) {
      ++iteration;
      store->add_result(trial, iteration, 1, metrics(iteration), 1.7e9);
    }
    txn.commit();
  }
  const double batched_us = seconds_since(t0) * 1e6 / static_cast<double>((n + batch - 1) / batch * batch);
  t0 = Clock::now();
  for (long i = 0; i < n; ++i) {
    tune::Transaction txn(*store);
    txn.commit();
  }
  const double empty_us = seconds_since(t0) * 1e6 / static_cast<double>(n);
  tune::Json out = common(o, "store_commit");
  out.update({{"results", n}, {"batch", batch}, {"result_own_txn_us", single_us},
              {"result_in_batch_us", batched_us}, {"empty_txn_us", empty_us}});
  return out;
}

// 5. Where a trial's and a result's cost goes: the driver's own profile.
tune::Json bench_parts(const Options& o) {
  const long n = o.trials > 0 ? o.trials : 1000;
  const int slots = o.slots > 0 ? o.slots : 2;
  const long reports = o.reports > 0 ? o.reports : 5;
  TempStore store(o, "parts");
  const std::string profile = store.path() + "/profile.json";
  // Read once, at the driver's first profiled call: set before the sweep starts.
  setenv("TUNE_PROFILE", profile.c_str(), 1);
  tune::SweepSpec spec = base_spec(o, "parts", n);
  tune::RunConfig run = run_config(store, slots);
  run.verbose = true;  // the progress table is a part too (to stderr)
  run.progress_interval_s = 0.05;
  tune::Tuner tuner(
      [reports](tune::Session& s) {
        const double loss = objective(s.config());
        for (long i = 0; i < reports; ++i) s.report({{"loss", loss + static_cast<double>(i)}});
      },
      spec, run);
  Fit fit = timed_fit(tuner, store.path(), spec.name);
  std::ifstream in(profile);
  if (!in) throw std::runtime_error("the driver wrote no profile to " + profile);
  tune::Json parts = tune::Json::parse(in);
  tune::Json out = common(o, "driver_parts");
  out.update({{"trials", n}, {"slots", slots}, {"reports", reports}, {"wall_s", fit.wall_s},
              {"terminated", fit.terminated}, {"results_rows", fit.results}, {"parts", parts["parts"]}});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // First, before anything else: when mode `mpi` re-executes this program as
  // an MPI worker, tune::init runs the worker loop and never returns.
  tune::register_builtin_trainables();
  tune::init(argc, argv);
  Options o = parse(argc, argv);
  tune::Json out;
  try {
    if (o.mode == "trials") out = bench_trials(o);
    else if (o.mode == "mpi") out = bench_mpi(o);
    else if (o.mode == "ideal") out = bench_ideal(o);
    else if (o.mode == "results") out = bench_results(o);
    else if (o.mode == "memory") out = bench_memory(o);
    else if (o.mode == "store") out = bench_store(o);
    else if (o.mode == "parts") out = bench_parts(o);
    else usage("unknown mode '" + o.mode + "'");
  } catch (const std::exception& e) {
    std::cerr << "overhead_bench " << o.mode << ": " << e.what() << "\n";
    return 1;
  }
  std::cout << out.dump() << std::endl;
  return 0;
}
