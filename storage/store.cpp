// Store::open: locate or create DIR/tune.db, set the connection up, migrate.
#include "storage/store.h"

#include <charconv>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include <sys/vfs.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "storage/internal/schema.h"
#include "storage/internal/sqlite_store.h"
#include "base/error.h"

namespace tune {

namespace fs = std::filesystem;
using namespace storage_internal;

std::string trial_folder_name(int64_t trial_index) {
  // "trial_%05lld" without printf's cost (it ran twice for every trial).
  if (trial_index < 0) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "trial_%05lld", static_cast<long long>(trial_index));
    return buffer;
  }
  char digits[24];
  char* end = std::to_chars(digits, digits + sizeof digits, trial_index).ptr;
  const size_t n = static_cast<size_t>(end - digits);
  const size_t zeros = n < 5 ? 5 - n : 0;
  std::string name = "trial_";
  name.append(zeros, '0');
  name.append(digits, n);
  return name;
}

std::string Store::database_path(const std::string& dir) {
  return (fs::path(dir) / "tune.db").string();
}

namespace storage_internal {

bool network_filesystem(int64_t f_type) {
  switch (static_cast<uint32_t>(f_type)) {
    case 0x6969:      // NFS_SUPER_MAGIC (linux/magic.h, as the rest unless said)
    case 0x517B:      // SMB_SUPER_MAGIC
    case 0xFF534D42:  // CIFS_SUPER_MAGIC
    case 0xFE534D42:  // SMB2_SUPER_MAGIC
    case 0x5346414F:  // AFS_SUPER_MAGIC
    case 0x6B414653:  // AFS_FS_MAGIC
    case 0x73757245:  // CODA_SUPER_MAGIC
    case 0x00C36400:  // CEPH_SUPER_MAGIC
    case 0x01021997:  // V9FS_MAGIC
    case 0x7461636F:  // OCFS2_SUPER_MAGIC
    case 0x65735546:  // FUSE_SUPER_MAGIC
    case 0x01161970:  // GFS2_MAGIC (linux/gfs2_ondisk.h)
    case 0x0BD00BD0:  // Lustre's LL_SUPER_MAGIC (lustre_user.h)
    case 0x47504653:  // GPFS ("GPFS")
    case 0x19830326:  // BeeGFS
    case 0xAAD7AAEA:  // PanFS
      return true;
    default:
      return false;
  }
}

namespace {

// TUNE_STORE_JOURNAL's journal, "" when unset.
std::string journal_from_environment() {
  const char* chosen = std::getenv("TUNE_STORE_JOURNAL");
  if (!chosen || !*chosen) return "";
  const std::string value = chosen;
  if (value == "wal") return "wal";
  if (value == "rollback") return "truncate";
  throw ConfigError("TUNE_STORE_JOURNAL must be wal or rollback, got '" + value + "'");
}

}  // namespace

std::string store_journal(const std::string& dir) {
  if (std::string chosen = journal_from_environment(); !chosen.empty()) return chosen;
  struct statfs about {};
  if (::statfs(dir.c_str(), &about) == 0 && network_filesystem(static_cast<int64_t>(about.f_type))) return "truncate";
  return "wal";
}

}  // namespace storage_internal

bool Store::exists(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(database_path(dir), ec);
}

std::unique_ptr<Store> Store::open(const std::string& dir, bool read_only, Durability durability) {
  const std::string path = database_path(dir);
  if (read_only) {
    if (!exists(dir)) throw Error("no tune store at " + dir + " (tune.db not found)");
  } else {
    journal_from_environment();  // a bad value is refused before anything is made
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (is_disk_full(ec)) throw DiskFullError("cannot create results directory " + dir + ": " + ec.message());
    if (ec) throw Error("cannot create results directory " + dir + ": " + ec.message());
  }
  std::unique_ptr<Store> store;
  try {
    store = open_sqlite_store(path, read_only);
  } catch (const SQLite::Exception& e) {
    throw Error("cannot open " + path + ": " + e.what());
  }
  int version;
  try {
    try {
      version = user_version(raw_database(*store));  // the first read: a non-SQLite file fails here
    } catch (const SQLite::Exception& e) {
      // A WAL store whose writer is gone (no -wal file, or an empty one) in a
      // folder this process may not write, or on a read-only mount: SQLite
      // cannot create the -shm it reads through and says "attempt to write a
      // readonly database" or "unable to open database file". With no writer
      // (a writer always has its -wal), reading the file as immutable is exact.
      const int code = e.getErrorCode();
      if (!read_only || (code != SQLITE_READONLY && code != SQLITE_CANTOPEN)) throw;
      std::error_code ec;
      const bool log_empty = !fs::exists(path + "-wal", ec) || fs::file_size(path + "-wal", ec) == 0;
      if (!log_empty) {
        throw Error("cannot read " + path + " here (" + e.what() + "): its write-ahead log " + path +
                    "-wal holds changes SQLite can read only with a " + path +
                    "-shm it may create; copy the folder somewhere writable, or let tune open it once where it can write");
      }
      store = open_sqlite_store(path, true, /*immutable=*/true);
      version = user_version(raw_database(*store));
    }
  } catch (const SQLite::Exception& e) {
    throw Error(path + " is not a tune store: " + e.what());
  }
  SQLite::Database& db = raw_database(*store);
  // Checked before anything is written, so a newer store is left untouched.
  if (version > kSchemaVersion) throw Error(newer_schema_message(dir, version));
  try {
    if (!read_only) {
      // synchronous=NORMAL in WAL: a commit survives a crash of the process,
      // not of the machine; FULL fsyncs every commit. On a network
      // filesystem the rollback journal (store_journal): readers on other
      // machines then read through the file locks, and a commit waits for
      // them. A store that another process holds open stays as it is.
      db.exec("PRAGMA journal_mode = " + store_journal(dir));
      db.exec(durability == Durability::kFull ? "PRAGMA synchronous = FULL"
                                              : "PRAGMA synchronous = NORMAL");
      db.exec("PRAGMA foreign_keys = ON");
      // Debian builds SQLite with secure_delete on: every page a delete or a
      // shrinking update frees is zeroed and written, so dropping PBT's
      // state parts (~10 MB) wrote ~20 MB of WAL and took ~90 ms. FAST
      // zeroes deleted content only in pages written anyway (SQLite's
      // docs): the same 1.3 MB and ~8 ms as off.
      db.exec("PRAGMA secure_delete = FAST");
      migrate(db, dir, path);
    }
    check_store(db, dir, path);
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() == SQLITE_FULL) throw DiskFullError("cannot open store " + dir + ": " + e.what());
    throw Error("cannot open store " + dir + ": " + e.what());
  }
  return store;
}

}  // namespace tune
