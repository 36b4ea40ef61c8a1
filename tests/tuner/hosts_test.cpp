// Hosts: OpenMPI hostfiles (plus gpus=), Slurm's compressed host and count
// lists, the hosts of a Slurm allocation and which names are this machine.
#include "tuner/exec/hosts.h"

#include <sys/wait.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "base/error.h"
#include "test_util.h"
#include "tuner/exec/host_checks.h"

namespace tune::internal {
namespace {

using Names = std::vector<std::string>;

// The message of the ConfigError `f` throws; fails the test if it throws none.
template <typename F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError thrown";
  return "";
}

std::string hostfile_error(const std::string& text) {
  return config_error([&] { parse_hostfile(text, "hosts.txt"); });
}

std::string own_host_name() {
  char buffer[256] = {};
  EXPECT_EQ(::gethostname(buffer, sizeof buffer - 1), 0);
  return buffer;
}

TEST(Hosts, HostfileReadsSlotsGpusCommentsAndBlankLines) {
  const auto hosts = parse_hostfile(
      "# the cluster\n"
      "tune-test-a slots=4 gpus=2\n"
      "\n"
      "   \t\n"
      "tune-test-b\tslots=8  max_slots=16   # trailing comment\n"
      "tune-test-c\n"
      "  tune-test-d gpus=0 slots=2\n"
      "tune-test-e slots=3\r\n"  // CRLF line endings
      "localhost slots=1\n",
      "hosts.txt");
  ASSERT_EQ(hosts.size(), 6u);
  const std::vector<std::tuple<std::string, int, int, bool>> expected = {
      {"tune-test-a", 4, 2, false}, {"tune-test-b", 8, 0, false}, {"tune-test-c", 1, 0, false},
      {"tune-test-d", 2, 0, false}, {"tune-test-e", 3, 0, false}, {"localhost", 1, 0, true}};
  for (size_t i = 0; i < hosts.size(); ++i) {
    SCOPED_TRACE(hosts[i].name);
    EXPECT_EQ(hosts[i].name, std::get<0>(expected[i]));
    EXPECT_EQ(hosts[i].slots, std::get<1>(expected[i]));
    EXPECT_EQ(hosts[i].gpus, std::get<2>(expected[i]));
    EXPECT_EQ(hosts[i].local, std::get<3>(expected[i]));
  }
}

TEST(Hosts, HostWithoutSlotsHasOneAndNoGpus) {
  const auto hosts = parse_hostfile("tune-test-a\n", "h");
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0].slots, 1);
  EXPECT_EQ(hosts[0].gpus, 0);
  EXPECT_FALSE(hosts[0].local);
}

TEST(Hosts, HostfileMarksThisMachineLocal) {
  const auto hosts = parse_hostfile(own_host_name() + " slots=2\n127.0.0.1\ntune-test-remote\n", "h");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_TRUE(hosts[0].local);
  EXPECT_TRUE(hosts[1].local);
  EXPECT_FALSE(hosts[2].local);
}

TEST(Hosts, DuplicateHostIsAnErrorAtItsLine) {
  const std::string message = hostfile_error("tune-test-a\n# comment\ntune-test-b\ntune-test-a slots=2\n");
  EXPECT_EQ(message.rfind("hosts.txt:4: ", 0), 0u) << message;
  EXPECT_NE(message.find("'tune-test-a'"), std::string::npos) << message;
  EXPECT_NE(message.find("twice"), std::string::npos) << message;
}

TEST(Hosts, BadCountsAreErrorsNamingFileLineAndValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"slots=0", "'0'"},          {"slots=-1", "'-1'"},      {"slots=abc", "'abc'"}, {"slots=", "''"},
      {"slots=4x", "'4x'"},        {"gpus=-2", "'-2'"},       {"gpus=two", "'two'"},  {"max_slots=x", "'x'"},
      {"slots=1234567890", "'1234567890'"}, {"slots=2.5", "'2.5'"}};
  for (const auto& [word, value] : cases) {
    SCOPED_TRACE(word);
    const std::string message = hostfile_error("tune-test-a\n\ntune-test-b " + word + "\n");
    EXPECT_EQ(message.rfind("hosts.txt:3: ", 0), 0u) << message;
    EXPECT_NE(message.find(value), std::string::npos) << message;
    const std::string key = word.substr(0, word.find('='));
    EXPECT_NE(message.find(key), std::string::npos) << message;
  }
  // Zero is a fine GPU count (and max_slots is accepted, though unused).
  EXPECT_EQ(parse_hostfile("tune-test-a gpus=0 max_slots=0\n", "h")[0].gpus, 0);
}

