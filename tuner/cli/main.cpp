// The `tune` command: run and resume sweeps, query the store.
#include <signal.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include <boost/program_options.hpp>

#include "tuner/cli/hosts_command.h"
#include "tuner/cli/queries.h"
#include "tuner/exec/command_trainable.h"
#include "tuner/driver/driver.h"
#include "tuner/exec/mpi_launcher.h"
#include "tuner/driver/prepare.h"
#include "tuner/cli/report_command.h"
#include "tuner/cli/slurm_submit.h"
#include "tuner/spec/sweep_reader.h"
#include "tuner/cli/tabular_cli.h"
#include "tuner/exec/host_check.h"
#include "tuner/exec/worker.h"
#include "base/error.h"
#include "base/version.h"
#include "tuner/tuner.h"
#ifdef TUNE_WITH_TORCH
#include "trainer/torch/entry.h"  // not libtorch's headers
#endif
#ifdef TUNE_WITH_XGBOOST
#include "trainer/xgboost/xgboost_trainable.h"
#endif
#include "trainer/tabular/model.h"

namespace po = boost::program_options;

namespace {

const char* kUsage = R"(usage: tune COMMAND [ARGS] [OPTIONS]

commands:
  run FILE          run the sweep described by a YAML file (--dry-run: check it and
                    print the plan; --smoke: a couple of trials of two iterations)
  submit FILE       submit the sweep as a Slurm batch job (--nodes, --time, --partition)
  resume EXP        continue an interrupted experiment (--force: take it over)
  experiments       list experiments in the store
  trials EXP        list an experiment's trials (--sort, --filter, --json, --csv)
  best EXP          the best trial (--metric, --mode, --scope, --json)
  status EXP        an experiment's state and best result so far
  report EXP...     write an interactive HTML report (--output report.html)
  results EXP       every result row (--csv or --json)
  hosts EXP         the hosts of a multi-host experiment; `hosts EXP add|drain HOST`
                    while it runs (docs/CLUSTER.md)
  trainables        list registered trainables
  predict EXP       batch prediction with the best trial's checkpoint
                    (--input, --output preds.csv, --workers N; docs/TRAINER.md)
  serve EXP         serve the best trial's tabular model over HTTP (--port 8000)

run `tune COMMAND --help` for a command's options; `tune --version` for the version.
)";

void on_signal(int) {
  // First signal: graceful stop (the driver notices). Second: leave now; the
  // store is consistent (every commit is atomic) and `tune resume` works.
  if (tune::internal::g_interrupt_requests.fetch_add(1) >= 1) std::_Exit(130);
}

// `tune predict --workers N`: mpirun runs in a process group of its own, so
// Ctrl-C (the terminal's group), SIGTERM or SIGHUP reach only this process;
// each is passed on to that group as SIGTERM, so that no rank goes on
// predicting after `tune predict` has gone. A signal before the group exists
// is passed on once it does.
volatile std::sig_atomic_t g_predict_group = 0;
volatile std::sig_atomic_t g_predict_signalled = 0;

void forward_to_predict_group(int) {
  g_predict_signalled = 1;
  if (g_predict_group > 0) ::kill(-static_cast<pid_t>(g_predict_group), SIGTERM);
}

// Stops `signal`'s default action with `handler`, unless it was ignored at
// start (SIGHUP under nohup; a background job's SIGINT).
void handle_unless_ignored(int signal, void (*handler)(int)) {
  struct sigaction current {};
  if (::sigaction(signal, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) std::signal(signal, handler);
}

// --seed: 0 .. 2^64-1 (what search.seed accepts); "-1" is no seed.
uint64_t parse_seed(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 20 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  const unsigned long long value = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE)
    throw tune::ConfigError("--seed must be an integer from 0 to 18446744073709551615, got '" + text + "'");
  return value;
}

struct Parsed {
  po::variables_map vm;
  bool help = false;
};

