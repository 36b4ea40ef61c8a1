// End-to-end: a command trial's program cannot crash the driver, escape its
// folder or outlive its trial (issue 30), through the `tune` CLI. Programs
// are Python scripts (Debian's /usr/bin/python3, standard library only) or
// /bin/sh. Every background process a test starts sleeps a number of
// seconds no other test uses (its marker), so the test finds, and at its end
// kills by pid, only its own.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "storage/store.h"
#include "test_util.h"
#include "process_markers.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::run_command;
using testing::run_tune;
using testing::TempDir;

using testing::appears;
using testing::gone;
using testing::marker;
using testing::processes_with;

std::map<std::string, Json> trials_by(const std::string& storage, const std::string& experiment,
                                      const std::string& key) {
  std::map<std::string, Json> out;
  for (const auto& t : Json::parse(run_tune("trials " + experiment + " --storage " + storage + " --json").out))
    out[t["config"][key].get<std::string>()] = t;
  return out;
}

std::string sweep(const std::string& name, const std::string& program, const std::string& kinds,
                  const std::string& more = "") {
  return "name: " + name + "\ntrainable: {command: [" + program + "], cwd: ., stop_grace_s: 1}\n" +
         "metric: loss\nmode: min\nfailure: {max_failures: 0}\n" + more +
         "param_space:\n  kind: {grid_search: [" + kinds + "]}\n";
}

