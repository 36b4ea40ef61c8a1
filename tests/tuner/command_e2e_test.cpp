// End-to-end: command trainables (any program as a trial), through the
// `tune` CLI as a user runs them. The programs are small Python scripts using
// only the standard library (Debian's /usr/bin/python3).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "storage/store.h"
#include "test_util.h"
#include "tuner_test_util.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::json_of;
using testing::run_command;
using testing::run_tune;
using testing::TempDir;
using testing::wait_gone;

// A trainable as a script: the contract's environment, checkpoints through
// TUNE_CHECKPOINT_DIR and TUNE_RESTORE_FROM, results as @tune lines. Its
// state (a running sum of x) lives in the checkpoint, so a restored trial
// continues it; a SIGTERM leaves a marker in the trial folder.
const char* kScript = R"(import json, os, signal, sys, time
cfg = json.loads(os.environ["TUNE_CONFIG"])
trial_dir = os.environ["TUNE_TRIAL_DIR"]
def on_term(*_):
    open(os.path.join(trial_dir, "sigterm"), "a").write("x\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
lr_arg = float(sys.argv[sys.argv.index("--lr") + 1])
state, it = 0.0, int(os.environ["TUNE_ITERATION"])
restore = os.environ.get("TUNE_RESTORE_FROM")
if restore:
    saved = json.load(open(os.path.join(restore, "state.json")))
    if saved["iteration"] != it:
        print("restored iteration %d but TUNE_ITERATION is %d" % (saved["iteration"], it), file=sys.stderr)
        sys.exit(3)
    state = saved["state"]
elif it != 0:
    print("TUNE_ITERATION %d without a checkpoint" % it, file=sys.stderr)
    sys.exit(4)
env = {k: os.environ.get(k) for k in ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                                      "MASTER_PORT", "TF_CONFIG", "TUNE_EXPERIMENT", "TUNE_TRIAL_NAME",
                                      "TUNE_DRIVER_TOKEN", "MY_LR"]}
open(os.path.join(trial_dir, "env.json"), "w").write(json.dumps(env))
print("starting at iteration", it, flush=True)
while it < cfg.get("iterations", 1000000):
    it += 1
    state += cfg["x"]
    # A folder per checkpoint: tune takes it whenever it reads the line,
    # while this goes on with the next one.
    ck = os.path.join(os.environ["TUNE_CHECKPOINT_DIR"], "it%d" % it)
    os.makedirs(ck)
    json.dump({"iteration": it, "state": state}, open(os.path.join(ck, "state.json"), "w"))
    print("@tune " + json.dumps({"loss": (cfg["x"] - 1.0) ** 2 + 1.0 / it, "state": state, "lr_arg": lr_arg,
                                 "checkpoint": ck}), flush=True)
    time.sleep(cfg.get("sleep_s", 0.0))
)";

std::string sweep(const TempDir& dir, const std::string& name, const std::string& rest) {
  dir.write("train.py", kScript);
  return dir.write(name + ".yaml", "name: " + name + R"(
trainable:
  command: [/usr/bin/python3, train.py, --lr, "{lr}"]
  cwd: .
  env: {MY_LR: "lr={lr}"}
  stop_grace_s: 5
metric: loss
mode: min
)" + rest);
}

Json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