Parsed parse(const std::string& command, const std::vector<std::string>& args, po::options_description& options,
             const char* positional = nullptr) {
  options.add_options()("help,h", "show this help");
  po::positional_options_description positionals;
  if (positional) positionals.add(positional, 1);
  Parsed parsed;
  po::store(po::command_line_parser(args).options(options).positional(positionals).run(), parsed.vm);
  po::notify(parsed.vm);
  if (parsed.vm.count("help")) {
    std::cout << "usage: tune " << command << (positional ? std::string(" ") + positional : "") << " [OPTIONS]\n"
              << options;
    parsed.help = true;
  } else if (positional && !parsed.vm.count(positional)) {
    throw tune::ConfigError(std::string("tune ") + command + ": missing " + positional + " argument");
  }
  return parsed;
}

// A stop threshold on a key no result of the sweep ever had stopped
// nothing: most likely a misspelt metric.
void warn_unused_stop_keys(const tune::ResultGrid& results, const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    bool seen = false;
    for (const auto& result : results.results()) seen = seen || (result.metrics.is_object() && result.metrics.contains(key));
    if (!seen && results.size() > 0)
      std::cerr << "tune: warning: no result had the metric '" << key << "' of stop." << key
                << ", so it stopped no trial (is it misspelt?)\n";
  }
}

// The top-level keys in which two sweeps (SweepSpec::to_json) differ, as
// "`a`, `b`"; "" when they are the same.
std::string changed_keys(const tune::Json& file, const tune::Json& stored) {
  std::string out;
  auto add = [&out](const std::string& key) { out += (out.empty() ? "`" : ", `") + key + "`"; };
  for (const auto& [key, value] : file.items())
    if (!stored.contains(key) || stored.at(key) != value) add(key);
  for (const auto& [key, value] : stored.items())
    if (!file.contains(key)) add(key);
  return out;
}

