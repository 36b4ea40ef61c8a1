// Store::open: schema versioning, refusing foreign files, WAL and the views.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <linux/magic.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/internal/sqlite_store.h"
#include "storage/store.h"
#include "test_util.h"
#include "base/error.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using tune::testing::TempDir;

std::string open_error(const std::string& dir, bool read_only = false) {
  try {
    Store::open(dir, read_only);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

ExperimentRecord named(const std::string& name) {
  ExperimentRecord e;
  e.name = name;
  e.status = "RUNNING";
  return e;
}

TEST(StoreOpen, CreatesTheDirectoryAndReportsTheSchemaVersion) {
  TempDir tmp;
  std::string dir = tmp.file("a/b/results");
  EXPECT_FALSE(Store::exists(dir));
  auto store = Store::open(dir);
  EXPECT_TRUE(Store::exists(dir));
  EXPECT_EQ(Store::database_path(dir), dir + "/tune.db");
  EXPECT_EQ(store->schema_version(), kSchemaVersion);

  SQLite::Database db(Store::database_path(dir));
  EXPECT_EQ(db.execAndGet("PRAGMA user_version").getInt(), kSchemaVersion);
  EXPECT_EQ(db.execAndGet("SELECT value FROM meta WHERE key='schema_version'").getString(),
            std::to_string(kSchemaVersion));
  EXPECT_EQ(db.execAndGet("SELECT value FROM meta WHERE key='created_by'").getString(), "tune");
  EXPECT_EQ(db.execAndGet("PRAGMA journal_mode").getString(), "wal");
}

TEST(StoreOpen, SetsTheConnectionPragmas) {
  TempDir tmp;
  auto normal = Store::open(tmp.path());
  SQLite::Database& db = storage_internal::raw_database(*normal);
  EXPECT_EQ(db.execAndGet("PRAGMA synchronous").getInt(), 1);  // NORMAL
  EXPECT_EQ(db.execAndGet("PRAGMA foreign_keys").getInt(), 1);
  EXPECT_EQ(db.execAndGet("PRAGMA busy_timeout").getInt(), 30000);
  // FAST, not Debian's default of 1: freed pages are not zeroed and written.
  EXPECT_EQ(db.execAndGet("PRAGMA secure_delete").getInt(), 2);
  auto full = Store::open(tmp.path(), false, Durability::kFull);
  EXPECT_EQ(storage_internal::raw_database(*full).execAndGet("PRAGMA synchronous").getInt(), 2);
}

// SQLite's write-ahead log needs one machine's shared memory: on a network
// filesystem tune writes with the rollback journal. The kernel's own magic
// numbers (linux/magic.h) are the oracle for which filesystems those are.
TEST(StoreJournal, NetworkFilesystemsAreKnownByTheKernelsMagicNumbers) {
  for (int64_t network : std::initializer_list<int64_t>{NFS_SUPER_MAGIC, SMB_SUPER_MAGIC, CIFS_SUPER_MAGIC, SMB2_SUPER_MAGIC, AFS_SUPER_MAGIC,
                          AFS_FS_MAGIC, CODA_SUPER_MAGIC, CEPH_SUPER_MAGIC, V9FS_MAGIC, OCFS2_SUPER_MAGIC,
                          FUSE_SUPER_MAGIC})
    EXPECT_TRUE(storage_internal::network_filesystem(network)) << std::hex << network;
  for (int64_t local : std::initializer_list<int64_t>{EXT4_SUPER_MAGIC, TMPFS_MAGIC, XFS_SUPER_MAGIC, BTRFS_SUPER_MAGIC, OVERLAYFS_SUPER_MAGIC,
                        RAMFS_MAGIC, SQUASHFS_MAGIC})
    EXPECT_FALSE(storage_internal::network_filesystem(local)) << std::hex << local;
}

// A local folder keeps the WAL; TUNE_STORE_JOURNAL chooses either for a
// filesystem tune does not recognise, and a bad value is refused before the
// store's folder is made. Reopened without it, a rollback store is WAL again.
TEST(StoreJournal, ALocalFolderKeepsTheWalAndTheEnvironmentChoosesOtherwise) {
  TempDir tmp;
  struct Unset {
    ~Unset() { ::unsetenv("TUNE_STORE_JOURNAL"); }
  } unset;
  EXPECT_EQ(storage_internal::store_journal(tmp.path()), "wal");
  ::setenv("TUNE_STORE_JOURNAL", "rollback", 1);
  EXPECT_EQ(storage_internal::store_journal(tmp.path()), "truncate");
  {
    auto store = Store::open(tmp.file("rollback"));
    SQLite::Database& db = storage_internal::raw_database(*store);
    EXPECT_EQ(db.execAndGet("PRAGMA journal_mode").getString(), "truncate");
    store->checkpoint_in_background(std::chrono::milliseconds(1000));  // nothing to copy: no thread
    Transaction txn(*store);
    store->create_experiment(named("exp"));
    txn.commit();
    EXPECT_FALSE(fs::exists(tmp.file("rollback/tune.db-wal")));
    EXPECT_FALSE(fs::exists(tmp.file("rollback/tune.db-shm")));
  }
  ::setenv("TUNE_STORE_JOURNAL", "wal", 1);
  EXPECT_EQ(storage_internal::store_journal(tmp.path()), "wal");
  ::setenv("TUNE_STORE_JOURNAL", "fast", 1);
  EXPECT_THAT(open_error(tmp.file("never")), HasSubstr("TUNE_STORE_JOURNAL must be wal or rollback, got 'fast'"));
  EXPECT_FALSE(fs::exists(tmp.file("never")));
  ::unsetenv("TUNE_STORE_JOURNAL");
  auto reopened = Store::open(tmp.file("rollback"));
  EXPECT_EQ(storage_internal::raw_database(*reopened).execAndGet("PRAGMA journal_mode").getString(), "wal");
  EXPECT_TRUE(reopened->find_experiment("exp").has_value());
}

TEST(StoreOpen, ReopeningPreservesEverything) {
  TempDir tmp;
  int64_t trial;
  {
    auto store = Store::open(tmp.path());
    int64_t exp = store->create_experiment(named("exp"));
    trial = store->add_trial(exp, 0, {{"lr", 0.1}});
    store->add_result(trial, 1, 0, {{"loss", 0.5}}, 1.0);
    store->add_checkpoint(trial, 1, "/ck", 0.5, 1.0);
  }
  auto store = Store::open(tmp.path());
  auto exp = store->find_experiment("exp");
  ASSERT_TRUE(exp);
  auto trials = store->trials(exp->id);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].config, Json({{"lr", 0.1}}));
  EXPECT_EQ(trials[0].last_result, Json({{"loss", 0.5}}));
  EXPECT_EQ(store->results(trial).size(), 1u);
  EXPECT_EQ(store->checkpoints(trial).size(), 1u);
}

