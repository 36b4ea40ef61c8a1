// ChildProcess and the supervisor under it: a trial's program is watched by
// its exit, and every process it starts ends with it. The programs are /bin/sh
// scripts; every process a test starts carries a marker of that test
// (`sleep 6xx.N`), so that the test finds (and at its end kills, by pid) only
// its own.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "test_util.h"
#include "process_markers.h"
#include "tuner/exec/child_process.h"
#include "tuner/exec/trial_processes.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
using internal::ChildProcess;
using testing::run_command;
using testing::TempDir;

extern "C" char** environ;

std::vector<std::string> environment(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.push_back(*e);
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

using testing::gone;
using testing::marker;
using testing::processes_with;

// The end of a test: what it started and still runs is killed, by pid.
void end(const std::string& marker) {
  for (pid_t pid : processes_with(marker)) ::kill(pid, SIGKILL);
}

bool appears(const std::string& marker) {
  for (int i = 0; i < 200 && processes_with(marker).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  return !processes_with(marker).empty();
}

std::unique_ptr<ChildProcess> start(const TempDir& dir, const std::string& script,
                                    const std::vector<std::string>& env = {}) {
  return std::make_unique<ChildProcess>(std::vector<std::string>{"/bin/sh", "-c", script}, dir.path(),
                                        environment(env), dir.path() + "/", "@tune ");
}

// The program exits while its background child still holds stdout (a
// training script that started TensorBoard): the exit ends the trial, and
// what the program printed before it is read.
TEST(ChildProcess, TheProgramsExitEndsItEvenWithABackgroundChildHoldingStdout) {
  TempDir dir;
  const std::string sleeper = marker(600);
  auto child = start(dir, "sleep " + sleeper + " & echo '@tune {\"loss\": 1}'; exit 5");
  std::vector<std::string> results;
  int pumps = 0;
  while (child->pump(100, &results) && pumps < 600) ++pumps;
  ASSERT_LT(pumps, 600) << "pump never saw the program's exit";
  ASSERT_EQ(results, std::vector<std::string>{"{\"loss\": 1}"});
  const std::optional<int> status = child->reap(true);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 5) << child->describe(*status);
  EXPECT_TRUE(gone(sleeper)) << "the background child outlived the trial";
}

// A grandchild in a session of its own (setsid) and one that double-forked
// are still the trial's: both end with it.
TEST(ChildProcess, GrandchildrenThatLeftTheProcessGroupEndWithTheTrial) {
  TempDir dir;
  const std::string detached = marker(601), orphan = marker(602);
  auto child = start(dir, "setsid sleep " + detached + " </dev/null >/dev/null 2>&1 & (sleep " + orphan +
                              " </dev/null >/dev/null 2>&1 &) ; echo '@tune {\"loss\": 2}'; exec sleep 600");
  ASSERT_TRUE(appears(detached));
  ASSERT_TRUE(appears(orphan));
  child->stop(5);
  EXPECT_TRUE(gone(detached)) << "setsid";
  EXPECT_TRUE(gone(orphan)) << "double fork";
}

TEST(ChildProcess, StopEndsAProgramThatIgnoresSigtermAfterItsGrace) {
  TempDir dir;
  const std::string sleeper = marker(603);
  auto child = start(dir, "trap '' TERM; sleep " + sleeper + " & echo started; wait");
  ASSERT_TRUE(appears(sleeper));
  child->stop(0.5);
  const std::optional<int> status = child->reap(false);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL) << child->describe(*status);
  EXPECT_TRUE(gone(sleeper));
}

// Destroying the ChildProcess (the trial's thread ends, the sweep fails)
// ends everything, and leaves no record behind.
TEST(ChildProcess, DestroyingItEndsEverythingAndRemovesItsRecord) {
  TempDir dir;
  const std::string sleeper = marker(604);
  {
    auto child = start(dir, "sleep " + sleeper + " & sleep 600");
    ASSERT_TRUE(appears(sleeper));
    std::ifstream record(dir.file("processes"));
    std::string first;
    record >> first;
    EXPECT_EQ(first, "host") << "the record of the trial's processes is written while they run";
  }
  EXPECT_TRUE(gone(sleeper));
  EXPECT_FALSE(fs::exists(dir.file("processes")));
}

