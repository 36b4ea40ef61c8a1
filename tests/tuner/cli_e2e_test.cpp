// End-to-end: the `tune` binary run as a user would, then queried.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "storage/store.h"
#include "tuner/spec/sweep_spec.h"
#include "test_util.h"
#include "tuner_test_util.h"

namespace tune {
namespace {

using Json = nlohmann::json;
using testing::json_of;
using testing::run_command;
using testing::run_tune;
using testing::TempDir;
using testing::wait_gone;

const char* kBranin = R"(name: branin-e2e
trainable: branin
metric: loss
mode: min
num_samples: 3
max_concurrent_trials: 2
search: {algorithm: random, seed: 11}
stop: {training_iteration: 4}
param_space:
  x0: {uniform: [-5, 10]}
  x1: {uniform: [0, 15]}
  side: {grid_search: [left, right]}
)";

TEST(CliEndToEnd, RunsASweepAndAnswersQueries) {
  TempDir dir;
  std::string file = dir.write("sweep.yaml", kBranin);
  auto run = run_tune("run " + file + " --storage " + dir.file("store") + " --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;

  auto trials = run_tune("trials branin-e2e --storage " + dir.file("store") + " --json");
  ASSERT_EQ(trials.exit_code, 0) << trials.err;
  Json list = json_of(trials.out);
  ASSERT_EQ(list.size(), 6u);  // 3 samples x 2 grid values
  double best_loss = 1e300;
  int left = 0;
  for (const auto& t : list) {
    EXPECT_EQ(t["status"], "TERMINATED");
    EXPECT_EQ(t["iteration"], 4);
    left += t["config"]["side"] == "left";
    best_loss = std::min(best_loss, t["last_result"]["loss"].get<double>());
  }
  EXPECT_EQ(left, 3);

  auto best = run_tune("best branin-e2e --storage " + dir.file("store") + " --json");
  ASSERT_EQ(best.exit_code, 0) << best.err;
  Json b = json_of(best.out);
  EXPECT_DOUBLE_EQ(b["score"].get<double>(), best_loss);
  EXPECT_DOUBLE_EQ(b["metrics"]["loss"].get<double>(), best_loss);
  EXPECT_TRUE(b["config"].contains("x0"));

  auto all_scope = run_tune("best branin-e2e --storage " + dir.file("store") + " --json --scope all --mode max");
  ASSERT_EQ(all_scope.exit_code, 0) << all_scope.err;
  EXPECT_GE(json_of(all_scope.out)["score"].get<double>(), best_loss);

  auto sorted = run_tune("trials branin-e2e --storage " + dir.file("store") + " --csv --sort loss --limit 2");
  ASSERT_EQ(sorted.exit_code, 0) << sorted.err;
  EXPECT_EQ(sorted.out.rfind("trial,status,", 0), 0u) << sorted.out;
  EXPECT_EQ(std::count(sorted.out.begin(), sorted.out.end(), '\n'), 3);

  auto filtered = run_tune("trials branin-e2e --storage " + dir.file("store") + " --json --filter side=right");
  EXPECT_EQ(json_of(filtered.out).size(), 3u);

  auto experiments = run_tune("experiments --storage " + dir.file("store") + " --json");
  ASSERT_EQ(experiments.exit_code, 0);
  EXPECT_EQ(json_of(experiments.out)[0]["name"], "branin-e2e");

  auto status = run_tune("status branin-e2e --storage " + dir.file("store") + " --json");
  ASSERT_EQ(status.exit_code, 0);
  EXPECT_EQ(json_of(status.out)["status"], "FINISHED");
  EXPECT_EQ(json_of(status.out)["counts"]["TERMINATED"], 6);

  // Plain SQL works on the store too.
  auto sql = run_command("sqlite3 " + dir.file("store/tune.db") +
                         " \"SELECT count(*) FROM results r JOIN trials t ON t.id = r.trial_id\"");
  if (sql.exit_code == 0) EXPECT_EQ(sql.out, "24\n");
}

TEST(CliEndToEnd, UnknownExperimentIsAOneLineErrorWithStatus2) {
  TempDir dir;
  run_tune("run " + dir.write("s.yaml", kBranin) + " --storage " + dir.path() + " --quiet");
  for (std::string command : {"trials", "best", "status"}) {
    auto result = run_tune(command + " branin-e3e --storage " + dir.path());
    EXPECT_EQ(result.exit_code, 2) << command;
    EXPECT_NE(result.err.find("no experiment named 'branin-e3e'"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("did you mean 'branin-e2e'"), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
}

struct BadSweep {
  const char* text;
  const char* expected;  // substring of the one-line error
};

class CliBadInput : public ::testing::TestWithParam<BadSweep> {};

TEST_P(CliBadInput, ExitsWith2AndCreatesNothing) {
  TempDir dir;
  std::string file = dir.write("bad.yaml", GetParam().text);
  auto result = run_tune("run " + file + " --storage " + dir.file("store") + " --quiet");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find(GetParam().expected), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("store")));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CliBadInput,
    ::testing::Values(
        BadSweep{"trainable: branin\nparam_space: {x0: [1, 2\n", "bad.yaml:"},
        BadSweep{"trainable: branin\nnum_sample: 3\nparam_space: {}\n", "bad.yaml:2: unknown key 'num_sample' (did you mean 'num_samples'?)"},
        BadSweep{"trainable: branin\nnum_samples: many\nparam_space: {}\n", "bad.yaml:2: num_samples"},
        BadSweep{"trainable: branin\nparam_space:\n  x0: {uniform: [10, -5]}\n", "bad.yaml:3:"},
        BadSweep{"trainable: branin\nparam_space:\n  lr: {loguniform: [0, 1]}\n", "bad.yaml:3:"},
        BadSweep{"trainable: branin\nparam_space:\n  lr: {loguniorm: [0.1, 1]}\n", "did you mean 'loguniform'"},
        BadSweep{"trainable: branni\nparam_space: {x0: {uniform: [0, 1]}}\n", "unknown trainable 'branni' (did you mean 'branin'?)"},
        BadSweep{"trainable: branin\nsearch: {algorithm: bayez}\nparam_space: {}\n", "bad.yaml:2:"},
        BadSweep{"trainable: branin\nmetric: loss\nparam_space: {}\n", "mode"},
        BadSweep{"trainable: branin\nparam_space:\n  x: {choice: []}\n", "bad.yaml:3:"},
        BadSweep{"trainable: branin\nresources: {workers: 64}\nparam_space: {}\n", "slots"},
        BadSweep{"trainable: branin\ndata: {path: x.csv}\nparam_space: {}\n",
                 "trainable 'branin' takes no data: or preprocess: block"},
        // Issue 15, item 5: each a one-line error at its line, exit 2.
        BadSweep{"trainable: branin\nname: \"caf\xe9\"\nparam_space: {}\n", "bad.yaml:2: text is not valid UTF-8"},
        BadSweep{"trainable: branin\nparam_space:\n  n: {randint: [0, 9223372036854775807]}\n",
                 "bad.yaml:3: parameter 'n': randint: arguments must be integers between -2^53 and 2^53"},
        BadSweep{"trainable: branin\nparam_space:\n  x0: {uniform: [-1.0e308, 1.0e308]}\n", "bad.yaml:3:"},
        BadSweep{"trainable: branin\nstop: {training_iteraton: 2}\nparam_space: {}\n",
                 "bad.yaml:2: unknown stop key 'training_iteraton' (did you mean 'training_iteration'?)"},
        BadSweep{"trainable: branin\nparam_space:\n  x0: {normal: [0, 1]}\n",
                 "bad.yaml:3: unknown domain 'normal' for parameter 'x0' (did you mean 'randn'?)"},
        BadSweep{"name: run\ntrainable: branni\nparam_space: {}\n", "bad.yaml:2: unknown trainable 'branni'"},
        BadSweep{"name: ../up\ntrainable: branin\nparam_space: {}\n", "bad.yaml:1: invalid experiment name '../up'"},
        BadSweep{"trainable: branin\nresources: {workers: 64}\nparam_space: {}\n", "bad.yaml:2: a trial needs 64 slots"},
        BadSweep{"trainable: branin\nparam_space: {}\n---\ntrainable: hartmann6\n", "bad.yaml:3: a sweep file holds one"},
        BadSweep{"trainable: branin\nparam_space: {}\nname: \"open\nmetric: loss\n", "bad.yaml:3:"}));

// Deep nesting (the document's depth bound), in both YAML styles.
TEST(CliBadInputFile, NestingDeeperThanTheBoundIsALineError) {
  TempDir dir;
  std::string block = "trainable: branin\nparam_space: {}\nx-deep:\n";
  for (int depth = 1; depth <= 600; ++depth) block += std::string(2 * depth, ' ') + "k:\n";
  for (const std::string& text : std::vector<std::string>{block, "trainable: branin\nparam_space: {}\nx-deep: " + std::string(600, '[') + std::string(600, ']') + "\n"}) {
    auto result = run_tune("run " + dir.write("deep.yaml", text) + " --storage " + dir.file("store") + " --quiet");
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_NE(result.err.find("deep.yaml:"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("nesting deeper than 64 levels"), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
}

// A device or a huge file is refused before it is read whole.
TEST(CliBadInputFile, ANonRegularOrHugeFileIsRefused) {
  TempDir dir;
  auto zero = run_tune("run /dev/zero --storage " + dir.file("store"));
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
  EXPECT_NE(zero.err.find("/dev/zero: file is larger than 16 MiB"), std::string::npos) << zero.err;
  auto folder = run_tune("run " + dir.path() + " --storage " + dir.file("store"));
  EXPECT_EQ(folder.exit_code, 2) << folder.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("store")));
}

// Options: bad values are usage errors (exit 2), never wrapped or ignored.
TEST(CliOptions, BadValuesAreUsageErrors) {
  TempDir dir;
  const std::string file = dir.write("s.yaml", kBranin);
  const std::string run = "run " + file + " --storage " + dir.file("store") + " --quiet ";
  auto seed = run_tune(run + "--seed -1");
  EXPECT_EQ(seed.exit_code, 2) << seed.err;
  EXPECT_NE(seed.err.find("--seed must be an integer from 0 to 18446744073709551615, got '-1'"), std::string::npos)
      << seed.err;
  auto interval = run_tune(run + "--progress-interval 0");
  EXPECT_EQ(interval.exit_code, 2) << interval.err;
  EXPECT_NE(interval.err.find("--progress-interval must be a positive number"), std::string::npos) << interval.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("store")));
  auto bogus = run_tune("trainables --bogus");
  EXPECT_EQ(bogus.exit_code, 2) << bogus.out;
  EXPECT_NE(bogus.err.find("bogus"), std::string::npos) << bogus.err;
  EXPECT_EQ(run_tune("trainables --help").exit_code, 0);

  auto big = run_tune(run + "--seed 18446744073709551615");
  ASSERT_EQ(big.exit_code, 0) << big.err;
  auto store = Store::open(dir.file("store"), true);
  EXPECT_EQ(SweepSpec::from_json(store->find_experiment("branin-e2e")->spec).search.seed.value(), 18446744073709551615ull);
}

// A stop threshold on a metric no result has stopped nothing: said once.
TEST(CliOptions, AStopKeyNoResultHadIsAWarning) {
  TempDir dir;
  std::string text = kBranin;
  text.replace(text.find("stop: {training_iteration: 4}"), 29, "stop: {training_iteration: 4, accuracy: 0.9}");
  auto run = run_tune("run " + dir.write("s.yaml", text) + " --storage " + dir.file("store") + " --quiet");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("warning: no result had the metric 'accuracy' of stop.accuracy"), std::string::npos) << run.err;
}

// Queries never write: they work on a store its reader cannot write (another
// user's results, the writer gone). Root ignores file modes, so the queries
// run as nobody (setpriv) on a store only root may write.
TEST(CliQueries, WorkOnAReadOnlyStore) {
  TempDir dir;
  auto run = run_tune("run " + dir.write("s.yaml", kBranin) + " --storage " + dir.file("store") + " --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string storage = dir.file("store");
  std::string as_reader;
  if (::geteuid() == 0) {
    // setpriv: util-linux, which scripts/install-deps.sh installs.
    ASSERT_EQ(run_command("command -v setpriv").exit_code, 0) << "no setpriv to drop root";
    as_reader = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
    // nobody must reach the binary and the store's folder, and write nothing.
    ASSERT_EQ(run_command(as_reader + TUNE_BINARY " --help").exit_code, 0) << "nobody cannot run " TUNE_BINARY;
  }
  const std::string out = dir.file("out");  // where the reader may write its report
  ASSERT_EQ(run_command("mkdir -m 777 " + out + " && chmod 755 " + dir.path() + " && chmod -R a-w " + storage).exit_code, 0);
  ASSERT_NE(run_command(as_reader + "touch " + storage + "/probe").exit_code, 0) << "the store is still writable";
  auto queries = [&](const std::string& state) {
    for (const std::string& query : std::vector<std::string>{"trials branin-e2e --json", "best branin-e2e",
                                                             "status branin-e2e", "experiments", "results branin-e2e --csv",
                                                             "report branin-e2e --output " + out + "/report.html"}) {
      auto result = run_command(as_reader + TUNE_BINARY " " + query + " --storage " + storage);
      EXPECT_EQ(result.exit_code, 0) << state << ": " << query << ": " << result.err;
      EXPECT_EQ(result.err.find("readonly"), std::string::npos) << state << ": " << query << ": " << result.err;
    }
  };
  queries("with the writer's -wal and -shm");
  // Without them (the writer closed cleanly): SQLite cannot create the -shm.
  const std::string db = storage + "/tune.db";
  if (run_command("chmod u+w " + storage + " && sqlite3 " + db + " 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null && rm -f " +
                  db + "-wal " + db + "-shm && chmod a-w " + storage).exit_code == 0) {
    ASSERT_FALSE(std::filesystem::exists(db + "-wal"));
    queries("without -wal and -shm");
  }
  run_command("chmod -R u+w " + storage);
}

TEST(CliBadInputFile, MissingFileIsAOneLineError) {
  TempDir dir;
  auto result = run_tune("run " + dir.file("nope.yaml") + " --storage " + dir.file("store"));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("nope.yaml"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("store")));
}

const char* kFlaky = R"(name: flaky
trainable: synthetic
metric: loss
mode: min
num_samples: 2
resources: {workers: 1, use_mpi: USE_MPI}
search: {seed: 5}
param_space:
  x: {uniform: [1, 2]}
  iterations: 5
  checkpoint: true
  fail_at: 3
  fail_mode: MODE
failure: {max_failures: 1}
)";