TEST(CommandTrainable, ResultsCheckpointsEnvironmentAndStop) {
  TempDir dir;
  const std::string file = sweep(dir, "cmd", R"(num_samples: 3
max_concurrent_trials: 2
search: {seed: 5}
stop: {training_iteration: 4}
checkpoint: {num_to_keep: 2}
param_space:
  x: {uniform: [0, 2]}
  lr: {loguniform: [0.001, 0.1]}
  sleep_s: 0.05
)");
  const std::string storage = dir.file("store");
  auto run = run_tune("run " + file + " --storage " + storage + " --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto trials = json_of(run_tune("trials cmd --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 3u);
  auto store = Store::open(storage, true);
  for (const auto& t : trials) {
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    EXPECT_EQ(t["iteration"], 4);
    const double x = t["config"]["x"], lr = t["config"]["lr"];
    EXPECT_NEAR(t["last_result"]["state"].get<double>(), 4 * x, 1e-9);
    EXPECT_NEAR(t["last_result"]["lr_arg"].get<double>(), lr, 1e-12 * lr) << "the {lr} placeholder";
    EXPECT_FALSE(t["last_result"].contains("checkpoint")) << "the checkpoint is not a metric";
    const std::string trial_dir = dir.file("store/cmd/") + t["trial_name"].get<std::string>();
    // Stopped at 4 by the stop criterion: SIGTERM, which the script records.
    EXPECT_TRUE(fs::exists(trial_dir + "/sigterm")) << trial_dir;
    Json env = read_json(trial_dir + "/env.json");
    EXPECT_EQ(env["RANK"], "0");
    EXPECT_EQ(env["WORLD_SIZE"], "1");
    EXPECT_EQ(env["LOCAL_RANK"], "0");
    EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
    EXPECT_GT(std::stoi(env["MASTER_PORT"].get<std::string>()), 0);
    EXPECT_EQ(env["TUNE_EXPERIMENT"], "cmd");
    EXPECT_EQ(env["TUNE_TRIAL_NAME"], t["trial_name"]);
    EXPECT_TRUE(env["TUNE_DRIVER_TOKEN"].is_null()) << "no driver secret reaches the program";
    EXPECT_EQ(env["MY_LR"], "lr=" + Json(lr).dump());
    Json tf = Json::parse(env["TF_CONFIG"].get<std::string>());
    EXPECT_EQ(tf["cluster"]["worker"].size(), 1u);
    EXPECT_EQ(tf["task"]["index"], 0);
    // Checkpoints: the files the program wrote, moved into the trial's folders.
    std::vector<CheckpointRecord> checkpoints;
    for (const auto& record : store->trials(store->find_experiment("cmd")->id)) {
      if (record.trial_index != t["trial_index"]) continue;
      for (const auto& c : store->checkpoints(record.id))
        if (!c.deleted) checkpoints.push_back(c);
    }
    ASSERT_EQ(checkpoints.size(), 2u) << "num_to_keep 2";
    Json last = read_json(checkpoints.back().path + "/state.json");
    EXPECT_EQ(last["iteration"], 4);
    EXPECT_NEAR(last["state"].get<double>(), 4 * x, 1e-9);
    // Every stdout line is the trial's log.
    std::ifstream log(trial_dir + "/stdout.log");
    std::string first;
    std::getline(log, first);
    EXPECT_EQ(first, "starting at iteration 0");
  }
}