int run_sweep(const std::string& command, const std::vector<std::string>& args) {
  std::string target, storage, name, durability, report, hostfile, interface, secret_file, relative_to;
  int slots = 0;
  std::string seed;
  bool quiet = false, dry_run = false, smoke = false, resume_if_exists = false;
  double interval = 5;
  po::options_description options("options");
  options.add_options()
      (command == "run" ? "file" : "experiment", po::value(&target), command == "run" ? "sweep file" : "experiment name")
      ("storage", po::value(&storage)->default_value("./tune_results"), "results directory")
      ("slots", po::value(&slots)->default_value(0), "cores to use (0 = all)")
      ("quiet,q", po::bool_switch(&quiet), "no progress table")
      ("progress-interval", po::value(&interval)->default_value(5.0), "seconds between progress tables")
      ("durability", po::value(&durability)->default_value("normal"),
       "normal (survives a crash) or full (also power loss; slower)")
      ("report", po::value(&report), "keep an HTML report of the sweep in this file (rewritten as it runs)")
      ("hostfile", po::value(&hostfile), "run worker groups on these hosts (OpenMPI hostfile: `node1 slots=4 gpus=2`)")
      ("network-interface", po::value(&interface),
       "with several hosts: the interface (or address) the driver listens on (default: the one reaching the hosts)")
      ("secret-file", po::value(&secret_file),
       "with several hosts: the cluster key, the same file on every host (default: ~/.config/tune/cluster.key)")
      ("no-slurm", "inside a Slurm allocation, still run on this machine only");
  if (command == "resume") {
    options.add_options()("force", "take the experiment over even if the store says another driver runs it");
  }
  if (command == "run") {
    options.add_options()("name", po::value(&name), "experiment name (default: the file's `name`)")(
        "seed", po::value(&seed), "search seed (overrides the file's search.seed)")(
        "dry-run", po::bool_switch(&dry_run), "check the sweep and print what it would run; create nothing")(
        "smoke", po::bool_switch(&smoke), "a smoke test: at most 2 trials (one per grid point), each stopped after 2 results")(
        "resume-if-exists", po::bool_switch(&resume_if_exists),
        "if the store already has this experiment, continue it as `tune resume` does (a requeued batch job); "
        "the file's sweep must be the one it started with")(
        "relative-to", po::value(&relative_to),
        "the folder the file's relative paths (data.path, trainable.cwd) are relative to (default: the file's own)");
  }
  Parsed parsed = parse(command, args, options, command == "run" ? "file" : "experiment");
  if (parsed.help) return 0;
  if (durability != "normal" && durability != "full") {
    throw tune::ConfigError("--durability must be normal or full, got '" + durability + "'");
  }
  if (slots < 0) throw tune::ConfigError("--slots must be >= 0");
  if (!(interval > 0) || !std::isfinite(interval))
    throw tune::ConfigError("--progress-interval must be a positive number of seconds (--quiet: no table)");

  tune::RunConfig run;
  run.storage_path = storage;
  run.slots = slots;
  run.verbose = !quiet;
  run.progress_interval_s = interval;
  run.durability = durability == "full" ? tune::Durability::kFull : tune::Durability::kNormal;
  run.report_path = report;
  run.hostfile = hostfile;
  run.network_interface = interface;
  run.secret_file = secret_file;
  run.use_slurm_allocation = !parsed.vm.count("no-slurm");
  run.force = parsed.vm.count("force") > 0;

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // A closed terminal (SIGHUP) stops the sweep as Ctrl-C does, the store
  // recording it; under nohup (SIGHUP ignored) it stays ignored.
  handle_unless_ignored(SIGHUP, on_signal);
  std::string experiment;
  std::vector<std::string> stop_keys;  // metric thresholds, checked against the results at the end
  bool multi_objective = false;
  // --resume-if-exists and the experiment is in the store: the file's sweep
  // is checked against the stored one, then it is resumed.
  std::optional<tune::ExperimentRecord> existing;
  tune::internal::LoadedSweep loaded;
  if (command == "run") {
    loaded = tune::internal::read_sweep_file(target, relative_to);
    if (parsed.vm.count("name")) loaded.spec.name = name;
    if (parsed.vm.count("seed")) loaded.spec.search.seed = parse_seed(seed);
    if (resume_if_exists) {
      if (smoke) throw tune::ConfigError("--resume-if-exists and --smoke do not go together (a smoke test is a new sweep)");
      if (loaded.spec.name.empty())
        throw tune::ConfigError("--resume-if-exists needs the experiment's name: the file's `name`, or --name");
      if (tune::Store::exists(storage)) existing = tune::Store::open(storage, true)->find_experiment(loaded.spec.name);
    }
    if (existing) {
      const tune::SweepSpec stored = tune::SweepSpec::from_json(existing->spec);
      if (!loaded.spec.search.seed) loaded.spec.search.seed = stored.search.seed;  // drawn by its first run
      auto sweep = tune::internal::prepare_sweep(std::move(loaded.spec), run, {}, nullptr, loaded.source.get(), false);
      // The stored sweep read and written by this version, as the file's is.
      const std::string changed = changed_keys(sweep.spec.to_json(), stored.to_json());
      if (!changed.empty()) {
        throw tune::ConfigError(target + ": experiment '" + existing->name + "' in " + storage +
                                " was started with another sweep (" + changed +
                                " differ): continue it with `tune resume " + existing->name +
                                "`, or give this one another --name");
      }
      if (dry_run) {
        std::cout << "dry run of " << target << ": experiment '" << existing->name << "' exists in " << storage
                  << " (" << existing->status << "), started with this sweep; `tune run --resume-if-exists` "
                  << "continues it as `tune resume " << existing->name << "` does (nothing changed)\n";
        return 0;
      }
      std::cerr << "tune: experiment '" << existing->name << "' exists in " << storage << " (" << existing->status
                << "): continuing it\n";
      target = existing->name;
      run.wait_for_stale_lease = true;
    }
  }
  if (command == "run" && !existing) {
    if (smoke) std::cout << tune::internal::make_smoke(loaded.spec) << "\n";
    const bool seeded = loaded.spec.search.seed.has_value();
    // Everything is checked before the store exists: a bad sweep creates nothing.
    auto sweep = tune::internal::prepare_sweep(std::move(loaded.spec), run, {}, nullptr, loaded.source.get(), false);
    if (dry_run) {
      if (!seeded) sweep.spec.search.seed.reset();  // drawn when it runs, not this one
      std::cout << "dry run of " << target << " (nothing created; `tune run` without --dry-run runs it):\n"
                << tune::internal::describe_plan(sweep, run);
      return 0;
    }
    for (const auto& [key, threshold] : sweep.spec.stop.metric_thresholds) stop_keys.push_back(key);
    multi_objective = !sweep.spec.objectives.empty();
    experiment = tune::internal::run_experiment(std::move(sweep), run, /*resume=*/false);
  } else {
    if (!tune::Store::exists(storage)) throw tune::NotFoundError("no tune store at " + storage);
    auto restored = tune::Store::open(storage, true)->find_experiment(target);
    if (!restored) throw tune::NotFoundError("no experiment named '" + target + "' in " + storage);
    tune::SweepSpec spec = tune::SweepSpec::from_json(restored->spec);
    spec.name = target;
    auto sweep = tune::internal::prepare_sweep(std::move(spec), run, {}, nullptr, nullptr, true);
    for (const auto& [key, threshold] : sweep.spec.stop.metric_thresholds) stop_keys.push_back(key);
    multi_objective = !sweep.spec.objectives.empty();
    experiment = tune::internal::run_experiment(std::move(sweep), run, /*resume=*/true);
  }
  // 130 exactly when the store says INTERRUPTED: a signal that came after the
  // driver's last commit interrupted nothing (the driver reads the flag then).
  const auto stored = tune::Store::open(storage, true)->find_experiment(experiment);
  if (stored && stored->status == "INTERRUPTED") return 130;
  tune::ResultGrid results = tune::load_results(storage, experiment);
  if (!quiet) {
    std::cout << "experiment " << experiment << ": " << results.num_terminated() << " terminated, "
              << results.num_errors() << " errored; query with `tune trials " << experiment << "` and `tune best "
              << experiment << "`\n";
    if (multi_objective) {
      std::string names;
      const auto front = results.pareto_front();
      for (const auto& r : front) names += (names.empty() ? "" : ", ") + r.trial_name;
      std::cout << "pareto front: " << front.size() << " trials" << (names.empty() ? "" : ": " + names) << "\n";
    }
  }
  if (results.size() > 0 && results.num_errors() == static_cast<int>(results.size())) {
    // Said even with --quiet: exit status 1 alone explains nothing.
    const std::string& error = results.results().front().error;
    std::cerr << "tune: every trial of " << experiment << " failed (first error: "
              << error.substr(0, error.find('\n')) << "); see `tune trials " << experiment << " --storage " << storage
              << "`\n";
    return 1;
  }
  warn_unused_stop_keys(results, stop_keys);
  return 0;
}