// Where cgroup v2 can be written (as here, as root), the program runs in a
// cgroup of its own, removed when the trial ends.
TEST(ChildProcess, TheProgramRunsInACgroupOfItsOwnWhereThereIsOne) {
  TempDir dir;
  internal::TrialCgroup probe = internal::make_trial_cgroup();
  if (probe.path.empty()) GTEST_SKIP() << "no writable cgroup v2 here: the subreaper alone contains trials";
  internal::close_trial_cgroup(probe);
  ::rmdir(probe.path.c_str());
  const std::string sleeper = marker(605);
  std::string cgroup;
  {
    auto child = start(dir, "sleep " + sleeper + " & wait");
    ASSERT_TRUE(appears(sleeper));
    std::ifstream record(dir.file("processes"));
    for (std::string key; record >> key;)
      if (key == "cgroup") record >> cgroup;
    ASSERT_FALSE(cgroup.empty());
    EXPECT_TRUE(fs::is_directory(cgroup));
    std::ifstream procs(cgroup + "/cgroup.procs");
    int members = 0;
    for (long pid; procs >> pid;) ++members;
    EXPECT_EQ(members, 2) << "the shell and its sleep";
  }
  EXPECT_TRUE(gone(sleeper));
  EXPECT_FALSE(fs::exists(cgroup)) << "the supervisor removes the trial's cgroup";
}

TEST(ChildProcess, WithoutCgroupsTheSupervisorStillEndsEverything) {
  TempDir dir;
  ASSERT_EQ(::setenv("TUNE_NO_CGROUP", "1", 1), 0);
  EXPECT_TRUE(internal::make_trial_cgroup().path.empty());
  const std::string detached = marker(606);
  {
    auto child = start(dir, "setsid sleep " + detached + " </dev/null >/dev/null 2>&1 & exec sleep 600");
    ASSERT_TRUE(appears(detached));
  }
  ::unsetenv("TUNE_NO_CGROUP");
  EXPECT_TRUE(gone(detached));
}

TEST(ChildProcess, AProgramThatCannotRunIsAnErrorNamingIt) {
  TempDir dir;
  try {
    ChildProcess child({"/no/such/program"}, dir.path(), environment(), dir.path() + "/", "@tune ");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot run '/no/such/program' (in " + dir.path() + "): No such file or directory");
  }
  EXPECT_FALSE(fs::exists(dir.file("processes")));
}

// A driver killed with its supervisors (kill -9 of both): the next driver
// ends what the trial left, found by its record (cgroup) or by the
// TUNE_TRIAL_DIR every program of the trial inherits.
TEST(TrialProcesses, ResumeEndsWhatADeadDriversTrialLeft) {
  TempDir dir;
  const std::string trial_dir = dir.file("exp/trial_00003");
  fs::create_directories(trial_dir);
  const std::string sleeper = marker(607), other = marker(608);
  run_command("TUNE_TRIAL_DIR=" + trial_dir + " setsid sleep " + sleeper + " </dev/null >/dev/null 2>&1 &");
  run_command("TUNE_TRIAL_DIR=" + dir.file("other/trial_00003") + " setsid sleep " + other +
              " </dev/null >/dev/null 2>&1 &");
  ASSERT_TRUE(appears(sleeper));
  ASSERT_TRUE(appears(other));
  EXPECT_GE(internal::end_leftover_processes_of_experiment(dir.file("exp")), 1);
  EXPECT_TRUE(gone(sleeper, std::chrono::seconds(2)));
  EXPECT_FALSE(processes_with(other).empty()) << "another experiment's program is not this one's to end";
  end(other);
}

// A record is written in a folder the program can write: it may lie. A
// named supervisor is signalled only if it is one (its name and start time).
TEST(TrialProcesses, AForgedRecordEndsNothingElse) {
  TempDir dir;
  const std::string trial_dir = dir.file("exp/trial_00000");
  fs::create_directories(trial_dir);
  const std::string sleeper = marker(609);
  run_command("setsid sleep " + sleeper + " </dev/null >/dev/null 2>&1 &");
  ASSERT_TRUE(appears(sleeper));
  const pid_t victim = processes_with(sleeper).at(0);
  std::string started;
  {
    std::ifstream stat("/proc/" + std::to_string(victim) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 1));
    for (int i = 3; i <= 22; ++i) fields >> started;
  }
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  std::ofstream(trial_dir + "/processes") << "host " << host << "\nsupervisor " << victim << " " << started
                                          << "\nprogram 1 1\ncgroup /sys/fs/cgroup\n";
  internal::end_leftover_processes_of_experiment(dir.file("exp"));
  EXPECT_FALSE(processes_with(sleeper).empty()) << "a forged record ended a process that is no supervisor";
  EXPECT_TRUE(fs::exists("/sys/fs/cgroup"));
  EXPECT_FALSE(fs::exists(trial_dir + "/processes")) << "a record is read once";
  end(sleeper);
}

}  // namespace
}  // namespace tune