std::string flaky(const std::string& use_mpi, const std::string& mode) {
  std::string text = kFlaky;
  text.replace(text.find("USE_MPI"), 7, use_mpi);
  text.replace(text.find("MODE"), 4, mode);
  return text;
}

void expect_retried_from_checkpoint(const TempDir& dir) {
  auto trials = run_tune("trials flaky --storage " + dir.file("store") + " --json");
  ASSERT_EQ(trials.exit_code, 0) << trials.err;
  for (const auto& t : json_of(trials.out)) {
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    EXPECT_EQ(t["attempts"], 2);
    EXPECT_EQ(t["iteration"], 5);
    // state accumulates x per iteration: a restart from the checkpoint at 2
    // (not from scratch) ends with 5x.
    EXPECT_NEAR(t["last_result"]["state"].get<double>(), 5 * t["config"]["x"].get<double>(), 1e-9);
  }
  auto sql = run_command("sqlite3 " + dir.file("store/tune.db") +
                         " \"SELECT min(iteration) FROM results WHERE attempt = 2\"");
  if (sql.exit_code == 0) EXPECT_EQ(sql.out, "3\n");
}

TEST(CliFailures, AThrowingTrialIsRetriedFromItsCheckpoint) {
  TempDir dir;
  auto run = run_tune("run " + dir.write("f.yaml", flaky("false", "throw")) + " --storage " + dir.file("store") + " --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  expect_retried_from_checkpoint(dir);
}

TEST(CliFailures, AWorkerProcessThatExitsIsRetriedInANewGroup) {
  TempDir dir;
  auto run = run_tune("run " + dir.write("f.yaml", flaky("true", "exit")) + " --storage " + dir.file("store") +
                      " --quiet --slots 2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  expect_retried_from_checkpoint(dir);
}

TEST(CliFailures, ANanResultWithoutRetriesEndsTheTrialAsError) {
  TempDir dir;
  std::string text = flaky("false", "nan");
  text.replace(text.find("max_failures: 1"), 15, "max_failures: 0");
  auto run = run_tune("run " + dir.write("f.yaml", text) + " --storage " + dir.file("store") + " --quiet");
  EXPECT_EQ(run.exit_code, 1);  // every trial errored
  // Said even with --quiet: the exit status alone explains nothing.
  EXPECT_NE(run.err.find("tune: every trial of flaky failed (first error: metric 'loss' is not finite"),
            std::string::npos)
      << run.err;
  auto trials = json_of(run_tune("trials flaky --storage " + dir.file("store") + " --json").out);
  ASSERT_EQ(trials.size(), 2u);
  for (const auto& t : trials) {
    EXPECT_EQ(t["status"], "ERROR");
    EXPECT_NE(t["error"].get<std::string>().find("not finite"), std::string::npos);
  }
}

TEST(CliMpi, TrainsALibtorchModelInATwoRankGroup) {
  TempDir dir;
  std::string sweep = R"(name: mlp2
trainable: mlp
metric: loss
mode: min
num_samples: 2
resources: {workers: 2}
search: {seed: 3}
stop: {training_iteration: 3}
param_space:
  lr: {loguniform: [0.01, 0.1]}
  samples: 256
  epochs: 3
checkpoint: {num_to_keep: 1}
)";
  auto run = run_tune("run " + dir.write("m.yaml", sweep) + " --storage " + dir.file("store") + " --quiet --slots 2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto trials = json_of(run_tune("trials mlp2 --storage " + dir.file("store") + " --json").out);
  ASSERT_EQ(trials.size(), 2u);
  for (const auto& t : trials) {
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    EXPECT_EQ(t["last_result"]["world_size"], 2);
    EXPECT_GT(t["last_result"]["accuracy"].get<double>(), 0.3);  // 4 classes: chance is 0.25
    EXPECT_TRUE(std::filesystem::exists(t["checkpoint"].get<std::string>() + "/model.pt"));
  }
  // Both trials ran on one reused group.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.file("store/mlp2/logs")),
                          std::filesystem::directory_iterator()), 1);
}

