// Schema v1 and the migration framework. Each step takes the database from
// version N to N+1; all pending steps run in one transaction at open, so a
// crash mid-migration leaves the old schema intact. docs/SCHEMA.md documents
// every table and column; keep the two in step.
#include "storage/internal/schema.h"

#include <SQLiteCpp/SQLiteCpp.h>

#include <string>
#include <vector>

#include "storage/internal/rows.h"
#include "storage/store.h"
#include "base/error.h"

namespace tune::storage_internal {
namespace {

// Foreign keys cascade so `DELETE FROM experiments WHERE name = ...` (with
// PRAGMA foreign_keys=ON) removes everything belonging to it. Tables are not
// STRICT so older sqlite3 shells can still read the file.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT
);

CREATE TABLE experiments (
  id              INTEGER PRIMARY KEY,
  name            TEXT UNIQUE NOT NULL,
  status          TEXT,
  metric          TEXT,
  mode            TEXT,
  spec_json       TEXT,
  spec_source     TEXT,
  searcher_state  TEXT,
  scheduler_state TEXT,
  created_at      REAL,
  updated_at      REAL
);

CREATE TABLE trials (
  id               INTEGER PRIMARY KEY,
  experiment_id    INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
  trial_index      INTEGER NOT NULL,
  status           TEXT NOT NULL,
  config_json      TEXT,
  attempts         INTEGER NOT NULL DEFAULT 0,
  error            TEXT,
  last_iteration   INTEGER NOT NULL DEFAULT 0,
  last_result_json TEXT,
  created_at       REAL,
  started_at       REAL,
  ended_at         REAL,
  UNIQUE (experiment_id, trial_index)
);

CREATE TABLE params (
  trial_id   INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  name       TEXT NOT NULL,
  value_json TEXT,
  value_real REAL,
  value_text TEXT,
  PRIMARY KEY (trial_id, name)
) WITHOUT ROWID;
CREATE INDEX params_by_name ON params(name);

CREATE TABLE results (
  id           INTEGER PRIMARY KEY,
  trial_id     INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  iteration    INTEGER NOT NULL,
  attempt      INTEGER NOT NULL DEFAULT 0,
  time         REAL,
  metrics_json TEXT
);
CREATE INDEX results_by_trial ON results(trial_id, iteration);

CREATE TABLE checkpoints (
  id         INTEGER PRIMARY KEY,
  trial_id   INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  iteration  INTEGER NOT NULL,
  path       TEXT NOT NULL,
  score      REAL,
  deleted    INTEGER NOT NULL DEFAULT 0,
  created_at REAL
);
CREATE INDEX checkpoints_by_trial ON checkpoints(trial_id);

CREATE TABLE events (
  id            INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
  trial_id      INTEGER REFERENCES trials(id) ON DELETE CASCADE,
  time          REAL,
  kind          TEXT NOT NULL,
  detail_json   TEXT
);
CREATE INDEX events_by_experiment ON events(experiment_id, time);
CREATE INDEX events_by_trial ON events(trial_id);

CREATE TABLE exploits (
  id              INTEGER PRIMARY KEY,
  trial_id        INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  donor_trial_id  INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  iteration       INTEGER NOT NULL,
  donor_iteration INTEGER,
  checkpoint_path TEXT,
  old_config_json TEXT,
  new_config_json TEXT,
  time            REAL
);
CREATE INDEX exploits_by_trial ON exploits(trial_id);

CREATE VIEW trial_summary AS
SELECT e.name AS experiment, t.id AS trial_id, t.trial_index, t.status, t.attempts,
       t.config_json, t.last_iteration, t.last_result_json, t.error,
       t.started_at, t.ended_at
FROM trials t JOIN experiments e ON e.id = t.experiment_id;

CREATE VIEW result_metrics AS
SELECT r.id AS result_id, e.name AS experiment, t.trial_index, r.trial_id,
       r.iteration, r.attempt, r.time, m.key AS name, m.value AS value
FROM results r
JOIN trials t ON t.id = r.trial_id
JOIN experiments e ON e.id = t.experiment_id,
     json_each(r.metrics_json) m
WHERE m.key IS NOT NULL;
)sql";

using Step = void (*)(SQLite::Database&);

void to_v1(SQLite::Database& db) { db.exec(kSchemaV1); }

// v2: the lease that makes one driver the only one running an experiment.
void to_v2(SQLite::Database& db) {
  db.exec(R"sql(
CREATE TABLE driver_leases (
  experiment_id INTEGER PRIMARY KEY REFERENCES experiments(id) ON DELETE CASCADE,
  host          TEXT NOT NULL,
  pid           INTEGER NOT NULL,
  started_at    REAL NOT NULL,
  heartbeat_at  REAL NOT NULL
);
)sql");
}