// A v2 store (before scheduler_state_parts) is read as it is, and upgraded
// in place, its rows kept, when opened for writing.
TEST(StoreOpen, AVersion2StoreIsReadAndUpgradedInPlace) {
  TempDir tmp;
  {
    auto store = Store::open(tmp.path());
    int64_t exp = store->create_experiment(named("exp"));
    store->set_scheduler_state(exp, {{"added", 3}});
  }
  {
    SQLite::Database db((fs::path(tmp.path()) / "tune.db").string(), SQLite::OPEN_READWRITE);
    db.exec("DROP TABLE scheduler_state_parts; CREATE INDEX params_by_name ON params(name); PRAGMA user_version = 2");
  }
  auto reader = Store::open(tmp.path(), /*read_only=*/true);
  EXPECT_EQ(reader->schema_version(), 2);
  EXPECT_EQ(reader->find_experiment("exp")->scheduler_state, Json({{"added", 3}}));
  reader.reset();
  auto store = Store::open(tmp.path());
  EXPECT_EQ(store->schema_version(), 3);
  auto exp = store->find_experiment("exp");
  EXPECT_EQ(exp->scheduler_state, Json({{"added", 3}}));
  EXPECT_TRUE(store->scheduler_state_parts(exp->id).empty());
  store->add_scheduler_state_part(exp->id, {{"added", 4}});
  EXPECT_EQ(store->scheduler_state_parts(exp->id), std::vector<Json>{Json({{"added", 4}})});
  store.reset();
  SQLite::Database db((fs::path(tmp.path()) / "tune.db").string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM sqlite_master WHERE name = 'params_by_name'").getInt(), 0)
      << "v3 drops the index on params(name)";
}

// Which indexes a new store has: each one costs every insert into its table
// (params_by_name cost a new trial ~25k instructions for 3 params), so one
// more is a decision, not an accident.
TEST(StoreOpen, ANewStoreHasTheIndexesItNeedsAndNoOthers) {
  TempDir tmp;
  Store::open(tmp.path());
  SQLite::Database db((fs::path(tmp.path()) / "tune.db").string(), SQLite::OPEN_READONLY);
  std::vector<std::string> indexes;
  SQLite::Statement q(db, "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name");
  while (q.executeStep()) indexes.push_back(q.getColumn(0).getString());
  EXPECT_EQ(indexes, (std::vector<std::string>{"checkpoints_by_trial", "events_by_experiment", "events_by_trial",
                                               "exploits_by_trial", "results_by_trial",
                                               "scheduler_state_parts_by_experiment"}));
}

TEST(StoreOpen, ANewerSchemaIsRefusedWithoutBeingTouched) {
  TempDir tmp;
  Store::open(tmp.path());
  {
    SQLite::Database db(Store::database_path(tmp.path()), SQLite::OPEN_READWRITE);
    db.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  }
  std::string expected = "store " + tmp.path() + " was written by a newer tune (schema v" +
                         std::to_string(kSchemaVersion + 1) + ", this build understands v" +
                         std::to_string(kSchemaVersion) + ")";
  EXPECT_EQ(open_error(tmp.path()), expected);
  EXPECT_EQ(open_error(tmp.path(), /*read_only=*/true), expected);
  SQLite::Database db(Store::database_path(tmp.path()));
  EXPECT_EQ(db.execAndGet("PRAGMA user_version").getInt(), kSchemaVersion + 1);
}

TEST(StoreOpen, AFileThatIsNotSqliteIsRefused) {
  TempDir tmp;
  tmp.write("tune.db", std::string(4096, 'x') + "\nthis is not a database\n");
  std::string message = open_error(tmp.path());
  EXPECT_THAT(message, HasSubstr("is not a tune store"));
  EXPECT_THAT(message, HasSubstr("tune.db"));
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_THAT(open_error(tmp.path(), true), HasSubstr("is not a tune store"));

  TempDir small;
  small.write("tune.db", "hello\n");
  EXPECT_THAT(open_error(small.path()), HasSubstr("is not a tune store"));
}

TEST(StoreOpen, AnotherApplicationsDatabaseIsRefused) {
  TempDir tmp;
  {
    SQLite::Database db(Store::database_path(tmp.path()),
                        SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("CREATE TABLE photos (id INTEGER PRIMARY KEY)");
  }
  EXPECT_THAT(open_error(tmp.path()), HasSubstr("is not a tune store"));
  EXPECT_THAT(open_error(tmp.path(), true), HasSubstr("is not a tune store"));
}

// A reader that comes between a driver creating tune.db and committing its
// schema sees an empty database: not yet a store (like a missing one), not a
// foreign file. A writer then makes it a store as usual.
TEST(StoreOpen, AnEmptyDatabaseReadsAsAStoreNotCreatedYet) {
  TempDir tmp;
  tmp.write("tune.db", "");
  EXPECT_EQ(open_error(tmp.path(), true),
            "no tune store at " + tmp.path() + " yet (tune.db is empty: a driver is creating it)");
  {
    SQLite::Database db(Store::database_path(tmp.path()), SQLite::OPEN_READWRITE);
    db.exec("PRAGMA journal_mode = WAL");  // what the driver does first
  }
  EXPECT_THAT(open_error(tmp.path(), true), HasSubstr("yet (tune.db is empty"));
  auto store = Store::open(tmp.path());
  EXPECT_FALSE(store->find_experiment("x").has_value());
  EXPECT_NO_THROW(Store::open(tmp.path(), true));
}

// The same race for real, bounded in count and time: readers (the CLI, the
// report) polling a store a driver is creating see "no store yet" or the
// store, and never "not a tune store" (the schema's commit falling between
// the reader's reads of its version and of its tables).
TEST(StoreOpen, AReaderRacingTheStoresCreationSeesNoStoreYetOrTheStore) {
  TempDir tmp;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  std::vector<std::string> wrong;
  int rounds = 0, reader_opens = 0;
  for (; rounds < 300 && std::chrono::steady_clock::now() < deadline; ++rounds) {
    const std::string dir = tmp.file("s" + std::to_string(rounds));
    fs::create_directories(dir);
    std::atomic<bool> created{false};
    std::thread reader([&] {
      for (;;) {
        const bool writer_done = created.load();
        ++reader_opens;
        const std::string error = open_error(dir, true);
        if (error == "(no error)") return;
        const bool not_yet = error.find("no tune store at " + dir) == 0;
        if (!not_yet || writer_done) {
          wrong.push_back(error);
          return;
        }
      }
    });
    Store::open(dir);
    created = true;
    reader.join();
  }
  EXPECT_THAT(wrong, ::testing::IsEmpty()) << "after " << rounds << " stores";
  EXPECT_GT(reader_opens, rounds);  // the reader did poll while stores were made
}

TEST(StoreOpen, ReadOnlyOpenOfAMissingStoreFailsAndCreatesNothing) {
  TempDir tmp;
  std::string dir = tmp.file("missing");
  EXPECT_EQ(open_error(dir, true), "no tune store at " + dir + " (tune.db not found)");
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(open_error(tmp.path(), true),
            "no tune store at " + tmp.path() + " (tune.db not found)");
  EXPECT_FALSE(fs::exists(tmp.file("tune.db")));
}

TEST(StoreOpen, ReadOnlyStoreReadsButCannotWrite) {
  TempDir tmp;
  Store::open(tmp.path())->create_experiment(named("exp"));
  auto reader = Store::open(tmp.path(), /*read_only=*/true);
  EXPECT_EQ(reader->schema_version(), kSchemaVersion);
  EXPECT_TRUE(reader->find_experiment("exp"));
  EXPECT_THROW(reader->create_experiment(named("other")), Error);
  reader->begin();  // a read snapshot
  EXPECT_EQ(reader->experiments().size(), 1u);
  reader->commit();
}

TEST(StoreWal, AReaderSeesCommittedDataWhileTheWriterHoldsATransaction) {
  TempDir tmp;
  auto writer = Store::open(tmp.path());
  int64_t exp = writer->create_experiment(named("exp"));
  int64_t trial = writer->add_trial(exp, 0, Json::object());
  writer->add_result(trial, 1, 0, {{"loss", 1.0}}, 1.0);

  writer->begin();
  writer->add_result(trial, 2, 0, {{"loss", 0.5}}, 2.0);
  writer->set_trial_status(trial, kRunning, 2.0);

  auto start = std::chrono::steady_clock::now();
  auto reader = Store::open(tmp.path(), /*read_only=*/true);
  EXPECT_EQ(reader->results(trial).size(), 1u);
  EXPECT_EQ(reader->trial(exp, 0)->status, kPending);
  EXPECT_EQ(reader->trial(exp, 0)->last_iteration, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2))
      << "the reader must not wait for the writer's lock";

  writer->commit();
  EXPECT_EQ(reader->results(trial).size(), 2u);
  EXPECT_EQ(reader->trial(exp, 0)->status, kRunning);
}

class StoreViews : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::open(tmp.path());
    int64_t exp = store->create_experiment(named("exp"));
    for (int i = 0; i < 2; ++i) {
      int64_t trial = store->add_trial(exp, i, {{"lr", 0.1 * (i + 1)}});
      store->set_trial_status(trial, kRunning, 1.0);
      for (int it = 1; it <= 3; ++it) {
        store->add_result(trial, it, 0, {{"loss", 1.0 / (it + i)}, {"acc", 0.1 * it}}, it);
      }
      store->set_trial_status(trial, kTerminated, 5.0);
    }
  }
  TempDir tmp;
};