TEST(Hosts, UnknownKeySuggestsTheNearestOne) {
  std::string message = hostfile_error("tune-test-a slot=4\n");
  EXPECT_EQ(message.rfind("hosts.txt:1: ", 0), 0u) << message;
  EXPECT_NE(message.find("'slot'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'slots'"), std::string::npos) << message;

  message = hostfile_error("tune-test-a\ntune-test-b gpu=1\n");
  EXPECT_EQ(message.rfind("hosts.txt:2: ", 0), 0u) << message;
  EXPECT_NE(message.find("did you mean 'gpus'"), std::string::npos) << message;

  // Nothing close: the keys are listed. A bare word (no '=') is no key either.
  message = hostfile_error("tune-test-a memory=64G\n");
  EXPECT_NE(message.find("'memory'"), std::string::npos) << message;
  EXPECT_NE(message.find("slots"), std::string::npos) << message;
  EXPECT_NE(message.find("gpus"), std::string::npos) << message;
  message = hostfile_error("tune-test-a 4\n");
  EXPECT_EQ(message.rfind("hosts.txt:1: ", 0), 0u) << message;
  EXPECT_NE(message.find("'4'"), std::string::npos) << message;
}

TEST(Hosts, BadHostNameAndEmptyHostfileAreErrors) {
  std::string message = hostfile_error("tune-test-a\nnode1,node2 slots=2\n");
  EXPECT_EQ(message.rfind("hosts.txt:2: ", 0), 0u) << message;
  EXPECT_NE(message.find("node1,node2"), std::string::npos) << message;

  message = hostfile_error("# nothing but comments\n\n");
  EXPECT_EQ(message.rfind("hosts.txt", 0), 0u) << message;
  EXPECT_NE(message.find("no host"), std::string::npos) << message;
  EXPECT_NE(hostfile_error("").find("no host"), std::string::npos);
}

TEST(Hosts, ReadHostfileReadsTheFileAndNamesItInErrors) {
  tune::testing::TempDir dir;
  const auto hosts = read_hostfile(dir.write("hosts", "tune-test-a slots=2 gpus=1\ntune-test-b\n"));
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[0].gpus, 1);
  EXPECT_EQ(hosts[1].name, "tune-test-b");

  const std::string bad = dir.write("bad", "tune-test-a slots=0\n");
  const std::string message = config_error([&] { read_hostfile(bad); });
  EXPECT_EQ(message.rfind(bad + ":1: ", 0), 0u) << message;
  const std::string missing = dir.file("missing");
  EXPECT_NE(config_error([&] { read_hostfile(missing); }).find(missing), std::string::npos);
}