// A program that prints without end (a debug print in its inner loop, a
// progress bar) must not fill the disk the logs are on: each log moves to
// .1 past trainable.log_max_mb and starts over, and results still arrive.
TEST(CommandTrainable, AProgramThatPrintsWithoutEndKeepsItsLogsWithinTheirLimit) {
  TempDir dir;
  dir.write("chatty.py", R"(import json, os, sys
line = "x" * 999
for it in range(1, 6):
    for _ in range(2000):  # 2 MB to each of stdout and stderr an iteration
        print(line)
        print(line, file=sys.stderr)
    print("@tune " + json.dumps({"loss": 1.0 / it, "mark": "iteration %d" % it}), flush=True)
print("the last line", flush=True)
)");
  const std::string file = dir.write("chatty.yaml", R"(name: chatty
trainable:
  command: [/usr/bin/python3, chatty.py]
  cwd: .
  log_max_mb: 1
metric: loss
mode: min
num_samples: 1
param_space: {x: 1}
)");
  const std::string storage = dir.file("store");
  auto run = run_tune("run " + file + " --storage " + storage + " --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto trials = json_of(run_tune("trials chatty --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0]["status"], "TERMINATED");
  EXPECT_EQ(trials[0]["iteration"], 5) << "every result read through 20 MB of output";
  const std::string trial_dir = dir.file("store/chatty/") + trials[0]["trial_name"].get<std::string>();
  uintmax_t total = 0;
  for (const char* name : {"stdout.log", "stdout.log.1", "stderr.log", "stderr.log.1"}) {
    ASSERT_TRUE(fs::exists(trial_dir + "/" + name)) << name;
    EXPECT_LE(fs::file_size(trial_dir + "/" + name), 1u << 20) << name;
    total += fs::file_size(trial_dir + "/" + name);
  }
  EXPECT_GT(total, 2u << 20) << "the newest output is kept";
  EXPECT_LE(total, 4u << 20) << "of 20 MB written";
  std::ifstream log(trial_dir + "/stdout.log");
  std::string line, last;
  while (std::getline(log, line)) last = line;
  EXPECT_EQ(last, "the last line") << "the newest output is whole";

  // A bad limit is a config error at its line.
  const std::string bad = dir.write("bad.yaml", R"(name: bad
trainable:
  command: [/usr/bin/python3, chatty.py]
  log_max_mb: -1
param_space: {x: 1}
)");
  auto refused = run_tune("run " + bad + " --storage " + storage);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("bad.yaml:4"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("trainable.log_max_mb must be a number of MB"), std::string::npos) << refused.err;
}

TEST(CommandTrainable, PausedAshaTrialsRestartFromTheirCheckpoint) {
  TempDir dir;
  const std::string file = sweep(dir, "asha", R"(num_samples: 6
max_concurrent_trials: 2
search: {seed: 3}
scheduler: {type: asha, promotion: true, reduction_factor: 2, max_t: 4, grace_period: 1}
param_space:
  x: {uniform: [0, 2]}
  lr: 0.01
  iterations: 4
  sleep_s: 0.05
)");
  const std::string storage = dir.file("store");
  auto run = run_tune("run " + file + " --storage " + storage + " --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto trials = json_of(run_tune("trials asha --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 6u);
  int restarted = 0;
  for (const auto& t : trials) {
    // A restart that did not find its state would have exited 3 or 4 (ERROR).
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    const int iteration = t["iteration"];
    EXPECT_NEAR(t["last_result"]["state"].get<double>(), iteration * t["config"]["x"].get<double>(), 1e-9);
    std::ifstream log(dir.file("store/asha/") + t["trial_name"].get<std::string>() + "/stdout.log");
    std::string line;
    int starts = 0;
    while (std::getline(log, line)) starts += line.rfind("starting at iteration", 0) == 0 && line != "starting at iteration 0";
    restarted += starts > 0;
  }
  EXPECT_GE(restarted, 1) << "ASHA promotion pauses trials and resumes them from TUNE_RESTORE_FROM";
}