TEST_F(StoreViews, TrialSummaryJoinsTheExperimentName) {
  SQLite::Database db(Store::database_path(tmp.path()));
  SQLite::Statement q(db,
                      "SELECT experiment, trial_index, status, last_iteration,"
                      " json_extract(last_result_json, '$.loss') FROM trial_summary"
                      " ORDER BY trial_index");
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getString(), "exp");
  EXPECT_EQ(q.getColumn(1).getInt(), 0);
  EXPECT_EQ(q.getColumn(2).getString(), "TERMINATED");
  EXPECT_EQ(q.getColumn(3).getInt(), 3);
  EXPECT_DOUBLE_EQ(q.getColumn(4).getDouble(), 1.0 / 3);
  ASSERT_TRUE(q.executeStep());
  EXPECT_FALSE(q.executeStep());
}

TEST_F(StoreViews, ResultMetricsHasOneRowPerMetric) {
  SQLite::Database db(Store::database_path(tmp.path()));
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM result_metrics").getInt(), 12);
  SQLite::Statement q(db,
                      "SELECT experiment, trial_index, iteration, value FROM result_metrics"
                      " WHERE name = 'loss' AND trial_index = 1 ORDER BY iteration");
  for (int it = 1; it <= 3; ++it) {
    ASSERT_TRUE(q.executeStep());
    EXPECT_EQ(q.getColumn(0).getString(), "exp");
    EXPECT_EQ(q.getColumn(1).getInt(), 1);
    EXPECT_EQ(q.getColumn(2).getInt(), it);
    EXPECT_DOUBLE_EQ(q.getColumn(3).getDouble(), 1.0 / (it + 1));
  }
  EXPECT_FALSE(q.executeStep());
}