int query(const std::string& command, const std::vector<std::string>& args) {
  tune::cli::QueryOptions q;
  bool json = false, csv = false;
  po::options_description options("options");
  options.add_options()("storage", po::value(&q.storage)->default_value("./tune_results"), "results directory")(
      "json", po::bool_switch(&json), "JSON output");
  const char* positional = nullptr;
  if (command != "experiments") {
    options.add_options()("experiment", po::value(&q.experiment), "experiment name");
    positional = "experiment";
  }
  if (command == "trials" || command == "experiments") options.add_options()("csv", po::bool_switch(&csv), "CSV output");
  if (command == "trials") {
    options.add_options()("sort", po::value(&q.sort), "sort by a column (trial, status, iter, a param or metric)")(
        "desc", po::bool_switch(&q.descending), "sort descending")(
        "filter", po::value(&q.filters)->composing(), "KEY=V, KEY!=V, KEY<N, KEY<=N, KEY>N, KEY>=N (repeatable)")(
        "limit", po::value(&q.limit)->default_value(0), "at most N rows");
  }
  if (command == "best") {
    options.add_options()("metric", po::value(&q.metric), "metric (default: the experiment's)")(
        "mode", po::value(&q.mode), "min or max (default: the experiment's)")(
        "scope", po::value(&q.scope)->default_value("last"), "last, all, avg, last-5-avg or last-10-avg");
  }
  Parsed parsed = parse(command, args, options, positional);
  if (parsed.help) return 0;
  if (json && csv) throw tune::ConfigError("choose one of --json and --csv");
  q.format = json ? "json" : csv ? "csv" : "table";
  if (command == "experiments") return tune::cli::list_experiments(q, std::cout);
  if (command == "trials") return tune::cli::list_trials(q, std::cout);
  if (command == "best") return tune::cli::show_best(q, std::cout);
  return tune::cli::show_status(q, std::cout);
}

