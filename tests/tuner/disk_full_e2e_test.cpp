// A sweep whose store's disk fills up: the driver stops with one clear line,
// records the stop (INTERRUPTED), acknowledged nothing it did not store, and
// `tune resume` finishes once space is back. The store lives on a small tmpfs mounted in a private mount namespace
// (unshare -m: nothing outside the test sees it).
#include <gtest/gtest.h>
#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <tuple>

#include "test_util.h"

namespace tune {
namespace {

using testing::run_command;
using testing::TempDir;

const char* kFullDiskSweep = R"(name: full
trainable: synthetic
metric: loss
mode: min
num_samples: 40
max_concurrent_trials: 6
param_space:
  x: {uniform: [1, 2]}
  iterations: 200
)";

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// (trial index, attempt, iteration) -> metrics_json of every stored result.
using Key = std::tuple<int, int, int>;
std::map<Key, std::string> results_of(const std::string& db_path) {
  SQLite::Database db(db_path, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("PRAGMA integrity_check").getString(), "ok") << db_path;
  SQLite::Statement q(db, "SELECT t.trial_index, r.attempt, r.iteration, r.metrics_json FROM results r "
                          "JOIN trials t ON t.id = r.trial_id");
  std::map<Key, std::string> out;
  while (q.executeStep()) {
    out[{q.getColumn(0).getInt(), q.getColumn(1).getInt(), q.getColumn(2).getInt()}] = q.getColumn(3).getString();
  }
  return out;
}

TEST(DiskFull, TheDriverStopsCleanlyAndResumeFinishesOnceSpaceIsBack) {
  TempDir dir;
  const std::string sweep = dir.write("full.yaml", kFullDiskSweep), mnt = dir.file("mnt");
  // TUNE_ACK_LOG: every result a trial was answered about (session_base.h).
  const std::string script = "set -e; mkdir -p " + mnt + "; mount -t tmpfs -o size=600k tmpfs " + mnt + "; " +
                             "set +e; TUNE_ACK_LOG=" + dir.file("acks.log") + " " + TUNE_BINARY + " run " + sweep +
                             " --slots 6 --storage " + mnt + "/store -q 2>" +
                             dir.file("run.err") + "; echo $? >" + dir.file("run.rc") + "; set -e; " +
                             "cp -r " + mnt + "/store " + dir.file("when_full") + "; " +
                             "mount -o remount,size=64m " + mnt + "; set +e; " + TUNE_BINARY +
                             " resume full --storage " + mnt + "/store -q 2>" + dir.file("resume.err") +
                             "; echo $? >" + dir.file("resume.rc") + "; set -e; cp -r " + mnt + "/store " +
                             dir.file("final");
  auto r = run_command("timeout 120 unshare -m sh -c '" + script + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // The first run stopped with one line that says what happened and what to do.
  EXPECT_EQ(read(dir.file("run.rc")), "1\n");
  const std::string error = read(dir.file("run.err"));
  EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 1) << error;
  EXPECT_NE(error.find("is full"), std::string::npos) << error;
  EXPECT_NE(error.find("tune resume full --storage " + mnt + "/store"), std::string::npos) << error;

  // What it stored is consistent (each attempt's iterations from 1 without gaps) ...
  const auto when_full = results_of(dir.file("when_full/tune.db"));
  ASSERT_FALSE(when_full.empty());
  EXPECT_LT(when_full.size(), 40u * 200u);  // the disk did fill before the end
  for (const auto& [key, metrics] : when_full) {
    const auto [trial, attempt, iteration] = key;
    if (iteration > 1) EXPECT_TRUE(when_full.count({trial, attempt, iteration - 1})) << trial << "/" << iteration;
  }

  // The stop is recorded: no RUNNING experiment without a driver.
  {
    SQLite::Database db(dir.file("when_full/tune.db"), SQLite::OPEN_READONLY);
    EXPECT_EQ(db.execAndGet("SELECT status FROM experiments WHERE name = 'full'").getString(), "INTERRUPTED");
  }
  // Answered only after the commit, always (issue 30): the stop-time drain
  // answered results that never were, and a trial took them as acknowledged.
  std::ifstream acks(dir.file("acks.log"));
  int acked = 0;
  for (std::string experiment, verdict; acks >> experiment;) {
    int trial = 0, iteration = 0;
    acks >> trial >> iteration >> verdict;
    ++acked;
    bool stored = false;
    for (const auto& [key, metrics] : when_full)
      stored = stored || (std::get<0>(key) == trial && std::get<2>(key) == iteration);
    EXPECT_TRUE(stored) << "trial " << trial << " iteration " << iteration << " was answered '" << verdict
                        << "' but is not in the store";
  }
  EXPECT_GT(acked, 0);

  // ... and the resumed sweep finishes with every earlier result kept.
  EXPECT_EQ(read(dir.file("resume.rc")), "0\n") << read(dir.file("resume.err"));
  const auto final = results_of(dir.file("final/tune.db"));
  for (const auto& [key, metrics] : when_full) {
    auto it = final.find(key);
    ASSERT_NE(it, final.end()) << std::get<0>(key) << "/" << std::get<2>(key);
    EXPECT_EQ(it->second, metrics);
  }
  SQLite::Database db(dir.file("final/tune.db"), SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM trials WHERE status = 'TERMINATED'").getInt(), 40);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM trials WHERE last_iteration = 200").getInt(), 40);
}

// A small disk with room for the sweep's results (~2 MiB) but not for a WAL
// that starts over only once a second: 40 fast trials wrote 18-20 MiB of WAL
// within that second and filled 20 MiB (3 runs of 3, before the WAL was
// capped at half the disk's free space). Now the sweep runs to its end.
TEST(DiskFull, ASweepOnASmallDiskKeepsItsWalWithinTheRoomLeft) {
  TempDir dir;
  const std::string sweep = dir.write("full.yaml", kFullDiskSweep), mnt = dir.file("mnt");
  const std::string script = "set -e; mkdir -p " + mnt + "; mount -t tmpfs -o size=20m tmpfs " + mnt + "; set +e; " +
                             TUNE_BINARY + " run " + sweep + " --slots 6 --storage " + mnt + "/store -q 2>" +
                             dir.file("run.err") + "; echo $? >" + dir.file("run.rc") + "; set -e; cp -r " + mnt +
                             "/store " + dir.file("final");
  auto r = run_command("timeout 120 unshare -m sh -c '" + script + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read(dir.file("run.rc")), "0\n") << read(dir.file("run.err"));
  SQLite::Database db(dir.file("final/tune.db"), SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM trials WHERE last_iteration = 200").getInt(), 40);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM results").getInt(), 40 * 200);
}

}  // namespace
}  // namespace tune