TEST_F(StoreViews, BestTrialQueryFromTheDocsWorks) {
  SQLite::Database db(Store::database_path(tmp.path()));
  SQLite::Statement q(db,
                      "SELECT t.trial_index, json_extract(r.metrics_json, '$.loss') AS loss"
                      " FROM results r JOIN trials t ON t.id = r.trial_id"
                      " ORDER BY loss ASC LIMIT 1");
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getInt(), 1);
  EXPECT_DOUBLE_EQ(q.getColumn(1).getDouble(), 0.25);
}

// What SQLite has copied back from the WAL: the database file's own size,
// against the size the committed pages make (read through the WAL).
struct FileAndPages {
  uintmax_t file_bytes;
  int64_t committed_bytes;
};
FileAndPages sizes(const std::string& dir) {
  const std::string path = Store::database_path(dir);
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  const int64_t pages = db.execAndGet("PRAGMA page_count").getInt64();
  const int64_t page_size = db.execAndGet("PRAGMA page_size").getInt64();
  return {fs::file_size(path), pages * page_size};
}

// The driver's store checkpoints on a thread of its own. Sized below SQLite's
// own threshold (1,000 WAL pages), where no commit would checkpoint: only that
// thread can have copied the pages back.
TEST(StoreCheckpoints, AThreadOfTheStoresCopiesTheWalBackWithoutTheCommits) {
  for (const bool background : {false, true}) {
    TempDir dir;
    auto store = Store::open(dir.path());
    if (background) store->checkpoint_in_background();
    const int64_t experiment = store->create_experiment(named(background ? "background" : "commits"));
    const int64_t trial = store->add_trial(experiment, 0, {{"x", 1}});
    for (int i = 1; i <= 150; ++i) {
      Transaction txn(*store);
      store->add_result(trial, i, 1, {{"loss", 1.0 / i}, {"pad", std::string(600, 'x')}}, i);
      txn.commit();
    }
    FileAndPages now = sizes(dir.path());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (background && static_cast<int64_t>(now.file_bytes) < now.committed_bytes &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      now = sizes(dir.path());
    }
    EXPECT_GT(now.committed_bytes, 20 * 4096) << "the rows should fill pages";
    if (background) {
      EXPECT_EQ(static_cast<int64_t>(now.file_bytes), now.committed_bytes) << "the WAL was not copied back";
    } else {
      EXPECT_LT(static_cast<int64_t>(now.file_bytes), now.committed_bytes) << "the commits checkpointed";
    }
    // Writes go on after it, and the store closes with its thread stopped.
    Transaction txn(*store);
    store->add_result(trial, 151, 1, {{"loss", 0.0}}, 151);
    txn.commit();
    store.reset();
    EXPECT_EQ(Store::open(dir.path(), /*read_only=*/true)->results(trial).size(), 151u);
  }
}

