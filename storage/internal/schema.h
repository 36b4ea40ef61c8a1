// Schema creation and migration for the SQLite store (docs/SCHEMA.md).
#pragma once

#include <string>

namespace SQLite {
class Database;
}

namespace tune::storage_internal {

int user_version(SQLite::Database& db);

// Brings a writable database up to kSchemaVersion in one IMMEDIATE
// transaction. `dir` and `path` (the file) name the store in error messages.
// Throws tune::Error if the file holds another application's tables or a
// newer schema.
void migrate(SQLite::Database& db, const std::string& dir, const std::string& path);

// Throws tune::Error unless `db` is a tune store at exactly kSchemaVersion
// (read-only opens cannot migrate, so an older schema is refused there).
void check_store(SQLite::Database& db, const std::string& dir, const std::string& path);

// The one-line message for a schema newer than this build.
std::string newer_schema_message(const std::string& dir, int version);

}  // namespace tune::storage_internal