#ifdef TUNE_WITH_TORCH
int predict(const std::vector<std::string>& args) {
  tune::torch_dp::PredictOptions p;
  bool mpi_child = false;
  po::options_description options("options");
  options.add_options()("experiment", po::value(&p.experiment), "experiment whose best checkpoint predicts")(
      "storage", po::value(&p.storage)->default_value("./tune_results"), "results directory")(
      "input", po::value(&p.input), "a CSV file (tabular models, taxi_tip), fashion-mnist:test, an IDX images file or taxi-trips:N")(
      "output", po::value(&p.output), "predictions CSV to write (row,prediction,...)")(
      "workers", po::value(&p.workers)->default_value(1), "ranks to spread prediction over (mpirun)")(
      "checkpoint", po::value(&p.checkpoint), "use this checkpoint directory instead of the best trial's")(
      "metric", po::value(&p.metric), "select the best trial by this metric (default: the experiment's)")(
      "mode", po::value(&p.mode), "min or max (default: the experiment's)")(
      "batch-size", po::value(&p.batch_size)->default_value(p.batch_size), "rows per forward pass");
  po::options_description hidden;
  hidden.add_options()("mpi-child", po::bool_switch(&mpi_child));
  options.add_options()("help,h", "show this help");
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positionals;
  positionals.add("experiment", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positionals).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: tune predict EXP --input IN --output OUT [OPTIONS]\n" << options;
    return 0;
  }
  tune::torch_dp::check_predict_options(p);
  if (mpi_child) return tune::torch_dp::predict_as_rank(p, std::cout);
  const tune::cli::ChosenCheckpoint chosen = tune::cli::choose_checkpoint({p.storage, p.experiment, p.checkpoint, p.metric, p.mode});
  if (!chosen.trial_name.empty()) {
    std::cout << "best trial " << chosen.trial_name << " (" << chosen.metric << " " << chosen.score
              << "), checkpoint " << chosen.path << "\n";
  }
  if (tune::tabular::is_tabular_checkpoint(chosen.path)) {
    if (p.workers != 1) throw tune::ConfigError("tune predict: tabular models predict in one process (drop --workers)");
    return tune::cli::predict_tabular(chosen, p.input, p.output, std::cout);
  }
  if (p.workers == 1) return tune::torch_dp::predict_checkpoint_to_csv(chosen.path, p, std::cout);
  const std::string checkpoint = tune::torch_dp::loadable_checkpoint(chosen.path);
  // Several ranks: this program again under mpirun, each rank reading the
  // chosen checkpoint.
  tune::internal::MpiLaunch launch;
  launch.ranks = p.workers;
  launch.program = {tune::internal::self_executable(), "predict"};
  launch.program.insert(launch.program.end(), args.begin(), args.end());
  launch.program.insert(launch.program.end(), {"--checkpoint", checkpoint, "--mpi-child"});
  std::cout.flush();
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) handle_unless_ignored(signal, forward_to_predict_group);
  const pid_t group = tune::internal::spawn_mpirun(launch);
  g_predict_group = group;
  if (g_predict_signalled) ::kill(-group, SIGTERM);
  const int code = tune::internal::reap(group, std::chrono::hours(24 * 365));
  return g_predict_signalled ? 130 : code;
}
#endif

}  // namespace