// A writer that commits without a pause never begins with the whole WAL
// copied, so the WAL could not start over until it reached the frames where a
// commit copies it itself (~256 MiB). Once the WAL holds 2,000 frames and
// started over at least `restart_every` ago, the first commit after one of the
// thread's copies copies the few frames written during it, and the WAL starts
// over. ~3 frames a commit (a page of its own, the index, the header page):
// 4,000 commits write ~12,000.
uintmax_t longest_wal_frames(std::chrono::milliseconds restart_every) {
  TempDir dir;
  auto store = Store::open(dir.path());
  store->checkpoint_in_background(restart_every);
  const int64_t experiment = store->create_experiment(named("busy"));
  const int64_t trial = store->add_trial(experiment, 0, {{"x", 1}});
  const std::string wal = Store::database_path(dir.path()) + "-wal";
  constexpr uintmax_t kFrameBytes = 4096 + 24;
  for (int i = 1; i <= 4000; ++i) {
    Transaction txn(*store);
    store->append_result(trial, i, 1, {{"loss", 1.0 / i}, {"pad", std::string(3000, 'x')}}, i);
    txn.commit();
  }
  const uintmax_t frames = fs::file_size(wal) / kFrameBytes;  // the WAL file keeps the size of the longest WAL
  store.reset();
  EXPECT_EQ(Store::open(dir.path(), /*read_only=*/true)->results(trial).size(), 4000u);
  return frames;
}

