// What a killed mpirun leaves behind, for real (mpirun, two ranks of
// mpi_hold): OpenMPI removes its session folder and its ranks' shared-memory
// segments at a normal end, but not after SIGKILL, which tune sends to a
// group that does not stop in its grace, one on a host that went silent, and
// a host check past its deadline. tune removes them once it has reaped the
// mpirun, and nothing else.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "test_util.h"
#include "tuner/exec/mpi_launcher.h"

namespace tune::internal {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string uid() { return std::to_string(::geteuid()); }

std::string session_base() {
  for (const char* name : {"TMPDIR", "TEMP", "TMP"})
    if (const char* value = std::getenv(name); value && *value) return value;
  return "/tmp";
}

// <base>/ompi.<node>.<uid>/pid.<pid>, or "" when there is none.
std::string session_of(pid_t pid) {
  std::error_code ec;
  for (fs::directory_iterator it(session_base(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("ompi.", 0) != 0) continue;
    const fs::path dir = it->path() / ("pid." + std::to_string(pid));
    if (fs::is_directory(dir)) return dir.string();
  }
  return "";
}

// The job family in a session folder's contact file (its daemon job's id >> 16).
unsigned long long family_of(const std::string& session) {
  std::ifstream contact(session + "/contact.txt");
  std::string line;
  std::getline(contact, line);
  return std::strtoull(line.c_str(), nullptr, 10) >> 16;
}

std::vector<std::string> segments_of(unsigned long long family) {
  char prefix[64];
  std::snprintf(prefix, sizeof prefix, ".%s.%llx", uid().c_str(), family);  // job ids: family, then 4 hex digits
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it("/dev/shm", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("vader_segment.", 0) == 0 && name.find(prefix) != std::string::npos) found.push_back(it->path());
  }
  return found;
}

class MpirunLeftovers : public ::testing::Test {
 protected:
  // mpirun with two ranks of mpi_hold, once both have initialized MPI.
  pid_t start() {
    MpiLaunch launch;
    launch.ranks = 2;
    launch.program = {MPI_HOLD_BINARY, dir_.path()};
    launch.log_path = dir_.file("mpirun.log");
    pid_ = spawn_mpirun(launch);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!(fs::exists(dir_.file("ready.0")) && fs::exists(dir_.file("ready.1"))) &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(fs::exists(dir_.file("ready.1"))) << "both ranks up within 60 s";
    return pid_;
  }

  void TearDown() override {
    for (const auto& path : decoys_) ::unlink(path.c_str());
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);  // a failed test: nothing of it is left running
    ::waitpid(pid_, nullptr, 0);
    remove_killed_mpirun_leftovers(pid_);
  }

  std::string decoy(const std::string& name) {
    const std::string path = "/dev/shm/" + name;
    std::ofstream(path) << "not tune's\n";
    decoys_.push_back(path);
    return path;
  }

  TempDir dir_;
  pid_t pid_ = -1;
  std::vector<std::string> decoys_;
};

