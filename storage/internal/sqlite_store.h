// The SQLite-backed Store behind Store::open, and a test hook to its
// connection (for checking per-connection PRAGMAs such as synchronous).
#pragma once

#include <SQLiteCpp/Database.h>

#include <memory>
#include <string>

#include "storage/store.h"

namespace tune::storage_internal {

// Opens the connection only (busy_timeout set); Store::open does the rest.
// `immutable` (read-only only): SQLite's immutable=1, for a WAL database no
// writer has open in a folder this process cannot write (no -shm to create).
std::unique_ptr<Store> open_sqlite_store(const std::string& path, bool read_only, bool immutable = false);

// Throws tune::Error if `store` was not made by Store::open.
SQLite::Database& raw_database(Store& store);

// Whether a filesystem (statfs's f_type) is one where SQLite's write-ahead
// log cannot be trusted: shared over a network or between machines (NFS,
// SMB, AFS, CephFS, 9p, OCFS2, GFS2, Lustre, GPFS, BeeGFS, PanFS) or FUSE
// (sshfs, GlusterFS, object-store mounts; some have no shared mmap at all).
// The WAL's index is shared memory of one machine, so a reader on another
// machine sees it torn (SQLite: "WAL does not work over a network
// filesystem"); the rollback journal works through the file locks.
bool network_filesystem(int64_t f_type);

// The journal a writer sets on the store in DIR: "wal" on a local disk,
// "truncate" (the rollback journal) on a network filesystem, or what the
// TUNE_STORE_JOURNAL environment variable says (wal | rollback; anything
// else is a ConfigError).
std::string store_journal(const std::string& dir);

}  // namespace tune::storage_internal