// Issue 30, 1 and 7: a result 60,000 levels deep overflowed the stack of the
// driver's trial thread (exit 139, the experiment left RUNNING); 1e400 was
// "not a JSON object"; a NUL cut the stored error. Each fails its own trial
// with one line, and the sweep goes on.
TEST(HostilePrograms, ABadResultLineFailsItsTrialNotTheDriver) {
  TempDir dir;
  dir.write("bad.py", R"(import json, os, sys
kind = json.loads(os.environ["TUNE_CONFIG"])["kind"]
out = sys.stdout.buffer
if kind == "deep":
    out.write(b'@tune {"loss": 0.5, "deep": ' + b"[" * 60000 + b"]" * 60000 + b"}\n")
elif kind == "overflow":
    out.write(b'@tune {"loss": 1e400}\n')
elif kind == "nul":
    out.write(b'@tune {"loss": 1}\x00 after the NUL\n')
else:
    out.write(b'@tune {"loss": 0.25}\n')
out.flush()
)");
  const std::string file = dir.write("bad.yaml", sweep("bad", "/usr/bin/python3, bad.py", "deep, overflow, nul, fine"));
  const std::string storage = dir.file("store");
  auto run = run_tune("run " + file + " --storage " + storage + " --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto trials = trials_by(storage, "bad", "kind");
  ASSERT_EQ(trials.size(), 4u);
  EXPECT_EQ(trials["fine"]["status"], "TERMINATED");
  const std::map<std::string, std::string> expected = {
      {"deep", "nested deeper than 64 levels"},
      {"overflow", "number overflow parsing '1e400'"},
      {"nul", "\\u0000 after the NUL"}};
  for (const auto& [kind, text] : expected) {
    EXPECT_EQ(trials[kind]["status"], "ERROR") << kind;
    const std::string error = trials[kind]["error"];
    EXPECT_NE(error.find(text), std::string::npos) << kind << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  EXPECT_NE(run_tune("status bad --storage " + storage).out.find("FINISHED"), std::string::npos);
}

// Issue 30, 2: `"checkpoint": "."` with the store under the program's folder
// copied the project into itself level after level, then deleted the
// original. Now: a folder holding the trial's folder is refused; one outside
// is copied and left in place (symlinks copied as links); the program's own
// folder in TUNE_CHECKPOINT_DIR is moved.
TEST(HostilePrograms, ACheckpointNeverTakesWhatTuneDidNotMake) {
  TempDir dir;
  fs::create_directories(dir.file("outside"));
  dir.write("outside/weights.txt", "w");
  fs::create_symlink("/etc/hostname", dir.file("outside/link"));
  fs::create_directory_symlink(dir.path(), dir.file("project_link"));
  dir.write("ck.py", R"(import json, os
kind = json.loads(os.environ["TUNE_CONFIG"])["kind"]
named = {"dot": ".", "store": "store", "link": "project_link", "outside": "outside"}.get(kind)
if kind == "own":
    named = os.path.join(os.environ["TUNE_CHECKPOINT_DIR"], "it1")
    os.makedirs(named)
    open(os.path.join(named, "w.txt"), "w").write("mine")
print("@tune " + json.dumps({"loss": 1.0, "checkpoint": named}), flush=True)
)");
  const std::string file = dir.write("ck.yaml", sweep("ck", "/usr/bin/python3, ck.py", "dot, store, link, outside, own"));
  const std::string storage = dir.file("store");
  auto run = run_tune("run " + file + " --storage " + storage + " --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto trials = trials_by(storage, "ck", "kind");
  for (const char* kind : {"dot", "store", "link"}) {
    EXPECT_EQ(trials[kind]["status"], "ERROR") << kind;
    const std::string error = trials[kind]["error"];
    EXPECT_NE(error.find("contains the trial's own folder"), std::string::npos) << kind << ": " << error;
  }
  // Nothing of the project was copied into a trial, nor moved away.
  for (const auto& entry : fs::recursive_directory_iterator(storage))
    EXPECT_NE(entry.path().filename(), "ck.py") << entry.path();
  EXPECT_TRUE(fs::exists(dir.file("ck.py")));
  EXPECT_TRUE(fs::exists(dir.file("store/tune.db")));

  EXPECT_EQ(trials["outside"]["status"], "TERMINATED") << trials["outside"].dump();
  EXPECT_TRUE(fs::exists(dir.file("outside/weights.txt"))) << "copied, left in place";
  EXPECT_EQ(trials["own"]["status"], "TERMINATED") << trials["own"].dump();
  auto store = Store::open(storage, true);
  for (const auto& t : store->trials(store->find_experiment("ck")->id)) {
    const std::string kind = t.config["kind"];
    const auto checkpoints = store->checkpoints(t.id);
    if (kind == "outside") {
      ASSERT_EQ(checkpoints.size(), 1u);
      const std::string taken = checkpoints[0].path;
      EXPECT_TRUE(fs::exists(taken + "/weights.txt"));
      EXPECT_TRUE(fs::is_symlink(taken + "/link")) << "a symlink is copied as a link, not followed";
    } else if (kind == "own") {
      ASSERT_EQ(checkpoints.size(), 1u);
      std::ifstream in(checkpoints[0].path + "/w.txt");
      std::string text;
      in >> text;
      EXPECT_EQ(text, "mine");
      EXPECT_FALSE(fs::exists(dir.file("store/ck/trial_00004/checkpoint_next/it1"))) << "moved";
    } else {
      EXPECT_TRUE(checkpoints.empty()) << kind;
    }
  }
}

// Issue 30, 3: the program exits while a background child holds its stdout:
// the trial ended only when the child did. Now its exit ends the trial, by
// its status, and the child is ended with it.
TEST(HostilePrograms, TheProgramsExitEndsTheTrialWhateverItLeftRunning) {
  TempDir dir;
  const std::string sleeper = marker(620);
  dir.write("bg.sh", "sleep " + sleeper + " &\necho '@tune {\"loss\": 1}'\n" +
                         "if [ \"$(echo \"$TUNE_CONFIG\" | grep -c fails)\" = 1 ]; then exit 5; fi\nexit 0\n");
  const std::string file = dir.write("bg.yaml", sweep("bg", "/bin/sh, bg.sh", "ok, fails"));
  const std::string storage = dir.file("store");
  // Bounded: the sleep would hold the trials for 620 s.
  auto run = run_command("timeout 300 " + std::string(TUNE_BINARY) + " run " + file + " --storage " + storage + " -q");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto trials = trials_by(storage, "bg", "kind");
  EXPECT_EQ(trials["ok"]["status"], "TERMINATED") << trials["ok"].dump();
  EXPECT_EQ(trials["ok"]["iteration"], 1);
  EXPECT_EQ(trials["fails"]["status"], "ERROR");
  EXPECT_NE(trials["fails"]["error"].get<std::string>().find("exited with status 5"), std::string::npos)
      << trials["fails"]["error"];
  EXPECT_TRUE(gone(sleeper, std::chrono::seconds(2))) << "a background child outlived its trial";
}

// Issue 30, 4: a grandchild in a session of its own survived a normal run;
// after kill -9 of `tune run`, background children lived on with parent 1.
// Now both end with the trial: by the supervisor when the driver dies, and
// by `tune resume` when the supervisor died too.
class TrialProcessesEnd : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (!GetParam()) ::setenv("TUNE_NO_CGROUP", "1", 1);
  }
  void TearDown() override { ::unsetenv("TUNE_NO_CGROUP"); }
};

TEST_P(TrialProcessesEnd, AfterANormalRun) {
  TempDir dir;
  const std::string detached = marker(621), background = marker(622);
  // The program ends only once its grandchild has left for a session of its own.
  dir.write("gc.sh", "setsid sleep " + detached + " </dev/null >/dev/null 2>&1 &\nsleep " + background +
                         " >/dev/null &\nwhile ! pgrep -f 'sleep " + detached +
                         "$' >/dev/null; do sleep 0.05; done\necho '@tune {\"loss\": 1}'\n");
  const std::string file = dir.write("gc.yaml", sweep("gc", "/bin/sh, gc.sh", "a"));
  auto run = run_command("timeout 300 " + std::string(TUNE_BINARY) + " run " + file + " --storage " +
                         dir.file("store") + " -q");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(gone(detached, std::chrono::seconds(2))) << "the setsid grandchild outlived the sweep";
  EXPECT_TRUE(gone(background, std::chrono::seconds(2)));
}

TEST_P(TrialProcessesEnd, AfterKill9OfTheDriverAndOfTheSupervisors) {
  TempDir dir;
  const std::string first = marker(623), second = marker(624);
  // A program that starts a background child, then trains until stopped.
  dir.write("long.sh", "sleep $SLEEPER >/dev/null &\necho '@tune {\"loss\": 1}'\nwhile true; do sleep 0.2; echo '@tune {\"loss\": 1}'; done\n");
  const std::string file = dir.write("long.yaml", sweep("long", "/bin/sh, long.sh", "a", "stop: {training_iteration: 5}\n"));
  const std::string storage = dir.file("store");
  auto start_driver = [&](const std::string& sleeper) {
    run_command("SLEEPER=" + sleeper + " " + TUNE_BINARY + " " +
                (sleeper == first ? "run " + file : std::string("resume long")) + " --storage " + storage +
                " -q >/dev/null 2>&1 & echo $! > " + dir.file("pid"));
    std::ifstream in(dir.file("pid"));
    int pid = 0;
    in >> pid;
    return pid;
  };
  // 1. kill -9 of the driver: the supervisor ends the trial's processes.
  int driver = start_driver(first);
  ASSERT_GT(driver, 0);
  ASSERT_TRUE(appears(first));
  run_command("kill -9 " + std::to_string(driver));
  EXPECT_TRUE(gone(first)) << "the background child outlived a kill -9 of tune run";

  // 2. kill -9 of the supervisor first, then of the driver: the background
  // child is left; the next `tune resume` ends it before anything runs.
  driver = start_driver(second);
  ASSERT_GT(driver, 0);
  ASSERT_TRUE(appears(second));
  const std::string supervisors = run_command("pgrep -P " + std::to_string(driver) + " -x tune-supervise").out;
  ASSERT_FALSE(supervisors.empty());
  run_command("kill -9 " + supervisors.substr(0, supervisors.find('\n')) + " " + std::to_string(driver));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(processes_with(second).empty()) << "left running: what resume must end";
  auto resumed = run_command("SLEEPER=" + marker(625) + " timeout 120 " + std::string(TUNE_BINARY) +
                             " resume long --storage " + storage + " -q");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(gone(second, std::chrono::seconds(1))) << "tune resume left the dead driver's processes running";
}

INSTANTIATE_TEST_SUITE_P(CgroupOrSubreaper, TrialProcessesEnd, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "WithCgroups" : "SubreaperOnly";
                         });

}  // namespace
}  // namespace tune