// v3: a scheduler's state saved by parts (ASHA's rungs grow with every trial:
// each save appends what was added since the previous one, rather than
// rewriting the whole state). experiments.scheduler_state is the first part.
// And params_by_name goes: every new trial paid ~25k instructions for it (3
// params), and the by-name queries of docs/SCHEMA.md took as long without it
// (122 vs 124 ms at 100,000 trials x 5 params: they join every match anyway).
void to_v3(SQLite::Database& db) {
  db.exec(R"sql(
CREATE TABLE scheduler_state_parts (
  id            INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
  state_json    TEXT NOT NULL,
  created_at    REAL
);
CREATE INDEX scheduler_state_parts_by_experiment ON scheduler_state_parts(experiment_id);
DROP INDEX IF EXISTS params_by_name;
)sql");
}

// kMigrations[N] takes the schema from version N to N+1.
const std::vector<Step> kMigrations = {to_v1, to_v2, to_v3};

void set_meta(SQLite::Database& db, const char* key, const std::string& value) {
  SQLite::Statement s(db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
  s.bind(1, key);
  s.bind(2, value);
  s.exec();
}

}  // namespace

int user_version(SQLite::Database& db) { return db.execAndGet("PRAGMA user_version").getInt(); }

std::string newer_schema_message(const std::string& dir, int version) {
  return "store " + dir + " was written by a newer tune (schema v" + std::to_string(version) +
         ", this build understands v" + std::to_string(kSchemaVersion) + ")";
}

void migrate(SQLite::Database& db, const std::string& dir, const std::string& path) {
  static_assert(kSchemaVersion >= 1, "kMigrations must cover every version");
  if (kMigrations.size() != static_cast<size_t>(kSchemaVersion)) {
    throw Error("internal error: store has " + std::to_string(kMigrations.size()) +
                " migrations for schema v" + std::to_string(kSchemaVersion));
  }
  if (user_version(db) == kSchemaVersion) return;  // the common case: no write lock

  SQLite::Transaction txn(db, SQLite::TransactionBehavior::IMMEDIATE);
  // Re-read under the write lock: another process may have migrated meanwhile.
  int version = user_version(db);
  if (version == kSchemaVersion) return;
  if (version > kSchemaVersion) throw Error(newer_schema_message(dir, version));
  if (version == 0) {
    int tables = db.execAndGet("SELECT count(*) FROM sqlite_master").getInt();
    if (tables > 0) {
      throw Error(path + " is not a tune store (an SQLite database with other tables)");
    }
  }
  for (int v = version; v < kSchemaVersion; ++v) kMigrations[v](db);
  set_meta(db, "created_by", "tune");
  set_meta(db, "schema_version", std::to_string(kSchemaVersion));
  if (version == 0) set_meta(db, "created_at", std::to_string(now()));
  // PRAGMA takes no bound parameters; the value is a compile-time integer.
  db.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
  txn.commit();
}

void check_store(SQLite::Database& db, const std::string& dir, const std::string& path) {
  // One read snapshot for every check: a driver creating the store commits
  // its schema and user_version together, and a reader that read them in
  // separate snapshots could see version 0 and then the tables, which reads
  // as a foreign database.
  SQLite::Transaction snapshot(db, SQLite::TransactionBehavior::DEFERRED);
  int version = user_version(db);
  if (version > kSchemaVersion) throw Error(newer_schema_message(dir, version));
  if (version == 0 && db.execAndGet("SELECT count(*) FROM sqlite_master").getInt() == 0) {
    // An empty database: a driver has just created tune.db and not yet
    // committed the schema (or never will). Either way nothing is stored yet.
    throw Error("no tune store at " + dir + " yet (tune.db is empty: a driver is creating it)");
  }
  if (version == 0 || !db.tableExists("meta")) {
    throw Error(path + " is not a tune store (no tune schema)");
  }
  // Read-only, an older schema is fine back to kOldestReadable: v2 only
  // added driver_leases, which queries never read (writers migrate first).
  constexpr int kOldestReadable = 1;
  if (version < kOldestReadable) {
    throw Error("store " + dir + " has schema v" + std::to_string(version) +
                "; open it once read-write with this tune to upgrade it to v" +
                std::to_string(kSchemaVersion));
  }
  SQLite::Statement s(db, "SELECT value FROM meta WHERE key = 'created_by'");
  if (!s.executeStep() || s.getColumn(0).getString() != "tune") {
    throw Error(path + " is not a tune store (meta.created_by is not 'tune')");
  }
  snapshot.commit();
}

}  // namespace tune::storage_internal