TEST_F(MpirunLeftovers, AKilledMpirunLeavesItsSessionAndSegmentsWhichTuneRemovesAndNothingElse) {
  const pid_t pid = start();
  const std::string session = session_of(pid);
  ASSERT_FALSE(session.empty()) << "mpirun's session folder under " << session_base();
  const unsigned long long family = family_of(session);
  ASSERT_GT(family, 0u);
  ASSERT_EQ(segments_of(family).size(), 2u) << "one shared-memory segment a rank";
  // Files that are not this job's: another job family's, another user's.
  char name[128];
  std::snprintf(name, sizeof name, "vader_segment.decoy.%s.%llx.0", uid().c_str(), ((family + 1) & 0xffff) << 16 | 1);
  const std::string other_job = decoy(name);
  std::snprintf(name, sizeof name, "vader_segment.decoy.%u.%llx.0", ::geteuid() + 1, family << 16 | 1);
  const std::string other_user = decoy(name);

  ::kill(-pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  pid_ = -1;
  // What OpenMPI leaves (the reason for the function under test).
  EXPECT_TRUE(fs::exists(session));
  EXPECT_EQ(segments_of(family).size(), 2u);

  EXPECT_EQ(remove_killed_mpirun_leftovers(pid), 3) << "two segments and the folder";
  EXPECT_FALSE(fs::exists(session));
  EXPECT_TRUE(segments_of(family).empty());
  EXPECT_TRUE(fs::exists(other_job));
  EXPECT_TRUE(fs::exists(other_user));
  EXPECT_EQ(remove_killed_mpirun_leftovers(pid), 0) << "nothing a second time";
}

TEST_F(MpirunLeftovers, ReapKillsAnMpirunPastItsGraceAndLeavesNothing) {
  const pid_t pid = start();
  const std::string session = session_of(pid);
  ASSERT_FALSE(session.empty());
  const unsigned long long family = family_of(session);
  ASSERT_EQ(segments_of(family).size(), 2u);
  EXPECT_EQ(reap(pid, std::chrono::milliseconds(200)), 128 + SIGKILL) << "mpi_hold does not end by itself";
  pid_ = -1;
  EXPECT_FALSE(fs::exists(session));
  EXPECT_TRUE(segments_of(family).empty());
}

TEST_F(MpirunLeftovers, AFolderWhoseContactFileNamesAnotherProcessIsLeftAlone) {
  const pid_t pid = start();
  const std::string session = session_of(pid);
  ASSERT_FALSE(session.empty());
  ::kill(-pid, SIGKILL);
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
  pid_ = -1;
  const std::string contact = session + "/contact.txt";
  std::ifstream in(contact);
  std::string uri;
  std::getline(in, uri);
  in.close();
  std::ofstream(contact, std::ios::trunc) << uri << "\n" << pid + 1 << "\n";  // as if another mpirun had the pid now
  EXPECT_EQ(remove_killed_mpirun_leftovers(pid), 0);
  EXPECT_TRUE(fs::exists(session));
  EXPECT_EQ(segments_of(family_of(session)).size(), 2u);
  // The test's own clean-up: the right contact file again, then removed.
  std::ofstream(contact, std::ios::trunc) << uri << "\n" << pid << "\n";
  EXPECT_EQ(remove_killed_mpirun_leftovers(pid), 3);
}


// Is `pid` gone (or a zombie nobody reaped yet)?
bool ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

// OpenMPI starts each remote host's daemon through ssh (here a launcher that
// hangs, as ssh does towards a host whose login is stuck) in a process group
// of its own: a SIGKILL of mpirun's group leaves it running for ever.
TEST(KillMpirun, AHungRemoteLaunchIsKilledWithItsMpirun) {
  TempDir dir;
  const std::string agent = dir.file("agent.sh");
  std::ofstream(agent) << "#!/bin/sh\necho $$ > " << dir.file("agent.pid") << "\nexec sleep 300\n";
  fs::permissions(agent, fs::perms::owner_all);
  auto launch_hung = [&] {
    fs::remove(dir.file("agent.pid"));
    MpiLaunch launch;
    launch.ranks = 1;
    launch.program = {"true"};
    launch.hosts = {{"hung-host", 1}};
    launch.env = {{"OMPI_MCA_plm_rsh_agent", agent}};
    launch.log_path = dir.file("mpirun.log");
    const pid_t pid = spawn_mpirun(launch);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!fs::exists(dir.file("agent.pid")) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the file written whole
    std::ifstream file(dir.file("agent.pid"));
    pid_t launcher = -1;
    file >> launcher;
    return std::make_pair(pid, launcher);
  };
  auto wait_ended = [](pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!ended(pid) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return ended(pid);
  };

  // What a kill of mpirun's own group leaves (the reason for kill_mpirun).
  auto [pid, launcher] = launch_hung();
  ASSERT_GT(launcher, 0) << "mpirun ran the launcher";
  EXPECT_NE(::getpgid(launcher), pid) << "OpenMPI puts the launch in a group of its own";
  ::kill(-pid, SIGKILL);
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
  remove_killed_mpirun_leftovers(pid);
  EXPECT_FALSE(wait_ended(launcher)) << "a kill of mpirun's group alone reaches the launch";
  ::kill(launcher, SIGKILL);

  std::tie(pid, launcher) = launch_hung();
  ASSERT_GT(launcher, 0);
  kill_mpirun(pid);
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
  remove_killed_mpirun_leftovers(pid);
  EXPECT_TRUE(wait_ended(launcher)) << "the hung launch outlived its mpirun";
  if (!ended(launcher)) ::kill(launcher, SIGKILL);
}

}  // namespace
}  // namespace tune::internal
