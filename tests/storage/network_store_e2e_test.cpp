// A store on a network filesystem, end to end with the `tune` binary. This
// machine's kernel has no NFS client, so the mount is FUSE (bindfs of a local
// folder): the kernel reports it as it reports sshfs, GlusterFS or an
// object-store mount, and tune treats it as it treats NFS, Lustre or GPFS
// (storage_internal::network_filesystem).
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <linux/magic.h>
#include <sys/vfs.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "test_util.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::run_command;
using testing::run_tune;
using testing::TempDir;

// SQLite's write-ahead log keeps its index in one machine's shared memory, so
// on such a filesystem tune writes with the rollback journal: no -wal file
// ever appears, `tune status` from another process reads the store while the
// sweep commits (through the file locks, as a reader on another machine
// would), and every result is there at the end, read through the local path
// of the same files too.
TEST(NetworkStore, AStoreOnAFuseMountIsWrittenWithTheRollbackJournalAndReadWhileTheSweepRuns) {
  TempDir dir;
  const std::string disk = dir.file("disk"), mount = dir.file("mount");
  fs::create_directories(disk);
  fs::create_directories(mount);
  auto mounted = run_command("bindfs " + disk + " " + mount);
  ASSERT_EQ(mounted.exit_code, 0) << "needs bindfs (scripts/install-deps.sh) and /dev/fuse: " << mounted.err;
  struct Unmount {
    std::string path;
    ~Unmount() { run_command("umount " + path + " || umount -l " + path); }
  } unmount{mount};
  struct statfs about {};
  ASSERT_EQ(::statfs(mount.c_str(), &about), 0);
  ASSERT_EQ(static_cast<uint32_t>(about.f_type), static_cast<uint32_t>(FUSE_SUPER_MAGIC));

  const std::string sweep = dir.write("net.yaml", R"(name: net
trainable: synthetic
metric: loss
mode: min
num_samples: 8
max_concurrent_trials: 4
search: {seed: 3}
param_space:
  x: {uniform: [0, 1]}
  iterations: 60
  sleep_s: 0.02
)");
  const std::string store = mount + "/store";
  std::atomic<bool> done{false};
  testing::CommandResult run;
  std::thread sweeping([&] {
    run = run_tune("run " + sweep + " --storage " + store + " --quiet");
    done = true;
  });
  int running_reads = 0, failed_reads = 0;
  bool wal_seen = false;
  std::string failure;
  while (!done) {
    wal_seen = wal_seen || fs::exists(store + "/tune.db-wal");
    if (fs::exists(store + "/tune.db")) {
      auto status = run_tune("status net --storage " + store + " --json");
      if (status.exit_code != 0) {
        failed_reads += 1;
        failure = status.err;
      } else if (Json::parse(status.out)["status"] == "RUNNING") {
        running_reads += 1;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  sweeping.join();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_FALSE(wal_seen) << "the write-ahead log on a network filesystem";
  EXPECT_EQ(failed_reads, 0) << failure;
  EXPECT_GE(running_reads, 3) << "read while the sweep ran";
  for (const std::string& where : {store, disk + "/store"}) {
    auto status = run_tune("status net --storage " + where + " --json");
    ASSERT_EQ(status.exit_code, 0) << status.err;
    const Json s = Json::parse(status.out);
    EXPECT_EQ(s["status"], "FINISHED");
    EXPECT_EQ(s["counts"]["TERMINATED"], 8);
    auto results = run_tune("results net --storage " + where + " --json");
    ASSERT_EQ(results.exit_code, 0) << results.err;
    EXPECT_EQ(Json::parse(results.out).size(), 8u * 60u);
  }
}

// With the rollback journal a reader's open transaction holds every commit
// back (in WAL nothing does). A reader that keeps one open for longer than
// the store's busy timeout (30 s: an interactive sqlite3 after BEGIN, a
// notebook's cursor) makes the sweep wait, said once, not fail: it finishes
// with every result once the reader lets go.
TEST(NetworkStore, AReaderHoldingTheRollbackJournalsLockMakesTheSweepWaitNotFail) {
  TempDir dir;
  const std::string sweep = dir.write("held.yaml", R"(name: held
trainable: synthetic
metric: loss
mode: min
num_samples: 2
search: {seed: 5}
param_space:
  x: {uniform: [0, 1]}
  iterations: 40
  sleep_s: 0.1
)");
  const std::string store = dir.file("store");
  std::atomic<bool> done{false};
  testing::CommandResult run;
  std::thread sweeping([&] {
    run = run_command("TUNE_STORE_JOURNAL=rollback " + std::string(TUNE_BINARY) + " run " + sweep + " --storage " +
                      store + " --quiet");
    done = true;
  });
  // Once results come in: a read transaction held for 33 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool held = false;
  while (!held && !done && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!fs::exists(store + "/tune.db")) continue;
    try {
      SQLite::Database reader(store + "/tune.db", SQLite::OPEN_READONLY, 5000);
      if (reader.execAndGet("SELECT count(*) FROM results").getInt() < 2) continue;
      reader.exec("BEGIN");
      reader.execAndGet("SELECT count(*) FROM results");  // takes the read lock
      held = true;
      std::this_thread::sleep_for(std::chrono::seconds(33));
      reader.exec("COMMIT");
    } catch (const SQLite::Exception&) {
      // the schema being made; try again
    }
  }
  sweeping.join();
  ASSERT_TRUE(held) << "the reader never read results while the sweep ran: " << run.err;
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("stays locked by another process (a reader holding a transaction open?): waiting for it"),
            std::string::npos)
      << run.err;
  auto status = run_tune("status held --storage " + store + " --json");
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(Json::parse(status.out)["counts"]["TERMINATED"], 2);
  auto results = run_tune("results held --storage " + store + " --json");
  EXPECT_EQ(Json::parse(results.out).size(), 80u);
}

}  // namespace
}  // namespace tune
