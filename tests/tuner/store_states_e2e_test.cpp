// End-to-end: what the store says and what `tune` answers agree at the
// edges (issue 30, 9): a store on a read-only mount, and a signal that comes
// just as a sweep ends.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "test_util.h"

namespace tune {
namespace {

using Json = nlohmann::json;
using testing::run_command;
using testing::run_tune;
using testing::TempDir;

const char* kQuick = R"(name: quick
trainable: synthetic
metric: loss
mode: min
num_samples: 3
param_space:
  x: {uniform: [0, 1]}
  iterations: 3
)";

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Every query command, run as SCRIPT's last lines on the store mounted
// read-only in a private mount namespace (nothing outside the test sees it).
testing::CommandResult query_read_only(const TempDir& dir, const std::string& storage) {
  std::string script = "set -e; mount --bind " + storage + " " + storage + "; mount -o remount,bind,ro " + storage +
                       "\nif touch " + storage + "/probe 2>/dev/null; then echo 'the mount is writable'; fi\nset +e\n";
  for (const char* query : {"trials quick --json", "best quick", "status quick", "experiments", "results quick --csv"})
    script += std::string(TUNE_BINARY) + " " + query + " --storage " + storage + " >/dev/null || echo 'FAILED: " +
              query + "'\n";
  return run_command("timeout 60 unshare -m sh " + dir.write("ro.sh", script));
}

// SQLite reads a WAL store through its -shm, which it cannot create on a
// read-only mount ("unable to open database file"): with no writer (no
// -wal, or an empty one) the store is read as immutable; a -wal holding
// changes without its -shm is one line that says what to do.
TEST(StoreOnAReadOnlyMount, QueriesWorkOrSayWhyInOneLine) {
  TempDir dir;
  const std::string storage = dir.file("store"), db = storage + "/tune.db";
  ASSERT_EQ(run_tune("run " + dir.write("q.yaml", kQuick) + " --storage " + storage + " -q").exit_code, 0);
  // The writer gone cleanly: its log checkpointed, no -wal or -shm left.
  ASSERT_EQ(run_command("/usr/bin/python3 -c \"import sqlite3; c = sqlite3.connect('" + db +
                        "'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()\" && rm -f " + db + "-wal " + db +
                        "-shm")
                .exit_code,
            0);
  auto clean = query_read_only(dir, storage);
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_EQ(clean.out, "") << clean.err;

  // A writer killed after a commit (its changes only in the -wal), the -shm gone.
  ASSERT_EQ(run_command("/usr/bin/python3 -c \"import os, sqlite3; c = sqlite3.connect('" + db +
                        "'); c.execute('PRAGMA wal_autocheckpoint = 0'); c.execute('UPDATE experiments SET "
                        "updated_at = updated_at + 1'); c.commit(); os._exit(0)\" && rm -f " + db + "-shm")
                .exit_code,
            0);
  auto pending = run_command("timeout 60 unshare -m sh -c 'mount --bind " + storage + " " + storage +
                             " && mount -o remount,bind,ro " + storage + " && " + TUNE_BINARY + " status quick --storage " +
                             storage + "'");
  EXPECT_EQ(pending.exit_code, 1);
  EXPECT_NE(pending.err.find("write-ahead log"), std::string::npos) << pending.err;
  EXPECT_NE(pending.err.find("tune.db-shm"), std::string::npos) << pending.err;
  EXPECT_EQ(std::count(pending.err.begin(), pending.err.end(), '\n'), 1) << pending.err;
}

// A SIGTERM that comes after the driver stored FINISHED interrupted nothing:
// tune exits 0, as the store says (it exited 130). The driver's stdout is a
// FIFO kept full, so that it stops in its last progress table, right after
// the commit, until the signal was sent.
TEST(ExitStatus, ASignalAfterTheLastCommitAgreesWithTheStore) {
  TempDir dir;
  const std::string storage = dir.file("store"), fifo = dir.file("out.fifo");
  ASSERT_EQ(run_command("mkfifo " + fifo).exit_code, 0);
  run_command("(exec 3<>" + fifo + "; head -c 65536 /dev/zero >&3; " + TUNE_BINARY + " run " +
              dir.write("q.yaml", kQuick) + " --storage " + storage + " --progress-interval 1000 >" + fifo + " 2>" +
              dir.file("err") + " & echo $! >" + dir.file("pid") + "; wait $!; echo $? >" + dir.file("rc") +
              ") </dev/null >/dev/null 2>&1 &");
  std::string status;
  for (int i = 0; i < 600 && status != "FINISHED"; ++i) {
    auto answer = run_tune("status quick --storage " + storage + " --json");
    if (answer.exit_code == 0) status = Json::parse(answer.out)["status"];
    if (status != "FINISHED") std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(status, "FINISHED");
  EXPECT_EQ(run_command("kill -TERM $(cat " + dir.file("pid") + ")").exit_code, 0) << "tune had already exited";
  run_command("timeout 60 cat " + fifo + " >/dev/null");  // lets it finish
  for (int i = 0; i < 600 && read(dir.file("rc")).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string stored = Json::parse(run_tune("status quick --storage " + storage + " --json").out)["status"];
  EXPECT_EQ(stored, "FINISHED");
  EXPECT_EQ(read(dir.file("rc")), "0\n") << "the exit status says interrupted, the store finished: "
                                         << read(dir.file("err"));
}

}  // namespace
}  // namespace tune