// Due at once: the WAL starts over near 2,000 frames (9,000: room for a thread
// descheduled on a loaded box; without the commit's copy it reached 12,000).
TEST(StoreCheckpoints, AWriterThatNeverPausesStillStartsTheWalOver) {
  const uintmax_t frames = longest_wal_frames(std::chrono::milliseconds(0));
  EXPECT_LT(frames, 9000u) << "the WAL grew to " << frames << " frames before it started over";
}

// Each start over stalls one commit for the copy's syncs and the next for the
// new header's: no more often than `restart_every` (here never within the
// test), the WAL holding all ~12,000 frames instead.
TEST(StoreCheckpoints, TheWalStartsOverNoMoreOftenThanAsked) {
  const uintmax_t frames = longest_wal_frames(std::chrono::hours(1));
  EXPECT_GT(frames, 11000u) << "the WAL started over at " << frames << " frames";
}

struct SyncCountingState {
  std::mutex mutex;
  std::thread::id writer;
  int64_t unsynced = 0;             // pages other threads wrote to the database since its last sync
  int64_t largest_writer_sync = 0;  // the most of those a sync on the writer's thread had to write
  int64_t other_syncs = 0;          // syncs of the database on other threads
  bool full = false;                // the disk is full: writes to the WAL fail
  int64_t other_writes_while_full = 0;  // database writes by other threads meanwhile
};

