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

}  // namespace tune::storage_internal