#ifdef TUNE_CLI_LIGHT
// The `tune` on PATH answers the store's queries itself: without libtorch and
// its ~290 shared libraries it starts in ~25 ms instead of ~0.9 s. Every other
// command (run, resume, submit, predict, serve, trainables) and a worker
// process started with this path replace this process with tune-full, found
// beside this one (the build tree) or at TUNE_FULL_RELATIVE (installed).
bool answered_here(const std::string& command) {
  for (const char* light :
       {"--help", "-h", "help", "--version", "experiments", "trials", "best", "status", "report", "results", "hosts"})
    if (command == light) return true;
  return false;
}

[[noreturn]] void exec_full(char** argv) {
  std::string self;
  try {
    self = tune::internal::self_executable();
  } catch (const std::exception& e) {
    std::cerr << "tune: " << e.what() << "\n";
    std::exit(1);
  }
  const std::string dir = self.substr(0, self.rfind('/') + 1);
  // What `tune submit` writes into a batch script: this program, not tune-full.
  ::setenv("TUNE_CLI_PROGRAM", self.c_str(), 1);
  for (const std::string& path : {dir + "tune-full", dir + TUNE_FULL_RELATIVE}) {
    if (::access(path.c_str(), X_OK) != 0) continue;
    ::execv(path.c_str(), argv);
    std::cerr << "tune: cannot run " << path << ": " << std::strerror(errno) << "\n";
    std::exit(1);
  }
  std::cerr << "tune: the full program is missing (looked for " << dir << "tune-full and " << dir
            << TUNE_FULL_RELATIVE << "): reinstall tune\n";
  std::exit(1);
}
#endif

int main(int argc, char** argv) {
#ifdef TUNE_CLI_LIGHT
  if (tune::internal::started_as_worker() || tune::internal::started_as_host_check() ||
      (argc >= 2 && !answered_here(argv[1])))
    exec_full(argv);
#endif
  tune::register_builtin_trainables();
  tune::internal::register_command_trainable();
#ifdef TUNE_WITH_TORCH
  tune::register_torch_trainables();
#endif
#ifdef TUNE_WITH_XGBOOST
  tune::register_xgboost_trainable();
#endif
  tune::init(argc, argv);  // never returns in a worker process

  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "--help" || command == "-h" || command == "help") {
      std::cout << kUsage;
      return 0;
    }
    if (command == "--version") {
      std::cout << "tune " << tune::version() << "\n";
      return 0;
    }
    if (command == "run" || command == "resume") return run_sweep(command, args);
    if (command == "experiments" || command == "trials" || command == "best" || command == "status") {
      return query(command, args);
    }
    if (command == "report") return tune::cli::report_command(args);
    if (command == "results") return tune::cli::results_command(args);
    if (command == "hosts") return tune::cli::hosts_command(args);
    if (command == "submit") return tune::cli::submit_command(args);
#ifdef TUNE_WITH_TORCH
    if (command == "predict") return predict(args);
#endif
#ifndef TUNE_CLI_LIGHT
    if (command == "serve") return tune::cli::serve_command(args);
#endif
    if (command == "trainables") {
      po::options_description options("options");
      if (parse(command, args, options).help) return 0;
      for (const auto& name : tune::trainable_names()) {
        std::cout << name << "\t" << tune::find_trainable(name)->info.description << "\n";
      }
      return 0;
    }
    throw tune::ConfigError("unknown command '" + command + "' (run `tune --help`)");
  } catch (const tune::ConfigError& e) {
    std::cerr << "tune: " << e.what() << "\n";
    return 2;
  } catch (const tune::internal::NoHostsLeft& e) {
    std::cerr << "tune: " << e.what() << "\n";
    return tune::internal::kExitNoHosts;
  } catch (const tune::NotFoundError& e) {
    std::cerr << "tune: " << e.what() << "\n";
    return 2;
  } catch (const po::error& e) {
    std::cerr << "tune " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tune: " << e.what() << "\n";
    return 1;
  }
}