// A VFS over SQLite's default one that counts, for the main database file,
// the pages other threads than the test's own (the writer's) wrote since its
// last sync, and records how many of them a sync on the writer's thread had to
// write, and how many syncs other threads made. fill_disk(): writes to the WAL
// fail with SQLITE_FULL from then on, and database writes by other threads are
// counted apart. Default while it lives.
class SyncCountingVfs {
 public:
  SyncCountingVfs() {
    base_ = sqlite3_vfs_find(nullptr);
    vfs_ = *base_;
    vfs_.zName = "tune-sync-counting";
    vfs_.szOsFile = static_cast<int>(sizeof(File)) + base_->szOsFile;
    vfs_.pNext = nullptr;
    vfs_.xOpen = &open;
    methods_ = {};
    methods_.iVersion = 3;
    methods_.xClose = [](sqlite3_file* f) { return real(f)->pMethods->xClose(real(f)); };
    methods_.xRead = [](sqlite3_file* f, void* b, int n, sqlite3_int64 o) { return real(f)->pMethods->xRead(real(f), b, n, o); };
    methods_.xWrite = [](sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
      {
        std::lock_guard<std::mutex> lock(state_.mutex);
        if (self(f).main_db && std::this_thread::get_id() != state_.writer) {
          state_.unsynced += 1;  // a checkpoint writes a page a call
          if (state_.full) state_.other_writes_while_full += 1;
        }
        if (state_.full && !self(f).main_db) return SQLITE_FULL;
      }
      return real(f)->pMethods->xWrite(real(f), b, n, o);
    };
    methods_.xTruncate = [](sqlite3_file* f, sqlite3_int64 n) { return real(f)->pMethods->xTruncate(real(f), n); };
    methods_.xSync = [](sqlite3_file* f, int flags) {
      if (!self(f).main_db) return real(f)->pMethods->xSync(real(f), flags);
      int64_t before = 0;
      {
        std::lock_guard<std::mutex> lock(state_.mutex);
        before = state_.unsynced;
        if (std::this_thread::get_id() == state_.writer) {
          state_.largest_writer_sync = std::max(state_.largest_writer_sync, before);
        } else {
          state_.other_syncs += 1;
        }
      }
      const int rc = real(f)->pMethods->xSync(real(f), flags);
      std::lock_guard<std::mutex> lock(state_.mutex);
      state_.unsynced -= before;
      return rc;
    };
    methods_.xFileSize = [](sqlite3_file* f, sqlite3_int64* n) { return real(f)->pMethods->xFileSize(real(f), n); };
    methods_.xLock = [](sqlite3_file* f, int l) { return real(f)->pMethods->xLock(real(f), l); };
    methods_.xUnlock = [](sqlite3_file* f, int l) { return real(f)->pMethods->xUnlock(real(f), l); };
    methods_.xCheckReservedLock = [](sqlite3_file* f, int* r) { return real(f)->pMethods->xCheckReservedLock(real(f), r); };
    methods_.xFileControl = [](sqlite3_file* f, int op, void* a) { return real(f)->pMethods->xFileControl(real(f), op, a); };
    methods_.xSectorSize = [](sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); };
    methods_.xDeviceCharacteristics = [](sqlite3_file* f) { return real(f)->pMethods->xDeviceCharacteristics(real(f)); };
    methods_.xShmMap = [](sqlite3_file* f, int page, int size, int extend, void volatile** p) {
      return real(f)->pMethods->xShmMap(real(f), page, size, extend, p);
    };
    methods_.xShmLock = [](sqlite3_file* f, int offset, int n, int flags) { return real(f)->pMethods->xShmLock(real(f), offset, n, flags); };
    methods_.xShmBarrier = [](sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); };
    methods_.xShmUnmap = [](sqlite3_file* f, int del) { return real(f)->pMethods->xShmUnmap(real(f), del); };
    methods_.xFetch = [](sqlite3_file* f, sqlite3_int64 o, int n, void** p) { return real(f)->pMethods->xFetch(real(f), o, n, p); };
    methods_.xUnfetch = [](sqlite3_file* f, sqlite3_int64 o, void* p) { return real(f)->pMethods->xUnfetch(real(f), o, p); };
    state_.unsynced = state_.largest_writer_sync = state_.other_syncs = state_.other_writes_while_full = 0;
    state_.full = false;
    state_.writer = std::this_thread::get_id();
    EXPECT_EQ(sqlite3_vfs_register(&vfs_, /*makeDflt=*/1), SQLITE_OK);
  }
  ~SyncCountingVfs() { sqlite3_vfs_unregister(&vfs_); }

  int64_t largest_writer_sync() {
    std::lock_guard<std::mutex> lock(state_.mutex);
    return state_.largest_writer_sync;
  }
  int64_t other_syncs() {
    std::lock_guard<std::mutex> lock(state_.mutex);
    return state_.other_syncs;
  }
  void fill_disk() {
    std::lock_guard<std::mutex> lock(state_.mutex);
    state_.full = true;
  }
  int64_t other_writes_while_full() {
    std::lock_guard<std::mutex> lock(state_.mutex);
    return state_.other_writes_while_full;
  }

 private:
  struct File {
    sqlite3_file base;  // first: SQLite sees a File as an sqlite3_file
    bool main_db;
  };
  static File& self(sqlite3_file* f) { return *reinterpret_cast<File*>(f); }
  static sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<sqlite3_file*>(reinterpret_cast<File*>(f) + 1); }
  static int open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out) {
    const int rc = base_->xOpen(base_, name, real(f), flags, out);
    self(f).base.pMethods = rc == SQLITE_OK ? &methods_ : nullptr;
    self(f).main_db = (flags & SQLITE_OPEN_MAIN_DB) != 0;
    return rc;
  }
  static inline sqlite3_vfs* base_ = nullptr;
  static inline sqlite3_vfs vfs_{};
  static inline sqlite3_io_methods methods_{};
  static inline SyncCountingState state_;
};