// A trial without GPUs hides them from its ranks (CUDA_VISIBLE_DEVICES=""),
// so a CUDA build of a trainable does not take a GPU given to another trial.
TEST(CliMpi, RanksOfATrialWithoutGpusSeeNone) {
  TempDir dir;
  const std::string sweep = "name: nogpu\ntrainable: synthetic\nmetric: loss\nmode: min\nnum_samples: 1\n"
                            "resources: {workers: 2}\nparam_space:\n  iterations: 1\n  record_env: " +
                            dir.file("env") + "\n";
  auto run = run_tune("run " + dir.write("g.yaml", sweep) + " --storage " + dir.file("store") + " --quiet --slots 2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (int rank = 0; rank < 2; ++rank) {
    std::ifstream in(dir.file("env/trial_0_rank_" + std::to_string(rank) + ".txt"));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("CUDA_VISIBLE_DEVICES=\n"), std::string::npos) << text;
  }
}

const char* kSlow = R"(trainable: synthetic
metric: loss
mode: min
num_samples: 8
max_concurrent_trials: 2
search: {seed: 21}
param_space:
  x: {uniform: [0, 1]}
  iterations: 8
  sleep_s: 0.1
  checkpoint: true
)";

// Starts `tune ARGS` in the background and returns its pid; its exit status
// goes to DIR/rc when it ends (exit_status_of).
int start_in_background(const std::string& args, const TempDir& dir, const std::string& prefix = "") {
  run_command("(" + prefix + std::string(TUNE_BINARY) + " " + args + " & echo $! > " + dir.file("pid.tmp") + " && mv " +
              dir.file("pid.tmp") + " " + dir.file("pid") + "; wait $!; echo $? > " + dir.file("rc.tmp") + " && mv " +
              dir.file("rc.tmp") + " " + dir.file("rc") + ") >/dev/null 2>&1 &");
  int pid = 0;
  for (int i = 0; i < 200 && pid == 0; ++i) {
    std::ifstream pid_file(dir.file("pid"));
    if (!(pid_file >> pid)) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return pid;
}

// The exit status of what start_in_background started, once it has ended
// (at most 10 s more); -1 if it did not end.
int exit_status_of(const TempDir& dir) {
  for (int i = 0; i < 400; ++i) {
    std::ifstream rc(dir.file("rc"));
    int code = -1;
    if (rc >> code) return code;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return -1;
}

Json wait_for_terminated(const std::string& storage, const std::string& name, int count) {
  for (int i = 0; i < 400; ++i) {
    auto status = run_tune("status " + name + " --storage " + storage + " --json");
    if (status.exit_code == 0) {
      Json s = json_of(status.out);
      if (s["counts"].value("TERMINATED", 0) >= count) return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return nullptr;
}

std::set<std::string> configs_of(const std::string& storage, const std::string& name) {
  std::set<std::string> configs;
  for (const auto& t : json_of(run_tune("trials " + name + " --storage " + storage + " --json").out)) {
    configs.insert(t["config"].dump());
  }
  return configs;
}

// Reads the store of a running sweep every 50 ms, at most 20 s, until
// `ready` holds for its experiment `name` (the driver may still be creating
// the store).
bool wait_for_store(const std::string& storage, const std::string& name,
                    const std::function<bool(Store&, const ExperimentRecord&)>& ready) {
  for (int i = 0; i < 400; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      auto store = Store::open(storage, true);
      auto experiment = store->find_experiment(name);
      if (experiment && ready(*store, *experiment)) return true;
    } catch (const std::exception&) {
    }
  }
  return false;
}

TEST(CliResume, ContinuesAfterKill9WithTheSameConfigsAsAnUninterruptedRun) {
  TempDir dir;
  std::string file = dir.write("slow.yaml", kSlow);
  std::string storage = dir.file("store");
  int pid = start_in_background("run " + file + " --name killed --storage " + storage + " --quiet", dir);
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(wait_for_terminated(storage, "killed", 2).is_null());
  run_command("kill -9 " + std::to_string(pid));
  ASSERT_TRUE(wait_gone(pid)) << "kill -9 did not end the driver";

  auto resumed = run_tune("resume killed --storage " + storage + " --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  auto trials = json_of(run_tune("trials killed --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 8u);
  for (const auto& t : trials) {
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    EXPECT_EQ(t["iteration"], 8);
    EXPECT_NEAR(t["last_result"]["state"].get<double>(), 8 * t["config"]["x"].get<double>(), 1e-9);
  }
  auto straight = run_tune("run " + file + " --name straight --storage " + storage + " --quiet");
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  EXPECT_EQ(configs_of(storage, "killed"), configs_of(storage, "straight"));
}

TEST(CliResume, AshaPromotionKeepsItsRungsAcrossKill9) {
  TempDir dir;
  std::string file = dir.write("asha.yaml", R"(name: asha
trainable: synthetic
metric: loss
mode: min
num_samples: 9
search: {seed: 11}
scheduler: {type: asha, promotion: true, reduction_factor: 3, max_t: 9}
param_space:
  x: {uniform: [-1, 1]}
  iterations: 9
  sleep_s: 0.25
  checkpoint: true
)");
  std::string storage = dir.file("store");
  int pid = start_in_background("run " + file + " --storage " + storage + " --slots 2 --quiet", dir);
  ASSERT_GT(pid, 0);
  bool paused = false;
  for (int i = 0; i < 400 && !paused; ++i) {
    auto status = run_tune("status asha --storage " + storage + " --json");
    paused = status.exit_code == 0 && json_of(status.out)["counts"].value("PAUSED", 0) >= 4;
    if (!paused) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(paused);
  run_command("kill -9 " + std::to_string(pid));
  ASSERT_TRUE(wait_gone(pid)) << "kill -9 did not end the driver";
  {
    // The rungs were saved by parts (a pause saves with its batch): the first
    // part in experiments.scheduler_state, each later one a row.
    auto store = Store::open(storage, true);
    const auto exp = store->find_experiment("asha");
    ASSERT_FALSE(exp->scheduler_state.is_null());
    EXPECT_FALSE(store->scheduler_state_parts(exp->id).empty());
  }
  auto resumed = run_tune("resume asha --storage " + storage + " --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  {
    // Finished: the whole state in one row, the parts gone.
    auto store = Store::open(storage, true);
    const auto exp = store->find_experiment("asha");
    EXPECT_TRUE(store->scheduler_state_parts(exp->id).empty());
    EXPECT_EQ(exp->scheduler_state.at("added"), 9);
    EXPECT_EQ(exp->scheduler_state.at("bracket_of").at("trials").size(), 9u);
  }
  auto trials = json_of(run_tune("trials asha --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 9u);
  double best_x2 = 1e9;
  int64_t best_iterations = 0, at_least_3 = 0;
  for (const auto& t : trials) {
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    const double x = t["config"]["x"].get<double>();
    const int64_t it = t["iteration"].get<int64_t>();
    // Resumed from checkpoints: the state is x per iteration, never restarted.
    EXPECT_NEAR(t["last_result"]["state"].get<double>(), it * x, 1e-9);
    // At a rung (1, 3, 9) unless backfill (once the searcher was done) gave
    // it a leg in a slot that would have idled, from its checkpoint too.
    EXPECT_TRUE(it >= 1 && it <= 9) << t.dump();
    at_least_3 += it >= 3;
    if (x * x < best_x2) best_x2 = x * x, best_iterations = it;
  }
  // The rungs recorded before the kill still count: the best trial (lowest
  // x^2, paused at rung 1 or 3 when the driver died) is promoted to max_t.
  EXPECT_EQ(best_iterations, 9);
  EXPECT_GE(at_least_3, 3);
}

TEST(CliResume, ASecondDriverIsRefusedWhileTheFirstRunsAndTakesOverOnceItIsDead) {
  TempDir dir;
  // Slower than kSlow: the first driver must still run when the second
  // starts, even on a loaded machine (about 10 s of trials).
  std::string text = kSlow;
  text.replace(text.find("sleep_s: 0.1"), 12, "sleep_s: 0.3");
  std::string file = dir.write("slow.yaml", text);
  std::string storage = dir.file("store");
  int pid = start_in_background("run " + file + " --name one --storage " + storage + " --quiet", dir);
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(wait_for_terminated(storage, "one", 1).is_null());
  auto second = run_tune("resume one --storage " + storage + " --quiet");
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_NE(second.err.find("being run by another driver (pid " + std::to_string(pid)), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("--force"), std::string::npos) << second.err;
  EXPECT_EQ(std::count(second.err.begin(), second.err.end(), '\n'), 1) << "one line: " << second.err;
  auto again = run_tune("run " + file + " --name one --storage " + storage + " --quiet");
  EXPECT_EQ(again.exit_code, 2) << again.err;  // the name exists

  run_command("kill -9 " + std::to_string(pid));
  ASSERT_TRUE(wait_gone(pid)) << "kill -9 did not end the driver";
  auto resumed = run_tune("resume one --storage " + storage + " --quiet");  // its owner is dead: taken over
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  auto trials = json_of(run_tune("trials one --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 8u);
  size_t results = 0;
  for (const auto& t : trials) {
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    EXPECT_NEAR(t["last_result"]["state"].get<double>(), 8 * t["config"]["x"].get<double>(), 1e-9);
  }
  auto store = Store::open(storage, true);
  for (const auto& t : store->trials(store->find_experiment("one")->id)) results += store->results(t.id).size();
  EXPECT_LE(results, 8u * 8u + 8u) << "no trial ran twice at once (a killed attempt may repeat its last iteration)";
  // Finished: the lease is free again, a resume of a finished sweep is accepted.
  EXPECT_EQ(run_tune("resume one --storage " + storage + " --quiet").exit_code, 0);
}

TEST(CliResume, ForceTakesAnExperimentOverFromALiveDriver) {
  TempDir dir;
  std::string file = dir.write("slow.yaml", kSlow);
  std::string storage = dir.file("store");
  int pid = start_in_background("run " + file + " --name taken --storage " + storage + " --quiet", dir);
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(wait_for_terminated(storage, "taken", 1).is_null());
  auto forced = run_tune("resume taken --storage " + storage + " --quiet --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  // The first driver notices at its next heartbeat and stops (bounded wait).
  EXPECT_TRUE(wait_gone(pid, 10)) << "the driver that lost its lease kept running";
  auto status = json_of(run_tune("status taken --storage " + storage + " --json").out);
  EXPECT_EQ(status["counts"]["TERMINATED"], 8);
}

TEST(CliResume, CtrlCInterruptsAndResumeFinishes) {
  TempDir dir;
  std::string file = dir.write("slow.yaml", kSlow);
  std::string storage = dir.file("store");
  int pid = start_in_background("run " + file + " --name stopped --storage " + storage + " --quiet", dir);
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(wait_for_terminated(storage, "stopped", 1).is_null());
  run_command("kill -INT " + std::to_string(pid));
  ASSERT_TRUE(wait_gone(pid)) << "Ctrl-C did not stop the driver";
  EXPECT_EQ(exit_status_of(dir), 130) << "README: an interrupted sweep exits 130";
  auto status = json_of(run_tune("status stopped --storage " + storage + " --json").out);
  EXPECT_EQ(status["status"], "INTERRUPTED");
  ASSERT_EQ(run_tune("resume stopped --storage " + storage + " --quiet").exit_code, 0);
  status = json_of(run_tune("status stopped --storage " + storage + " --json").out);
  EXPECT_EQ(status["status"], "FINISHED");
  EXPECT_EQ(status["counts"]["TERMINATED"], 8);
}

// A driver that stands still (Ctrl-Z then `fg`, a debugger, a VM its host
// froze) while its trials' groups go on: for 14 s, longer than the sweep's
// failure.result_timeout_s (10 s: it counts from a group's start, so it
// leaves room for two mpiruns starting at once on a box busy with other
// tests). Their silence meanwhile was the driver's, not
// theirs: no trial fails, and the sweep finishes once the driver runs again.
// (SIGSTOP: a Ctrl-Z's SIGTSTP is dropped for a shell's background job.)
TEST(CliRun, ADriverStoppedLongerThanTheResultTimeoutFailsNoTrial) {
  TempDir dir;
  std::string file = dir.write("frozen.yaml", R"(trainable: synthetic
metric: loss
mode: min
max_concurrent_trials: 2
resources: {workers: 2}
failure: {max_failures: 0, result_timeout_s: 10}
param_space:
  x: {grid_search: [1, 2, 3, 4]}
  iterations: 16
  sleep_s: 0.1
)");
  std::string storage = dir.file("store");
  int pid = start_in_background("run " + file + " --name frozen --storage " + storage + " --quiet --slots 4", dir);
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(wait_for_terminated(storage, "frozen", 1).is_null());
  run_command("kill -STOP " + std::to_string(pid));
  std::this_thread::sleep_for(std::chrono::seconds(14));
  run_command("kill -CONT " + std::to_string(pid));
  ASSERT_TRUE(wait_gone(pid, 60)) << "the sweep did not end within 60 s of the driver's continuing";
  EXPECT_EQ(exit_status_of(dir), 0);
  auto trials = json_of(run_tune("trials frozen --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 4u);
  for (const auto& t : trials) {
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    EXPECT_EQ(t["attempts"], 1) << t.dump();
    EXPECT_NEAR(t["last_result"]["state"].get<double>(), 16 * t["config"]["x"].get<double>(), 1e-9) << t.dump();
  }
  const bool some_ran_through_the_stop = std::any_of(trials.begin(), trials.end(), [](const Json& t) {
    return t["last_result"].is_object() && t["last_result"].value("time_total_s", 0.0) > 14.0;
  });
  EXPECT_TRUE(some_ran_through_the_stop) << "the stop came while trials ran: " << trials.dump();
}

// Each running command trial holds a few descriptors in the driver (its
// pipes, its control socket): with the usual soft limit (1,024) a few hundred
// trials at once failed to start, as the trials' errors ("cannot create
// pipes ...: Too many open files"). The driver raises its soft limit within
// the hard one; here a soft limit of 48 and 24 trials at once.
TEST(CliRun, ManyCommandTrialsAtOnceAllFinishUnderALowDescriptorLimit) {
  TempDir dir;
  dir.write("count.sh", "for i in 1 2 3 4 5; do echo \"@tune {\\\"loss\\\": $i}\"; sleep 0.2; done\n");
  const std::string file = dir.write("many.yaml", R"(name: many
trainable:
  command: [sh, count.sh]
  cwd: .
metric: loss
mode: min
num_samples: 24
max_concurrent_trials: 24
param_space:
  x: {uniform: [0, 1]}
)");
  const std::string storage = dir.file("store");
  auto run = run_command("ulimit -S -n 48 && " + std::string(TUNE_BINARY) + " run " + file + " --storage " + storage +
                         " --slots 24 --quiet");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  auto status = json_of(run_tune("status many --storage " + storage + " --json").out);
  EXPECT_EQ(status["counts"]["TERMINATED"], 24) << status.dump();

  // A hard limit of 48 too: the starts that find no descriptor are not the
  // trials' failures (max_failures is 0 by default); they wait for running
  // trials to end, and fewer run at once. Said once. Six descriptors taken
  // ahead (inherited, as from a shell or a CI runner) move where a start
  // runs out: its pipes, its rendezvous port, its program's exec.
  const std::string hard = dir.file("hard");
  run = run_command("ulimit -n 48 && exec 3</dev/null 4</dev/null 5</dev/null 6</dev/null 7</dev/null 8</dev/null && " +
                    std::string(TUNE_BINARY) + " run " + file + " --storage " + hard + " --slots 24 --quiet");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("tune: out of file descriptors (the hard limit of `ulimit -n`)"), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  status = json_of(run_tune("status many --storage " + hard + " --json").out);
  EXPECT_EQ(status["counts"]["TERMINATED"], 24) << run_tune("trials many --storage " + hard).out;
  auto store = Store::open(hard, true);
  int waited = 0;
  for (const auto& event : store->events(store->find_experiment("many")->id)) waited += event.kind == "out_of_descriptors";
  EXPECT_GT(waited, 0) << "48 descriptors hold fewer than 24 command trials";
}

// A closed terminal sends SIGHUP: the sweep stops as with Ctrl-C (recorded,
// exit 130), and `tune resume` finishes it.
// Under nohup the hangup is ignored and the sweep runs to its end.
TEST(CliResume, AHangupInterruptsLikeCtrlCButNotUnderNohup) {
  TempDir dir;
  std::string file = dir.write("slow.yaml", kSlow);
  std::string storage = dir.file("store");
  int pid = start_in_background("run " + file + " --name hungup --storage " + storage + " --quiet", dir);
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(wait_for_terminated(storage, "hungup", 1).is_null());
  run_command("kill -HUP " + std::to_string(pid));
  ASSERT_TRUE(wait_gone(pid)) << "SIGHUP did not stop the driver";
  EXPECT_EQ(exit_status_of(dir), 130) << "a hangup interrupts, as Ctrl-C";
  EXPECT_EQ(json_of(run_tune("status hungup --storage " + storage + " --json").out)["status"], "INTERRUPTED");
  ASSERT_EQ(run_tune("resume hungup --storage " + storage + " --quiet").exit_code, 0);
  EXPECT_EQ(json_of(run_tune("status hungup --storage " + storage + " --json").out)["counts"]["TERMINATED"], 8);

  TempDir nohup_dir;
  pid = start_in_background("run " + file + " --name kept --storage " + storage + " --quiet", nohup_dir, "nohup ");
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(wait_for_terminated(storage, "kept", 1).is_null());
  run_command("kill -HUP " + std::to_string(pid));
  ASSERT_TRUE(wait_gone(pid, 60)) << "the sweep under nohup did not end within 60 s";
  EXPECT_EQ(exit_status_of(nohup_dir), 0);
  auto status = json_of(run_tune("status kept --storage " + storage + " --json").out);
  EXPECT_EQ(status["status"], "FINISHED");
  EXPECT_EQ(status["counts"]["TERMINATED"], 8);
}

// What a Slurm job's end does (its time limit, scancel, a requeue after a
// preemption): SIGTERM to every process of the job at once, the driver and
// its trials' mpirun and ranks alike. The sweep is recorded INTERRUPTED with
// no trial counted failed (max_failures 0 here), and the same command with
// --resume-if-exists, as `tune submit`'s script runs it again, finishes it
// from the checkpoints. A file whose sweep differs is refused.
TEST(CliResume, TermToEveryProcessAtOnceThenRunResumeIfExistsFinishesIt) {
  TempDir dir;
  std::string file = dir.write("slow.yaml", std::string(kSlow) + "failure: {max_failures: 0}\n");
  std::string storage = dir.file("store");
  const std::string command = "run " + file + " --name job --storage " + storage + " --quiet --resume-if-exists";
  int pid = start_in_background(command, dir);
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(wait_for_terminated(storage, "job", 1).is_null());
  // The driver and everything under it, as Slurm's process tracking sees them.
  run_command("pids=" + std::to_string(pid) + "; all=$pids; while [ -n \"$pids\" ]; do "
              "pids=$(for p in $pids; do cat /proc/$p/task/*/children 2>/dev/null; done); all=\"$all $pids\"; done; "
              "kill -TERM $all 2>/dev/null; true");
  ASSERT_TRUE(wait_gone(pid)) << "SIGTERM did not stop the driver";
  EXPECT_EQ(exit_status_of(dir), 130);
  auto status = json_of(run_tune("status job --storage " + storage + " --json").out);
  EXPECT_EQ(status["status"], "INTERRUPTED") << status.dump();
  EXPECT_EQ(status["counts"].value("ERROR", 0), 0) << "a trial stopped by the job's end is not a failure: " << status.dump();

  std::string changed = kSlow;
  changed.replace(changed.find("num_samples: 8"), 14, "num_samples: 9");
  auto refused = run_tune("run " + dir.write("changed.yaml", changed + "failure: {max_failures: 0}\n") +
                          " --name job --storage " + storage + " --quiet --resume-if-exists");
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("was started with another sweep (`num_samples` differ)"), std::string::npos) << refused.err;
  auto dry = run_tune(command + " --dry-run");
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("experiment 'job' exists in " + storage + " (INTERRUPTED)"), std::string::npos) << dry.out;

  auto again = run_tune(command);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("experiment 'job' exists in " + storage + " (INTERRUPTED): continuing it"), std::string::npos)
      << again.err;
  auto trials = json_of(run_tune("trials job --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 8u);
  for (const auto& t : trials) {
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    EXPECT_NEAR(t["last_result"]["state"].get<double>(), 8 * t["config"]["x"].get<double>(), 1e-9);
  }
  // Finished: run again, it continues nothing and says so; a new name starts a new sweep.
  auto finished = run_tune(command);
  EXPECT_EQ(finished.exit_code, 0) << finished.err;
  EXPECT_NE(finished.err.find("(FINISHED): continuing it"), std::string::npos) << finished.err;
  auto fresh = run_tune("run " + file + " --name fresh --storage " + storage + " --quiet --resume-if-exists");
  EXPECT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_EQ(fresh.err.find("continuing"), std::string::npos) << fresh.err;
  EXPECT_EQ(json_of(run_tune("status fresh --storage " + storage + " --json").out)["counts"]["TERMINATED"], 8);
}

// A two-trial sweep of a few iterations, for the lease tests.
const char* kQuick = R"(trainable: synthetic
metric: loss
mode: min
num_samples: 2
search: {seed: 4}
param_space:
  x: {uniform: [0, 1]}
  iterations: 3
)";

// The wall clock, in unix seconds (a lease's times).
double now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// A driver on another machine, as the store sees it while it lives: its
// lease, renewed every 0.5 s with that machine's clock (`skew_s` behind
// this one's) until this goes out of scope.
class RemoteDriver {
 public:
  RemoteDriver(Store& store, int64_t experiment_id, LeaseRecord lease, double skew_s)
      : beating_([&store, experiment_id, lease, skew_s, this] {
          while (!done_) {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            store.renew_lease(experiment_id, lease, now() - skew_s);
          }
        }) {}
  ~RemoteDriver() {
    done_ = true;
    beating_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread beating_;
};

// A batch job requeued onto another node: the store still names the first
// node's driver, whose heartbeat stands still (that node died). `tune run
// --resume-if-exists` waits until the heartbeat is a minute old, then takes
// the experiment over; a heartbeat that moves on is a live driver, refused.
TEST(CliResume, ResumeIfExistsWaitsOutTheLeaseOfADriverOnAMachineThatIsGone) {
  TempDir dir;
  std::string file = dir.write("quick.yaml", kQuick);
  std::string storage = dir.file("store");
  const std::string command = "run " + file + " --name moved --storage " + storage + " --quiet --resume-if-exists";
  ASSERT_EQ(run_tune(command).exit_code, 0);
  int64_t id = 0;
  {
    auto store = Store::open(storage, false);
    id = store->find_experiment("moved")->id;
    // The dead node's driver: its last heartbeat 56 s ago.
    const LeaseRecord gone{"node-that-died", 4242, now() - 600, now() - 56};
    ASSERT_FALSE(store->take_lease(id, gone, [](const LeaseRecord&) { return true; }));
  }
  const auto started = std::chrono::steady_clock::now();
  auto waited = run_tune(command);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_NE(waited.err.find("is leased to pid 4242 on node-that-died, last heartbeat 5"), std::string::npos) << waited.err;
  EXPECT_NE(waited.err.find("waiting until it is 60 s old"), std::string::npos) << waited.err;
  EXPECT_GE(seconds, 3.0) << "it took the lease before the heartbeat was a minute old";
  EXPECT_EQ(json_of(run_tune("status moved --storage " + storage + " --json").out)["status"], "FINISHED");

  // A live driver elsewhere: its heartbeat moves on while the second waits.
  LeaseRecord live{"node-that-runs", 4343, now(), now()};
  auto store = Store::open(storage, false);
  ASSERT_FALSE(store->take_lease(id, live, [](const LeaseRecord&) { return true; }));
  testing::CommandResult refused;
  {
    RemoteDriver running(*store, id, live, 0);
    refused = run_tune(command);
  }
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("is being run by another driver (pid 4343 on node-that-runs"), std::string::npos)
      << refused.err;
}

// Another machine's heartbeat is that machine's time. A live driver there
// whose clock is 10 minutes behind this one's reads 10 minutes old here: it is
// watched, seen to move on, and refused, not taken over. A heartbeat that
// reads as old and stands still (a machine that is gone) is taken over once
// it stood still for 6 s.
TEST(CliResume, ALeaseElsewhereIsJudgedByWhetherItsHeartbeatMovesNotByTheClocks) {
  TempDir dir;
  std::string file = dir.write("quick.yaml", kQuick);
  std::string storage = dir.file("store");
  ASSERT_EQ(run_tune("run " + file + " --name skewed --storage " + storage + " --quiet").exit_code, 0);
  auto store = Store::open(storage, false);
  const int64_t id = store->find_experiment("skewed")->id;
  const std::string resume = "resume skewed --storage " + storage + " --quiet";

  LeaseRecord slow_clock{"node-with-a-slow-clock", 4545, now() - 900, now() - 600};
  ASSERT_FALSE(store->take_lease(id, slow_clock, [](const LeaseRecord&) { return true; }));
  testing::CommandResult refused;
  {
    RemoteDriver running(*store, id, slow_clock, 600);
    refused = run_tune(resume);
  }
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("is being run by another driver (pid 4545 on node-with-a-slow-clock"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("but it moves on: the two clocks differ"), std::string::npos) << refused.err;

  const LeaseRecord gone{"node-that-died", 4646, now() - 900, now() - 600};
  ASSERT_FALSE(store->take_lease(id, gone, [](const LeaseRecord&) { return true; }));
  const auto started = std::chrono::steady_clock::now();
  auto taken = run_tune(resume);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(taken.exit_code, 0) << taken.err;
  EXPECT_NE(taken.err.find("taking it over if it stands still for 6 s"), std::string::npos) << taken.err;
  EXPECT_GE(seconds, 5.5) << "taken over before the heartbeat was seen standing still";
  EXPECT_LT(seconds, 30.0);
}

// `tune submit`'s batch script runs a copy of the sweep file from a folder of
// its own, with --relative-to the submitted file's folder: the relative
// data.path means the same file as where it was submitted (and the sweep
// stays the same when a requeued job runs it again).
TEST(CliRun, RelativeToResolvesTheFilesRelativePathsFromAnotherFolder) {
  TempDir dir;
  const std::string examples = std::string(TUNE_SOURCE_DIR) + "/examples/tabular";
  std::ifstream in(examples + "/churn_xgboost.yaml");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string copy = dir.write("copy.yaml", text);
  auto plain = run_tune("run " + copy + " --storage " + dir.file("store") + " --dry-run");
  EXPECT_EQ(plain.exit_code, 2) << plain.out << plain.err;
  EXPECT_NE(plain.err.find(dir.file("churn.csv")), std::string::npos) << "relative to the copy's folder: " << plain.err;
  auto moved = run_tune("run " + copy + " --storage " + dir.file("store") + " --dry-run --relative-to " + examples);
  EXPECT_EQ(moved.exit_code, 0) << moved.err;
  EXPECT_NE(moved.out.find("\"path\":\"" + examples + "/churn.csv\""), std::string::npos) << moved.out;
}

// --resume-if-exists needs a name to look for, and a smoke test is always a
// new sweep: each refused in one line, before anything is written.
TEST(CliResume, ResumeIfExistsRefusesASmokeTestAndASweepWithoutAName) {
  TempDir dir;
  const std::string file = dir.write("nameless.yaml", kSlow);
  const std::string storage = dir.file("store");
  auto smoke = run_tune("run " + file + " --name n --storage " + storage + " --resume-if-exists --smoke");
  EXPECT_EQ(smoke.exit_code, 2) << smoke.err;
  EXPECT_EQ(smoke.err, "tune: --resume-if-exists and --smoke do not go together (a smoke test is a new sweep)\n");
  auto nameless = run_tune("run " + file + " --storage " + storage + " --resume-if-exists");
  EXPECT_EQ(nameless.exit_code, 2) << nameless.err;
  EXPECT_EQ(nameless.err, "tune: --resume-if-exists needs the experiment's name: the file's `name`, or --name\n");
  EXPECT_FALSE(std::filesystem::exists(storage)) << "nothing was written";
}

// PBT's state is saved by parts too (the members that changed). A population
// larger than the slots time-shares them (pauses at each boundary); killed
// with parts in the store, the resumed sweep rebuilds the state from them,
// finishes every member, and leaves the whole state in one row.
TEST(CliResume, PbtResumesFromItsStateByPartsAfterKill9) {
  TempDir dir;
  std::string file = dir.write("pbt.yaml", R"(name: pbt
trainable: synthetic
metric: loss
mode: min
num_samples: 6
search: {seed: 5}
scheduler: {type: pbt, time_attr: training_iteration, perturbation_interval: 2, seed: 3,
            hyperparam_mutations: {x: {uniform: [0, 1]}}}
param_space:
  x: {uniform: [0, 1]}
  iterations: 10
  sleep_s: 0.1
  checkpoint: true
)");
  std::string storage = dir.file("store");
  int pid = start_in_background("run " + file + " --storage " + storage + " --slots 2 --quiet", dir);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_for_store(storage, "pbt", [](Store& store, const ExperimentRecord& experiment) {
    return store.scheduler_state_parts(experiment.id).size() >= 3;
  })) << "no parts within 20 s";
  run_command("kill -9 " + std::to_string(pid));
  ASSERT_TRUE(wait_gone(pid)) << "kill -9 did not end the driver";
  {
    auto store = Store::open(storage, true);
    const auto exp = store->find_experiment("pbt");
    ASSERT_FALSE(exp->scheduler_state.is_null());
    for (const Json& part : store->scheduler_state_parts(exp->id)) {
      EXPECT_TRUE(part.contains("draws")) << part.dump();
      EXPECT_FALSE(part.contains("rng")) << "a part carries the generator as a count";
    }
  }
  auto resumed = run_tune("resume pbt --storage " + storage + " --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  auto store = Store::open(storage, true);
  const auto exp = store->find_experiment("pbt");
  EXPECT_TRUE(store->scheduler_state_parts(exp->id).empty());
  EXPECT_EQ(exp->scheduler_state.at("members").at("trial").size(), 6u);
  EXPECT_TRUE(exp->scheduler_state.contains("rng"));
  auto trials = json_of(run_tune("trials pbt --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 6u);
  for (const auto& t : trials) {
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    // Every member trains to the end, or its last exploit cloned a donor
    // already there (at its final result): it ends with the donor's state.
    const bool cloned_the_end = !t["exploits"].empty() && t["exploits"].back()["donor_iteration"] == 10;
    if (!cloned_the_end) EXPECT_EQ(t["iteration"], 10) << t.dump();
  }
}

// A PBT sweep interrupted after its first exploits: the resumed driver names
// each exploited trial's later checkpoints after the exploits it had
// (checkpoint_<it>_exploit<k>), so no checkpoint directory is reused.
TEST(CliResume, PbtKeepsNamingCheckpointsApartAfterResume) {
  TempDir dir;
  std::string file = dir.write("pbt.yaml", R"(trainable: synthetic
metric: loss
mode: min
num_samples: 4
search: {seed: 5}
scheduler: {type: pbt, time_attr: training_iteration, perturbation_interval: 2, seed: 3,
            hyperparam_mutations: {x: {uniform: [0, 1]}}}
param_space:
  x: {uniform: [0, 1]}
  iterations: 16
  sleep_s: 0.05
  checkpoint: true
checkpoint: {num_to_keep: 2}
)");
  std::string storage = dir.file("store");
  int pid = start_in_background("run " + file + " --name pbt --storage " + storage + " --quiet", dir);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_for_store(storage, "pbt", [](Store& store, const ExperimentRecord& experiment) {
    return !store.exploits(experiment.id).empty();
  })) << "no exploit within 20 s";
  run_command("kill -INT " + std::to_string(pid));
  ASSERT_TRUE(wait_gone(pid)) << "Ctrl-C did not stop the driver";
  auto resumed = run_tune("resume pbt --storage " + storage + " --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  auto store = Store::open(storage, true);
  auto experiment = store->find_experiment("pbt");
  std::map<int64_t, std::vector<double>> exploit_times;  // trial row -> times of its exploits
  for (const auto& e : store->exploits(experiment->id)) exploit_times[e.trial_id].push_back(e.time);
  for (const auto& trial : store->trials(experiment->id)) {
    EXPECT_EQ(trial.status, "TERMINATED");
    std::set<std::string> paths;
    for (const auto& c : store->checkpoints(trial.id)) {
      EXPECT_TRUE(paths.insert(c.path).second) << c.path << " recorded twice";
      EXPECT_TRUE(std::filesystem::is_directory(c.path)) << c.path;
      int64_t before = 0;  // exploits of this trial before the checkpoint
      for (double t : exploit_times[trial.id]) before += t <= c.created_at ? 1 : 0;
      const std::string name = std::filesystem::path(c.path).filename().string();
      const std::string expected = before == 0 ? "" : "_exploit" + std::to_string(before);
      if (name.find("_from_") != std::string::npos) continue;  // the copy an exploit made
      EXPECT_EQ(name.substr(std::string("checkpoint_000000").size()), expected) << c.path;
    }
  }
}

TEST(Embedding, TheExampleProgramTunesAndItsStoreIsQueryable) {
  TempDir dir;
  auto run = run_command(std::string(TUNE_BUILD_DIR) + "/examples/quadratic_tuning " + dir.path());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("trials: 30 errors: 0"), std::string::npos) << run.out;
  auto best = run_tune("best quadratic --storage " + dir.path() + " --json");
  ASSERT_EQ(best.exit_code, 0) << best.err;
  EXPECT_NE(run.out.find(json_of(best.out)["trial_name"].get<std::string>()), std::string::npos);
}

// Synchronous PBT as Ray has it, 6 trials on 2 slots: each boundary is
// decided once all six are there (the four still to start included), with the
// quantiles taken once (a quarter of 6, rounded up: two exploits a boundary),
// and the clone copies its donor's checkpoint of that boundary. So the same
// seeds give the same exploits, however the threads ran (they did not: with 4
// trials, 3 to 8 exploits over runs, donors cloned a step past the boundary).
TEST(CliPbt, SynchDecidesEachBoundaryOnceWithTheWholePopulation) {
  TempDir dir;
  const std::string file = dir.write("synch.yaml", R"(name: synch
trainable: synthetic
metric: loss
mode: min
num_samples: 6
max_concurrent_trials: 2
search: {algorithm: random, seed: 7}
scheduler: {type: pbt, time_attr: training_iteration, perturbation_interval: 3, seed: 4, synch: true,
            hyperparam_mutations: {x: {uniform: [0.5, 2.0]}}}
param_space: {x: {uniform: [0.5, 2.0]}, iterations: 9, checkpoint: true}
)");
  std::vector<std::string> runs;
  for (int run = 0; run < 3; ++run) {
    const std::string storage = dir.file("store" + std::to_string(run));
    auto r = run_tune("run " + file + " --storage " + storage + " --slots 2 --quiet");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto store = Store::open(storage, true);
    const auto experiment = store->find_experiment("synch");
    ASSERT_TRUE(experiment.has_value());
    std::map<int64_t, int64_t> index_of;  // trials.id -> trial index
    for (const auto& t : store->trials(experiment->id)) index_of[t.id] = t.trial_index;
    std::map<int64_t, int> per_boundary;
    // A boundary's exploits, in trial order: which member records its own
    // first is down to when each one resumes (it differed between CI runs).
    std::set<std::pair<int64_t, std::string>> exploits;
    for (const auto& e : store->exploits(experiment->id)) {
      EXPECT_EQ(e.donor_iteration, e.iteration) << "a clone of its donor's checkpoint past the boundary";
      EXPECT_EQ(e.iteration % 3, 0);
      per_boundary[e.iteration] += 1;
      exploits.insert({e.iteration, std::to_string(index_of[e.trial_id]) + "<" + std::to_string(index_of[e.donor_trial_id]) +
                                        "@" + std::to_string(e.iteration) + " " + e.new_config.dump() + "; "});
    }
    EXPECT_FALSE(per_boundary.empty());
    for (const auto& [boundary, count] : per_boundary) EXPECT_EQ(count, 2) << "at " << boundary;
    std::string text;
    for (const auto& [boundary, exploit] : exploits) text += exploit;
    runs.push_back(text);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

}  // namespace
}  // namespace tune