TEST(CommandTrainable, PbtExploitsRestoreTheDonorsCheckpoint) {
  TempDir dir;
  // x = 3 is the worst trial at every iteration, whatever iteration the
  // others are at when it reaches a perturbation (their 1/it differs by less
  // than 1): it is exploited however the four programs' starts are spread.
  // (Drawn x's put the bottom within 0.02 of the next: under load, a trial
  // at a later iteration looked better and no exploit came.)
  const std::string file = sweep(dir, "pbt", R"(num_samples: 1
max_concurrent_trials: 4
scheduler: {type: pbt, time_attr: training_iteration, perturbation_interval: 2, seed: 1,
            hyperparam_mutations: {x: {uniform: [0.1, 2.0]}}}
param_space:
  x: {grid_search: [1.0, 1.1, 0.9, 3.0]}
  lr: 0.01
  iterations: 8
  sleep_s: 0.1
)");
  const std::string storage = dir.file("store");
  auto run = run_tune("run " + file + " --storage " + storage + " --slots 4 --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto store = Store::open(storage, true);
  const auto experiment = store->find_experiment("pbt");
  ASSERT_TRUE(experiment.has_value());
  const auto exploits = store->exploits(experiment->id);
  EXPECT_GE(exploits.size(), 1u);
  for (const auto& t : store->trials(experiment->id)) {
    EXPECT_EQ(t.status, "TERMINATED") << "a restore that did not match TUNE_ITERATION exits 3: " << t.error;
    // Each trial reached iteration 8: by its own results, or by restoring a donor that had (a donor
    // that reported its 8th result and had not ended yet is a fair donor: the clone has nothing left
    // to run and ends at once, its last result the one before the exploit).
    int64_t reached = t.last_iteration;
    for (const auto& e : exploits)
      if (e.trial_id == t.id) reached = std::max<int64_t>(reached, e.donor_iteration);
    EXPECT_EQ(reached, 8) << "trial " << t.trial_index;
  }
}

// kill -9 of the driver: its programs die with it (PR_SET_PDEATHSIG), and
// `tune resume` restarts the unfinished trials from their last checkpoint
// (the script exits 3 if TUNE_RESTORE_FROM and TUNE_ITERATION disagree).
TEST(CommandTrainable, ResumeAfterKill9RestartsFromTheLastCheckpoint) {
  TempDir dir;
  const std::string file = sweep(dir, "killed", R"(num_samples: 4
max_concurrent_trials: 2
search: {seed: 9}
param_space:
  x: {uniform: [0, 2]}
  lr: 0.01
  iterations: 10
  sleep_s: 0.2
)");
  const std::string storage = dir.file("store");
  run_command(std::string(TUNE_BINARY) + " run " + file + " --storage " + storage + " --quiet & echo $! > " +
              dir.file("pid"));
  std::ifstream pid_file(dir.file("pid"));
  int pid = 0;
  pid_file >> pid;
  ASSERT_GT(pid, 0);
  bool some_results = false;
  for (int i = 0; i < 400 && !some_results; ++i) {
    auto status = run_tune("status killed --storage " + storage + " --json");
    some_results = status.exit_code == 0 && Json::parse(status.out)["counts"].value("RUNNING", 0) > 0 &&
                   fs::exists(storage + "/killed/trial_00000/checkpoint_000002");
    if (!some_results) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(some_results);
  run_command("kill -9 " + std::to_string(pid));
  ASSERT_TRUE(wait_gone(pid)) << "kill -9 did not end the driver";
  // Its programs end with it (their supervisor sees the driver go): polled,
  // at most 10 s. (Other tests run train.py too, elsewhere: count this folder's only.)
  EXPECT_EQ(run_command("for i in $(seq 200); do n=$(for p in $(pgrep -f 'python3 [t]rain.py'); do readlink "
                        "/proc/$p/cwd; done | grep -c '^" + dir.path() + "$'); [ \"$n\" = 0 ] && exit 0; sleep 0.05; "
                        "done; exit 1").exit_code,
            0)
      << "the programs outlived their driver";
  auto resumed = run_tune("resume killed --storage " + storage + " --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  auto trials = json_of(run_tune("trials killed --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 4u);
  int restored = 0;
  for (const auto& t : trials) {
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    EXPECT_EQ(t["iteration"], 10);
    EXPECT_NEAR(t["last_result"]["state"].get<double>(), 10 * t["config"]["x"].get<double>(), 1e-9);
    std::ifstream log(storage + "/killed/" + t["trial_name"].get<std::string>() + "/stdout.log");
    std::string line;
    while (std::getline(log, line)) restored += line.rfind("starting at iteration", 0) == 0 && line != "starting at iteration 0";
  }
  EXPECT_GE(restored, 1) << "a trial killed mid-run went on from its checkpoint";
}

TEST(CommandTrainable, FailuresGarbageAndSilenceFailTheTrialNotTheSweep) {
  TempDir dir;
  dir.write("odd.py", R"(import json, os, sys, time
cfg = json.loads(os.environ["TUNE_CONFIG"])
kind = cfg["kind"]
print("@tune " + json.dumps({"loss": 1.0}), flush=True)
if kind == "fails":
    print("warming up", file=sys.stderr)
    print("boom: the learning rate is negative", file=sys.stderr)
    sys.exit(3)
if kind == "garbage":
    print("@tune {not json", flush=True)
    time.sleep(60)
if kind == "silent":
    time.sleep(60)
if kind == "nan":
    print("@tune " + json.dumps({"loss": float("nan")}), flush=True)
    time.sleep(60)
print("@tune " + json.dumps({"loss": 0.5}), flush=True)
)");
  const std::string file = dir.write("odd.yaml", R"(name: odd
trainable: {command: [/usr/bin/python3, odd.py], cwd: ., stop_grace_s: 1}
metric: loss
mode: min
failure: {max_failures: 0, result_timeout_s: 3}
param_space:
  kind: {grid_search: [fails, garbage, silent, nan, fine]}
)");
  const std::string storage = dir.file("store");
  auto run = run_tune("run " + file + " --storage " + storage + " --quiet");
  EXPECT_EQ(run.exit_code, 0) << "one trial succeeded: " << run.err;
  std::map<std::string, Json> by_kind;
  for (const auto& t : json_of(run_tune("trials odd --storage " + storage + " --json").out))
    by_kind[t["config"]["kind"]] = t;
  ASSERT_EQ(by_kind.size(), 5u);
  EXPECT_EQ(by_kind["fine"]["status"], "TERMINATED");
  EXPECT_EQ(by_kind["fine"]["iteration"], 2);
  for (const char* kind : {"fails", "garbage", "silent", "nan"}) EXPECT_EQ(by_kind[kind]["status"], "ERROR") << kind;
  const std::string fails = by_kind["fails"]["error"];
  EXPECT_NE(fails.find("exited with status 3"), std::string::npos) << fails;
  EXPECT_NE(fails.find("boom: the learning rate is negative"), std::string::npos) << fails;
  EXPECT_EQ(fails.find('\n'), std::string::npos) << "one line: " << fails;
  const std::string garbage = by_kind["garbage"]["error"];
  EXPECT_NE(garbage.find("@tune {not json"), std::string::npos) << garbage;
  EXPECT_NE(garbage.find("tune cannot read: parse error"), std::string::npos) << garbage;
  EXPECT_NE(by_kind["silent"]["error"].get<std::string>().find("no result"), std::string::npos)
      << by_kind["silent"]["error"];
  EXPECT_NE(by_kind["nan"]["error"].get<std::string>().find("loss"), std::string::npos) << by_kind["nan"]["error"];
  // Nothing of the stopped programs is left running, and none ran on after
  // its trial failed: the line it prints after its 60 s sleep is not in its
  // log (the "nan" trial's verdict, read only at its next result, used to
  // wait for that line).
  EXPECT_EQ(run_command("pgrep -fc 'python3 [o]dd.py'").out, "0\n") << "a program outlived its trial";
  for (const char* kind : {"garbage", "silent", "nan"}) {
    std::ifstream log(dir.file("store/odd/") + by_kind[kind]["trial_name"].get<std::string>() + "/stdout.log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.find("0.5"), std::string::npos) << kind << " ran on after its trial failed:\n" << text;
  }
}

TEST(CommandTrainable, BadCommandsAreRefusedAtTheirLineBeforeAnythingRuns) {
  TempDir dir;
  struct Case {
    std::string trainable, expected;
  };
  const std::vector<Case> cases = {
      {"{command: [/usr/bin/python3, t.py, --lr, \"{lrr}\"]}",
       "bad.yaml:2: trainable.command[3]: placeholder {lrr} names no key of param_space (did you mean 'lr'?)"},
      {"{command: [/usr/bin/python3, \"{lr\"]}", "bad.yaml:2: trainable.command[1]: unmatched '{'"},
      {"{command: [no-such-program-xyz, --lr, \"{lr}\"]}",
       "bad.yaml:2: program 'no-such-program-xyz' not found on PATH"},
      {"{command: []}", "bad.yaml:2: trainable.command must be a non-empty list"},
      {"{command: [/usr/bin/python3], cwd: no-such-dir}", "bad.yaml:2: trainable.cwd "},
      {"{command: [/usr/bin/python3], stop_grace: 3}",
       "bad.yaml:2: unknown key 'trainable.stop_grace' (did you mean 'stop_grace_s'?)"},
      {"{command: [/usr/bin/python3], env: {A: [1]}}", "bad.yaml:2: trainable.env.A must be a string"},
  };
  for (const auto& c : cases) {
    const std::string file = dir.write("bad.yaml", "name: bad\ntrainable: " + c.trainable +
                                                       "\nmetric: loss\nmode: min\nparam_space: {lr: {uniform: [0, 1]}}\n");
    auto run = run_tune("run " + file + " --storage " + dir.file("store") + " --quiet");
    EXPECT_EQ(run.exit_code, 2) << c.trainable;
    EXPECT_NE(run.err.find(c.expected), std::string::npos) << c.trainable << "\n" << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_FALSE(fs::exists(dir.file("store"))) << "nothing is created before the sweep is valid";
  }
}

// resources.workers: 2 runs the program as 2 ranks with torchrun's variables:
// the ranks meet over TCP at MASTER_ADDR:MASTER_PORT (as
// init_process_group does), and only rank 0's results count.
TEST(CommandTrainable, AWorkerGroupGetsTorchrunsRendezvous) {
  TempDir dir;
  dir.write("ddp.py", R"(import json, os, socket, sys, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
tf = json.loads(os.environ["TF_CONFIG"])
assert tf["task"]["index"] == rank and len(tf["cluster"]["worker"]) == world, tf
if rank == 0:
    server = socket.create_server((addr, port))
    conn, _ = server.accept()
    peer = int(conn.recv(16).decode())
else:
    for _ in range(100):
        try:
            conn = socket.create_connection((addr, port))
            break
        except OSError:
            time.sleep(0.05)
    conn.sendall(str(rank * 10).encode())
    peer = -1
for i in range(3):
    print("@tune " + json.dumps({"loss": float(i), "rank": rank, "world": world, "peer": peer,
                                 "local_world": int(os.environ["LOCAL_WORLD_SIZE"])}), flush=True)
)");
  const std::string file = dir.write("ddp.yaml", R"(name: ddp
trainable: {command: [/usr/bin/python3, ddp.py], cwd: .}
metric: loss
mode: min
num_samples: 2
resources: {workers: 2}
param_space: {x: {uniform: [0, 1]}}
)");
  const std::string storage = dir.file("store");
  auto run = run_tune("run " + file + " --storage " + storage + " --slots 2 --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto trials = json_of(run_tune("trials ddp --storage " + storage + " --json").out);
  ASSERT_EQ(trials.size(), 2u);
  for (const auto& t : trials) {
    EXPECT_EQ(t["status"], "TERMINATED") << t.dump();
    EXPECT_EQ(t["iteration"], 3) << "rank 1's lines are not results";
    EXPECT_EQ(t["last_result"]["rank"], 0);
    EXPECT_EQ(t["last_result"]["world"], 2);
    EXPECT_EQ(t["last_result"]["local_world"], 2);
    EXPECT_EQ(t["last_result"]["peer"], 10) << "rank 1 reached rank 0 at MASTER_ADDR:MASTER_PORT";
  }
}

}  // namespace
}  // namespace tune