// SQLite syncs the database only after a copy that reached the WAL's end,
// which a writer that never pauses never leaves the thread: the pages of its
// partial copies stayed unsynced until the commit that copies the rest (and
// starts the WAL over), whose sync then wrote them all, ~10 ms at 10,000
// results/s. The thread syncs them after each copy.
TEST(StoreCheckpoints, TheThreadSyncsWhatItCopiedSoNoCommitWritesItsPages) {
  SyncCountingVfs vfs;
  longest_wal_frames(std::chrono::milliseconds(0));  // the writer above: ~12,000 frames, several starts over
  EXPECT_GT(vfs.other_syncs(), 0) << "the thread never synced the database";
  // None but a copy's, should a commit's sync come between the thread's copy
  // and its sync (a copy of ~1,000 frames writes ~350 pages).
  EXPECT_LT(vfs.largest_writer_sync(), 400) << "a commit's sync wrote " << vfs.largest_writer_sync()
                                            << " pages the thread had copied";
}

// The room the store keeps for a stop's record (tune.db-reserve, freed when a
// write fails for want of space) is not the checkpoint thread's to fill: its
// copies grow the database file, and one that came between the failure and
// the record (its one-second look at a WAL with uncopied frames) took the
// space the INTERRUPTED status needed. Once a write failed so, it copies
// nothing more.
TEST(StoreCheckpoints, AfterTheDiskFillsTheThreadCopiesNothingMore) {
  SyncCountingVfs vfs;
  TempDir dir;
  auto store = Store::open(dir.path());
  store->checkpoint_in_background();
  const int64_t experiment = store->create_experiment(named("full"));
  const int64_t trial = store->add_trial(experiment, 0, {{"x", 1}});
  for (int i = 1; i <= 20; ++i) {  // frames the thread leaves for its one-second look
    Transaction txn(*store);
    store->append_result(trial, i, 1, {{"loss", 1.0 / i}}, i);
    txn.commit();
  }
  const std::string reserve = Store::database_path(dir.path()) + "-reserve";
  ASSERT_TRUE(fs::exists(reserve));
  vfs.fill_disk();
  EXPECT_THROW(
      {
        Transaction txn(*store);
        store->append_result(trial, 21, 1, {{"loss", 0.0}, {"pad", std::string(20000, 'x')}}, 21);
        txn.commit();
      },
      DiskFullError);
  EXPECT_FALSE(fs::exists(reserve)) << "the room for the stop's record was not freed";
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // two of the thread's looks
  EXPECT_EQ(vfs.other_writes_while_full(), 0) << "the thread copied into the database after the disk filled";
}

TEST(StoreCheckpoints, AReadOnlyStoreStartsNoThread) {
  TempDir dir;
  Store::open(dir.path())->create_experiment(named("x"));
  auto store = Store::open(dir.path(), /*read_only=*/true);
  store->checkpoint_in_background();  // nothing to copy from a reader: no-op
  EXPECT_EQ(store->experiments().size(), 1u);
}

}  // namespace
}  // namespace tune