TEST(Hosts, ExpandHostlistExpandsRangesKeepingZeroPadding) {
  EXPECT_EQ(expand_hostlist("node[1-3,07],gpu01"), (Names{"node1", "node2", "node3", "node07", "gpu01"}));
  EXPECT_EQ(expand_hostlist("node[08-11]"), (Names{"node08", "node09", "node10", "node11"}));
  EXPECT_EQ(expand_hostlist("n[098-101]"), (Names{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand_hostlist("a[1-2],b[3-4,9],c"), (Names{"a1", "a2", "b3", "b4", "b9", "c"}));
  EXPECT_EQ(expand_hostlist("gpu[5]"), (Names{"gpu5"}));
  EXPECT_EQ(expand_hostlist("single"), (Names{"single"}));
  EXPECT_EQ(expand_hostlist("x1,x2,x3"), (Names{"x1", "x2", "x3"}));
  EXPECT_EQ(expand_hostlist("rack-1.example[0-1]"), (Names{"rack-1.example0", "rack-1.example1"}));
}

// Text after the brackets, and several bracket groups in one name (Slurm
// writes both: "node[1-2]-ib", "rack[1-2]-n[01-02]").
TEST(Hosts, ExpandHostlistKeepsSuffixesAndExpandsEveryBracketGroup) {
  EXPECT_EQ(expand_hostlist("node[1-2]-ib"), (Names{"node1-ib", "node2-ib"}));
  EXPECT_EQ(expand_hostlist("rack[1-2]-n[01-02]"), (Names{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}));
  EXPECT_EQ(expand_hostlist("a[1,3]b[7],c[0-1].ib,d"), (Names{"a1b7", "a3b7", "c0.ib", "c1.ib", "d"}));
  EXPECT_EQ(expand_hostlist("x[9-10]y"), (Names{"x9y", "x10y"}));
}

TEST(Hosts, ExpandHostlistIsBounded) {
  EXPECT_EQ(expand_hostlist("n[0-99]m[0-99]").size(), 10000u);
  const std::string message = config_error([&] { expand_hostlist("n[0-999]m[0-999]"); });
  EXPECT_NE(message.find("n[0-999]m[0-999]"), std::string::npos) << message;
}

TEST(Hosts, MalformedHostlistIsAConfigError) {
  for (const std::string list : {"node[1-3", "node[3-1]", "node[a-b]", "node[1-]", "node[-3]", "node[1-2-3]",
                                 "node[1,,2]", "node[1-x],b", "node[]",
                                 "a,node[]", "node[1,]", "a,,b", "a,", "", "node1]", "node[1[2]]", "n[1]-[2"}) {
    SCOPED_TRACE(list);
    const std::string message = config_error([&] { expand_hostlist(list); });
    EXPECT_NE(message.find(list), std::string::npos) << message;
  }
}

TEST(Hosts, ExpandCountsRepeats) {
  EXPECT_EQ(expand_counts("4(x2),2"), (std::vector<int>{4, 4, 2}));
  EXPECT_EQ(expand_counts("16"), (std::vector<int>{16}));
  EXPECT_EQ(expand_counts("1,2(x3),8(x1)"), (std::vector<int>{1, 2, 2, 2, 8}));
  EXPECT_EQ(expand_counts("72(x10)").size(), 10u);
}

TEST(Hosts, MalformedCountsAreConfigErrors) {
  for (const std::string counts : {"4(x2", "4(2)", "x", "4,,2", "4(x)", "4(xa)", "-1", "4(x2)5", "4(x-1)", "a(x2)"}) {
    SCOPED_TRACE(counts);
    const std::string message = config_error([&] { expand_counts(counts); });
    EXPECT_NE(message.find(counts), std::string::npos) << message;
  }
}

// A fake environment for slurm_hosts.
Getenv environment(std::map<std::string, std::string> variables) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(variables));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(Hosts, SlurmHostsComeFromTheAllocation) {
  const auto hosts = slurm_hosts(environment({{"SLURM_JOB_ID", "42"},
                                              {"SLURM_JOB_NODELIST", "tune-test-n[1-2],tune-test-gpu07"},
                                              {"SLURM_JOB_CPUS_PER_NODE", "8(x2),4"},
                                              {"SLURM_GPUS_PER_NODE", "2"}}));
  ASSERT_TRUE(hosts);
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[0].name, "tune-test-n1");
  EXPECT_EQ((*hosts)[1].name, "tune-test-n2");
  EXPECT_EQ((*hosts)[2].name, "tune-test-gpu07");
  EXPECT_EQ((*hosts)[0].slots, 8);
  EXPECT_EQ((*hosts)[1].slots, 8);
  EXPECT_EQ((*hosts)[2].slots, 4);
  for (const auto& host : *hosts) {
    EXPECT_EQ(host.gpus, 2) << host.name;
    EXPECT_FALSE(host.local) << host.name;
  }
}

TEST(Hosts, SlurmGpusMayNameATypeAndDefaultToNone) {
  auto hosts = slurm_hosts(environment({{"SLURM_JOB_ID", "7"},
                                        {"SLURM_JOB_NODELIST", "tune-test-a"},
                                        {"SLURM_JOB_CPUS_PER_NODE", "6"},
                                        {"SLURM_GPUS_PER_NODE", "a100:4"}}));
  ASSERT_TRUE(hosts);
  ASSERT_EQ(hosts->size(), 1u);
  EXPECT_EQ((*hosts)[0].gpus, 4);
  EXPECT_EQ((*hosts)[0].slots, 6);

  hosts = slurm_hosts(environment({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "tune-test-[1-2]"}}));
  ASSERT_TRUE(hosts);
  ASSERT_EQ(hosts->size(), 2u);
  EXPECT_EQ((*hosts)[1].name, "tune-test-2");
  EXPECT_EQ((*hosts)[0].gpus, 0);
  EXPECT_EQ((*hosts)[0].slots, 1);  // no CPU count: one slot
}

TEST(Hosts, SlurmMarksThisMachineLocal) {
  const std::string own = own_host_name();
  const auto hosts = slurm_hosts(environment(
      {{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", own + ",tune-test-other"}, {"SLURM_JOB_CPUS_PER_NODE", "2(x2)"}}));
  ASSERT_TRUE(hosts);
  ASSERT_EQ(hosts->size(), 2u);
  EXPECT_TRUE((*hosts)[0].local);
  EXPECT_FALSE((*hosts)[1].local);
}

TEST(Hosts, NoSlurmHostsOutsideAnAllocation) {
  EXPECT_FALSE(slurm_hosts(environment({})));
  EXPECT_FALSE(slurm_hosts(environment({{"SLURM_JOB_ID", "42"}})));  // no node list
  EXPECT_FALSE(slurm_hosts(environment({{"HOME", "/root"}, {"SLURM_JOB_CPUS_PER_NODE", "4"}})));
}

TEST(Hosts, SlurmHostsWithAMalformedListAreAConfigError) {
  const auto env = environment({{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "node[1-"}});
  EXPECT_NE(config_error([&] { slurm_hosts(env); }).find("node[1-"), std::string::npos);
  const auto counts = environment(
      {{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "node1"}, {"SLURM_JOB_CPUS_PER_NODE", "4(x"}});
  EXPECT_NE(config_error([&] { slurm_hosts(counts); }).find("4(x"), std::string::npos);
}

TEST(Hosts, DetectLocalGpusCountsDriverDirectories) {
  tune::testing::TempDir dir;
  std::filesystem::create_directory(dir.file("0000:01:00.0"));
  std::filesystem::create_directory(dir.file("0000:41:00.0"));
  dir.write("not-a-gpu", "x");
  EXPECT_EQ(detect_local_gpus(dir.path()), 2);
  EXPECT_EQ(detect_local_gpus(dir.file("missing")), 0);
}

TEST(Hosts, IsLocalHost) {
  const std::string own = own_host_name();
  EXPECT_TRUE(is_local_host("localhost"));
  EXPECT_TRUE(is_local_host("127.0.0.1"));
  EXPECT_TRUE(is_local_host("127.0.1.1"));
  EXPECT_TRUE(is_local_host("::1"));
  EXPECT_TRUE(is_local_host(own));
  EXPECT_TRUE(is_local_host(own.substr(0, own.find('.'))));
  EXPECT_FALSE(is_local_host("tune-test-elsewhere.invalid"));
  EXPECT_FALSE(is_local_host("10.0.0.1"));
  EXPECT_FALSE(is_local_host(own + "x"));
  EXPECT_FALSE(is_local_host(""));
}

// A driver killed with -9 during its host checks leaves /tmp/tune-checks-XXXXXX;
// the next driver removes it, and nothing else: not a folder whose driver
// runs, not one holding another file, not one without an owner, not a link.
TEST(HostCheckFolders, OnlyAbandonedFoldersOfCheckLogsAreRemoved) {
  tune::testing::TempDir tmp;
  const std::filesystem::path root = tmp.path();
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // a pid that is gone
  auto folder = [&](const std::string& name, long long owner, std::vector<std::string> files) {
    std::filesystem::create_directories(root / name);
    if (owner) std::ofstream(root / name / "owner") << owner << "\n";
    for (const auto& file : files) std::ofstream(root / name / file) << "x";
    return root / name;
  };
  const auto abandoned = folder("tune-checks-aB3dE6", child, {"check_0.log", "check_12.log"});
  const auto running = folder("tune-checks-xYz123", ::getpid(), {"check_0.log"});
  const auto other_file = folder("tune-checks-q1w2e3", child, {"check_0.log", "model.pt"});
  const auto no_owner = folder("tune-checks-r4t5y6", 0, {"check_0.log"});
  const auto other_name = folder("my-checks-u7i8o9", child, {"check_0.log"});
  const auto target = folder("elsewhere", child, {"check_0.log"});
  std::filesystem::create_directory_symlink(target, root / "tune-checks-lInK00");

  EXPECT_EQ(HostChecks::remove_abandoned_folders(root.string()), 1);
  EXPECT_FALSE(std::filesystem::exists(abandoned));
  for (const auto& kept : {running, other_file, no_owner, other_name, target})
    EXPECT_TRUE(std::filesystem::exists(kept / "check_0.log")) << kept;
  EXPECT_TRUE(std::filesystem::is_symlink(root / "tune-checks-lInK00"));
  EXPECT_EQ(HostChecks::remove_abandoned_folders(root.string()), 0);
  EXPECT_EQ(HostChecks::remove_abandoned_folders((root / "missing").string()), 0);
}

}  // namespace
}  // namespace tune::internal
