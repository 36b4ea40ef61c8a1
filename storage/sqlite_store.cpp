// SqliteStore: Store on one SQLite connection (schema in schema.cpp and
// docs/SCHEMA.md). Statements are prepared once and cached; every statement
// is reset as soon as it has been used, because a SELECT left mid-step keeps a
// read snapshot (and in WAL, blocks checkpoints) open.
#include "storage/internal/sqlite_store.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include "storage/internal/result_queries.h"
#include "storage/internal/rows.h"
#include "storage/internal/schema.h"
#include "storage/internal/statements.h"
#include "storage/store.h"
#include "base/error.h"

namespace tune {
namespace {

using namespace storage_internal;

class SqliteStore final : public Store {
 public:
  SqliteStore(const std::string& path, bool read_only, bool immutable = false)
      : db_(immutable ? immutable_uri(path) : path,
            (read_only ? SQLite::OPEN_READONLY : SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE) |
                SQLite::OPEN_NOMUTEX | (immutable ? SQLite::OPEN_URI : 0),
            // A writer waits this long for another process's write lock. The
            // holders' transactions are short, but on a loaded machine (many
            // drivers on one store, 2 cores) a holder can be descheduled for
            // seconds; a driver that gave up would end its sweep.
            /*busy_timeout_ms=*/30000),
        read_only_(read_only),
        path_(path),
        reserve_path_(read_only ? "" : path + "-reserve") {
    keep_reserve();
  }

  ~SqliteStore() override {
    if (!checkpointer_.joinable()) return;
    sqlite3_wal_hook(db_.getHandle(), nullptr, nullptr);
    {
      std::lock_guard<std::mutex> lock(checkpoint_mutex_);
      stop_checkpoints_ = true;
    }
    checkpoint_wake_.notify_all();
    checkpointer_.join();  // before db_ closes: the last close checkpoints what is left
  }

  void checkpoint_in_background(std::chrono::milliseconds restart_every) override {
    if (read_only_ || checkpointer_.joinable()) return;
    {
      SQLite::Statement mode(db_, "PRAGMA journal_mode");
      if (!mode.executeStep() || mode.getColumn(0).getString() != "wal") return;  // the rollback journal: nothing to copy
    }
    restart_every_ = restart_every;
    wal_started_ = std::chrono::steady_clock::now();
    sqlite3* db = nullptr;
    // A connection sees the WAL once it has read the database: a read first.
    if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK ||
        sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", nullptr, nullptr, nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      return;  // the commits keep checkpointing, as by default
    }
    // Each commit tells the thread how many frames the WAL holds (a WAL hook,
    // in place of SQLite's auto-checkpoint).
    sqlite3_wal_hook(db_.getHandle(), &SqliteStore::on_commit, this);
    checkpointer_ = std::thread([this, db] { run_checkpoints(db); });
  }

  // file:PATH?immutable=1, with the characters a URI path reserves escaped.
  static std::string immutable_uri(const std::string& path) {
    std::string uri = "file:";
    for (const char c : path) {
      if (c == '%' || c == '?' || c == '#') {
        const char* hex = "0123456789ABCDEF";
        uri += '%';
        uri += hex[static_cast<unsigned char>(c) >> 4];
        uri += hex[static_cast<unsigned char>(c) & 15];
      } else {
        uri += c;
      }
    }
    return uri + "?immutable=1";
  }

  SQLite::Database& db() { return db_; }

  int schema_version() override {
    return guard("schema_version", [&] { return user_version(db_); });
  }

  void begin() override {
    guard("begin", [&] {
      // IMMEDIATE takes the write lock up front, so a batch never fails
      // half-way with SQLITE_BUSY; a read-only store just pins a snapshot.
      // Prepared once, like every statement: the driver opens a transaction
      // a turn, and parsing its text was a fifth of a commit.
      if (depth_ == 0) Use(stmt(read_only_ ? "BEGIN" : "BEGIN IMMEDIATE"))->exec();
      ++depth_;
    });
  }

  void commit() override {
    if (depth_ == 0) throw Error("store: commit() without a matching begin()");
    guard("commit", [&] {
      if (depth_ == 1) Use(stmt("COMMIT"))->exec();
      --depth_;  // only after COMMIT succeeded, so the caller can still roll back
    });
  }

  void rollback() override {
    int depth = depth_;
    depth_ = 0;
    // SQLite may already have rolled back on its own (e.g. disk full).
    if (depth > 0 && !sqlite3_get_autocommit(db_.getHandle())) {
      guard("rollback", [&] { db_.exec("ROLLBACK"); });
    }
  }

  int64_t create_experiment(const ExperimentRecord& e) override {
    try {
      Use s(stmt(kInsertExperiment));
      double created = e.created_at != 0 ? e.created_at : now();
      s->bind(1, e.name);
      s->bind(2, e.status);
      s->bind(3, e.metric);
      s->bind(4, e.mode);
      s->bind(5, dump(e.spec));
      s->bind(6, e.spec_source);
      bind_json_or_null(*s, 7, e.searcher_state);
      bind_json_or_null(*s, 8, e.scheduler_state);
      s->bind(9, created);
      s->bind(10, e.updated_at != 0 ? e.updated_at : created);
      s->exec();
      return db_.getLastInsertRowid();
    } catch (const SQLite::Exception& ex) {
      if (ex.getExtendedErrorCode() == SQLITE_CONSTRAINT_UNIQUE) {
        throw Error("experiment '" + e.name + "' already exists");
      }
      if (ex.getErrorCode() == SQLITE_FULL) throw DiskFullError(std::string("store: create_experiment: ") + ex.what());
      throw Error(std::string("store: create_experiment: ") + ex.what());
    }
  }

  std::optional<ExperimentRecord> find_experiment(const std::string& name) override {
    return guard("find_experiment", [&]() -> std::optional<ExperimentRecord> {
      Use s(stmt(kFindExperiment));
      s->bind(1, name);
      if (!s->executeStep()) return std::nullopt;
      return read_experiment(*s);
    });
  }

  std::vector<ExperimentRecord> experiments() override {
    return guard("experiments", [&] {
      std::vector<ExperimentRecord> out;
      Use s(stmt(kListExperiments));
      while (s->executeStep()) out.push_back(read_experiment(*s));
      return out;
    });
  }

  void set_experiment_status(int64_t id, const std::string& status) override {
    update_experiment(kSetExperimentStatus, "set_experiment_status", id, status);
  }
  void set_searcher_state(int64_t id, const Json& state) override {
    update_experiment(kSetSearcherState, "set_searcher_state", id, state);
  }
  void set_scheduler_state(int64_t id, const Json& state) override {
    guard("set_scheduler_state", [&] {
      in_savepoint([&] {  // the state and its parts change together
        update_experiment(kSetSchedulerState, "set_scheduler_state", id, state);
        Use s(stmt(kDropSchedulerStateParts));
        s->bind(1, id);
        s->exec();
      });
    });
  }
  int64_t add_scheduler_state_part(int64_t id, const Json& part) override {
    return guard("add_scheduler_state_part", [&] {
      std::string json = dump(part);
      Use s(stmt(kInsertSchedulerStatePart));
      s->bind(1, id);
      s->bindNoCopy(2, json);
      s->bind(3, now());
      s->exec();
      return db_.getLastInsertRowid();
    });
  }
  int64_t drop_scheduler_state_parts_before(int64_t id, int64_t part_id, int64_t limit) override {
    return guard("drop_scheduler_state_parts_before", [&] {
      Use s(stmt(kDropSchedulerStatePartsBefore));
      s->bind(1, id);
      s->bind(2, part_id);
      s->bind(3, limit);
      return static_cast<int64_t>(s->exec());
    });
  }
  std::vector<Json> scheduler_state_parts(int64_t id) override {
    return guard("scheduler_state_parts", [&] {
      std::vector<Json> out;
      Use s(stmt(kListSchedulerStateParts));
      s->bind(1, id);
      while (s->executeStep()) out.push_back(json_column(s->getColumn(0), "scheduler_state_parts"));
      return out;
    });
  }

  int64_t add_trial(int64_t experiment_id, int64_t trial_index, const Json& config) override {
    return add_trial_row(experiment_id, trial_index, config, std::nullopt);
  }
  int64_t add_started_trial(int64_t experiment_id, int64_t trial_index, const Json& config, double time) override {
    return add_trial_row(experiment_id, trial_index, config, time);
  }

  int64_t add_trial_row(int64_t experiment_id, int64_t trial_index, const Json& config, std::optional<double> started) {
    return guard("add_trial", [&] {
      // The trial row and its params land together or not at all.
      return in_savepoint([&] { return insert_trial(experiment_id, trial_index, config, started); });
    });
  }

  void set_trial_status(int64_t trial_id, const std::string& status, double time,
                        const std::string& error) override {
    guard("set_trial_status", [&] { update_status(trial_id, status, time, error, nullptr, nullptr); });
  }

  void set_trial_status_and_result(int64_t trial_id, const std::string& status, double time, const std::string& error,
                                   int64_t last_iteration, const Json& last_result) override {
    guard("set_trial_status_and_result", [&] {
      const std::string json = dump_json(last_result);
      update_status(trial_id, status, time, error, &last_iteration, &json);
    });
  }

  std::vector<TrialRecord> trials(int64_t experiment_id) override {
    return guard("trials", [&] {
      std::vector<TrialRecord> out;
      Use s(stmt(kListTrials));
      s->bind(1, experiment_id);
      while (s->executeStep()) out.push_back(read_trial(*s));
      return out;
    });
  }

  std::optional<TrialRecord> trial(int64_t experiment_id, int64_t trial_index) override {
    return guard("trial", [&]() -> std::optional<TrialRecord> {
      Use s(stmt(kFindTrial));
      s->bind(1, experiment_id);
      s->bind(2, trial_index);
      if (!s->executeStep()) return std::nullopt;
      return read_trial(*s);
    });
  }

  int64_t add_result(int64_t trial_id, int64_t iteration, int attempt, const Json& metrics,
                     double time) override {
    return guard("add_result", [&] {
      const std::string json = dump_json(metrics);
      const int64_t id = insert_result(trial_id, iteration, attempt, json, time);
      update_last_result(trial_id, iteration, json);
      return id;
    });
  }

  int64_t append_result(int64_t trial_id, int64_t iteration, int attempt, const Json& metrics,
                        double time) override {
    return guard("append_result", [&] { return insert_result(trial_id, iteration, attempt, dump_json(metrics), time); });
  }

  void set_last_result(int64_t trial_id, int64_t iteration, const Json& metrics) override {
    guard("set_last_result", [&] { update_last_result(trial_id, iteration, dump_json(metrics)); });
  }

  void refresh_last_results(int64_t experiment_id) override {
    guard("refresh_last_results", [&] {
      Use s(stmt(kRefreshLastResults));
      s->bind(1, experiment_id);
      s->exec();
    });
  }

  std::vector<ResultRecord> results(int64_t trial_id) override {
    return guard("results", [&] {
      std::vector<ResultRecord> out;
      Use s(stmt(kListResults));
      s->bind(1, trial_id);
      while (s->executeStep()) {
        ResultRecord r;
        r.id = s->getColumn(0).getInt64();
        r.trial_id = s->getColumn(1).getInt64();
        r.iteration = s->getColumn(2).getInt64();
        r.attempt = s->getColumn(3).getInt();
        r.time = time_column(s->getColumn(4));
        r.metrics = json_column(s->getColumn(5), "results");
        out.push_back(std::move(r));
      }
      return out;
    });
  }

  int64_t add_checkpoint(int64_t trial_id, int64_t iteration, const std::string& path,
                         std::optional<double> score, double time) override {
    return guard("add_checkpoint", [&] {
      Use s(stmt(kInsertCheckpoint));
      s->bind(1, trial_id);
      s->bind(2, iteration);
      s->bind(3, path);
      if (score) s->bind(4, *score);
      s->bind(5, time);
      s->exec();
      return db_.getLastInsertRowid();
    });
  }

  void mark_checkpoint_deleted(int64_t checkpoint_id) override {
    guard("mark_checkpoint_deleted", [&] {
      Use s(stmt(kDeleteCheckpoint));
      s->bind(1, checkpoint_id);
      if (s->exec() == 0) {
        throw Error("store: no checkpoint with id " + std::to_string(checkpoint_id));
      }
    });
  }

  std::vector<CheckpointRecord> checkpoints(int64_t trial_id) override {
    return guard("checkpoints", [&] { return list_checkpoints(kListCheckpoints, trial_id); });
  }

  std::vector<CheckpointRecord> experiment_checkpoints(int64_t experiment_id) override {
    return guard("experiment_checkpoints", [&] { return list_checkpoints(kListExperimentCheckpoints, experiment_id); });
  }

  // The rows of a checkpoints query whose one parameter is `id`.
  std::vector<CheckpointRecord> list_checkpoints(const char* sql, int64_t id) {
    std::vector<CheckpointRecord> out;
    Use s(stmt(sql));
    s->bind(1, id);
    while (s->executeStep()) {
      CheckpointRecord c;
      c.id = s->getColumn(0).getInt64();
      c.trial_id = s->getColumn(1).getInt64();
      c.iteration = s->getColumn(2).getInt64();
      c.path = s->getColumn(3).getString();
      if (!s->getColumn(4).isNull()) c.score = s->getColumn(4).getDouble();
      c.deleted = s->getColumn(5).getInt() != 0;
      c.created_at = time_column(s->getColumn(6));
      out.push_back(std::move(c));
    }
    return out;
  }

  void add_event(int64_t experiment_id, std::optional<int64_t> trial_id, const std::string& kind,
                 const Json& detail, double time) override {
    guard("add_event", [&] {
      Use s(stmt(kInsertEvent));
      s->bind(1, experiment_id);
      if (trial_id) s->bind(2, *trial_id);
      s->bind(3, time);
      s->bind(4, kind);
      bind_json_or_null(*s, 5, detail);
      s->exec();
    });
  }

  std::optional<LeaseRecord> take_lease(int64_t experiment_id, const LeaseRecord& mine,
                                       const std::function<bool(const LeaseRecord&)>& holder_gone) override {
    Transaction txn(*this);
    auto holder = guard("take_lease", [&]() -> std::optional<LeaseRecord> {
      Use s(stmt(kFindLease));
      s->bind(1, experiment_id);
      if (!s->executeStep()) return std::nullopt;
      return LeaseRecord{s->getColumn(0).getString(), s->getColumn(1).getInt64(), s->getColumn(2).getDouble(),
                         s->getColumn(3).getDouble()};
    });
    if (holder && !holder_gone(*holder)) return holder;
    guard("take_lease", [&] {
      Use s(stmt(kPutLease));
      s->bind(1, experiment_id);
      s->bind(2, mine.host);
      s->bind(3, mine.pid);
      s->bind(4, mine.started_at);
      s->bind(5, mine.heartbeat_at);
      s->exec();
    });
    txn.commit();
    return std::nullopt;
  }

  bool holds_lease(int64_t experiment_id, const LeaseRecord& mine) override {
    return guard("holds_lease", [&] {
      Use s(stmt(kFindLease));
      s->bind(1, experiment_id);
      return s->executeStep() && s->getColumn(0).getString() == mine.host && s->getColumn(1).getInt64() == mine.pid &&
             s->getColumn(2).getDouble() == mine.started_at;
    });
  }

  bool renew_lease(int64_t experiment_id, const LeaseRecord& mine, double now) override {
    return guard("renew_lease", [&] {
      Use s(stmt(kRenewLease));
      s->bind(1, now);
      s->bind(2, experiment_id);
      s->bind(3, mine.host);
      s->bind(4, mine.pid);
      s->bind(5, mine.started_at);
      return s->exec() == 1;
    });
  }

  void release_lease(int64_t experiment_id, const LeaseRecord& mine) override {
    guard("release_lease", [&] {
      Use s(stmt(kReleaseLease));
      s->bind(1, experiment_id);
      s->bind(2, mine.host);
      s->bind(3, mine.pid);
      s->bind(4, mine.started_at);
      s->exec();
    });
  }

  std::vector<EventRecord> events(int64_t experiment_id) override {
    return guard("events", [&] { return read_events(db_, experiment_id); });
  }
  std::vector<EventRecord> events_after(int64_t experiment_id, const std::string& kind, int64_t after_id,
                                        int64_t* newest) override {
    return guard("events_after", [&] { return read_events_after(db_, experiment_id, kind, after_id, newest); });
  }
  ResultColumns result_columns(int64_t experiment_id, const std::vector<std::string>& keys) override {
    return guard("result_columns", [&] { return read_result_columns(db_, experiment_id, keys); });
  }
  void for_each_result(int64_t experiment_id,
                       const std::function<void(const ResultRecord&)>& visit) override {
    guard("for_each_result", [&] { visit_results(db_, experiment_id, visit); });
  }

  void set_trial_config(int64_t trial_id, const Json& config) override {
    guard("set_trial_config", [&] {
      Use s(stmt(kSetTrialConfig));
      s->bind(1, dump(config));
      s->bind(2, trial_id);
      if (s->exec() == 0) throw Error("store: no trial with id " + std::to_string(trial_id));
      Use d(stmt(kDeleteParams));
      d->bind(1, trial_id);
      d->exec();
      insert_params(trial_id, config);
    });
  }

  int64_t add_exploit(const ExploitRecord& e) override {
    return guard("add_exploit", [&] {
      Use s(stmt(kInsertExploit));
      s->bind(1, e.trial_id);
      s->bind(2, e.donor_trial_id);
      s->bind(3, e.iteration);
      s->bind(4, e.donor_iteration);
      s->bind(5, e.checkpoint_path);
      s->bind(6, dump(e.old_config));
      s->bind(7, dump(e.new_config));
      s->bind(8, e.time);
      s->exec();
      return db_.getLastInsertRowid();
    });
  }

  std::vector<ExploitRecord> exploits(int64_t experiment_id) override {
    return guard("exploits", [&] {
      std::vector<ExploitRecord> out;
      Use s(stmt(kListExploits));
      s->bind(1, experiment_id);
      while (s->executeStep()) {
        ExploitRecord e;
        e.id = s->getColumn(0).getInt64();
        e.trial_id = s->getColumn(1).getInt64();
        e.donor_trial_id = s->getColumn(2).getInt64();
        e.iteration = s->getColumn(3).getInt64();
        e.donor_iteration = s->getColumn(4).getInt64();
        e.checkpoint_path = s->getColumn(5).getString();
        // Malformed text is a tune::Error, as in every other JSON column
        // (a raw Json::parse let nlohmann's parse_error escape).
        e.old_config = json_column(s->getColumn(6), "exploits");
        e.new_config = json_column(s->getColumn(7), "exploits");
        e.time = s->getColumn(8).getDouble();
        out.push_back(std::move(e));
      }
      return out;
    });
  }

 private:
  // kSetTrialStatus; the last iteration and result too when given.
  void update_status(int64_t trial_id, const std::string& status, double time, const std::string& error,
                     const int64_t* last_iteration, const std::string* last_result_json) {
    Use s(stmt(kSetTrialStatus));
    s->bind(1, status);
    s->bind(2, time);
    s->bind(3, error);
    s->bind(4, trial_id);
    if (last_iteration) {
      s->bind(5, *last_iteration);
      s->bindNoCopy(6, *last_result_json);
    }
    if (s->exec() == 0) throw Error("store: no trial with id " + std::to_string(trial_id));
  }

  int64_t insert_result(int64_t trial_id, int64_t iteration, int attempt, const std::string& json, double time) {
    Use s(stmt(kInsertResult));
    s->bind(1, trial_id);
    s->bind(2, iteration);
    s->bind(3, attempt);
    s->bind(4, time);
    s->bindNoCopy(5, json);
    s->exec();
    return db_.getLastInsertRowid();
  }

  void update_last_result(int64_t trial_id, int64_t iteration, const std::string& json) {
    Use u(stmt(kUpdateLastResult));
    u->bind(1, iteration);
    u->bindNoCopy(2, json);
    u->bind(3, trial_id);
    u->exec();
  }

  int64_t insert_trial(int64_t experiment_id, int64_t trial_index, const Json& config, std::optional<double> started) {
    int64_t trial_id;
    {
      Use s(stmt(started ? kInsertStartedTrial : kInsertTrial));
      s->bind(1, experiment_id);
      s->bind(2, trial_index);
      s->bind(3, dump(config));
      s->bind(4, now());
      if (started) s->bind(5, *started);
      s->exec();
      trial_id = db_.getLastInsertRowid();
    }
    insert_params(trial_id, config);
    return trial_id;
  }

  // Up to kParamsPerInsert rows a statement: one statement's fixed cost
  // (step, reset, the VDBE's set-up) instead of one a param (~9k
  // instructions each in callgrind, of which a third is that fixed cost).
  static constexpr size_t kParamsPerInsert = 8;

  void insert_params(int64_t trial_id, const Json& config) {
    std::vector<std::pair<std::string, const Json*>> rows;
    flatten(config, [&](const std::string& name, const Json& value) { rows.emplace_back(name, &value); });
    for (size_t first = 0; first < rows.size(); first += kParamsPerInsert) {
      const size_t n = std::min(kParamsPerInsert, rows.size() - first);
      Use s(params_insert(n));
      for (size_t i = 0; i < n; ++i) {
        const int at = static_cast<int>(5 * i);
        const Json& value = *rows[first + i].second;
        s->bind(at + 1, trial_id);
        s->bindNoCopy(at + 2, rows[first + i].first);
        s->bind(at + 3, dump(value));
        if (value.is_number()) s->bind(at + 4, value.get<double>());
        if (value.is_string()) s->bindNoCopy(at + 5, value.get_ref<const std::string&>());
      }
      s->exec();
    }
  }

  // kInsertParam with `rows` rows of values, prepared once.
  SQLite::Statement& params_insert(size_t rows) {
    if (params_inserts_.size() < rows) params_inserts_.resize(rows);
    auto& slot = params_inserts_[rows - 1];
    if (!slot) {
      std::string sql = kInsertParam;
      for (size_t i = 1; i < rows; ++i) sql += ",(?,?,?,?,?)";
      slot = std::make_unique<SQLite::Statement>(db_, sql);
    }
    return *slot;
  }

  // f's rows together or not at all. A savepoint, not begin(): a failure
  // here must not roll back the caller's whole batch, only f's rows.
  template <class F>
  auto in_savepoint(F&& f) -> decltype(f()) {
    exec_cached(kSavepoint);
    try {
      if constexpr (std::is_void_v<decltype(f())>) {
        f();
        exec_cached(kRelease);
      } else {
        auto result = f();
        exec_cached(kRelease);
        return result;
      }
    } catch (...) {
      try {
        exec_cached(kRollbackTo);
        exec_cached(kRelease);
      } catch (const SQLite::Exception&) {
        // SQLite already rolled the whole transaction back; nothing to undo.
      }
      throw;
    }
  }

  template <class F>
  auto guard(const char* what, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const SQLite::Exception& e) {
      if (e.getErrorCode() == SQLITE_FULL) {
        stand_down_checkpoints();
        free_reserve();
        throw DiskFullError(std::string("store: ") + what + ": " + e.what());
      }
      if ((e.getErrorCode() & 0xff) == SQLITE_BUSY) throw StoreBusyError(std::string("store: ") + what + ": " + e.what());
      throw Error(std::string("store: ") + what + ": " + e.what());
    }
  }

  // Room kept for the record of a stop when the disk fills (the experiment's
  // INTERRUPTED, the lease's release): a file of kReserveBytes beside the
  // database while it is open for writing, removed when a write fails for
  // want of space, made again at the next open. Best effort: a disk already
  // full keeps what it could take.
  static constexpr size_t kReserveBytes = size_t{128} << 10;
  void keep_reserve() {
    if (reserve_path_.empty()) return;
    std::error_code ec;
    if (std::filesystem::file_size(reserve_path_, ec) >= kReserveBytes && !ec) return;
    std::ofstream out(reserve_path_, std::ios::binary | std::ios::trunc);
    const std::string zeros(kReserveBytes, '\0');
    out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  // The reserve is for the stop's record, not for the checkpoint thread,
  // whose copies grow the database file: once a write failed for want of
  // space the thread copies nothing more (until the store is opened again),
  // and a copy under way ends before the reserve is freed (it fails or
  // finishes on the space there is). The commits copy the WAL themselves
  // from then on, as SQLite does by default (on_commit).
  void stand_down_checkpoints() {
    if (!checkpointer_.joinable()) return;
    disk_full_.store(true, std::memory_order_relaxed);
    std::lock_guard<std::mutex> copying(copy_mutex_);
  }
  void free_reserve() {
    std::error_code ec;
    if (!reserve_path_.empty()) std::filesystem::remove(reserve_path_, ec);
  }

  void exec_cached(const char* sql) {
    Use s(stmt(sql));
    s->exec();
  }

  SQLite::Statement& stmt(const char* sql) {
    auto& slot = cache_[sql];
    if (!slot) slot = std::make_unique<SQLite::Statement>(db_, sql);
    return *slot;
  }

  template <class Value>
  void update_experiment(const char* sql, const char* what, int64_t id, const Value& value) {
    guard(what, [&] {
      Use s(stmt(sql));
      if constexpr (std::is_same_v<Value, Json>) {
        bind_json_or_null(*s, 1, value);
      } else {
        s->bind(1, value);
      }
      s->bind(2, now());
      s->bind(3, id);
      if (s->exec() == 0) throw Error("store: no experiment with id " + std::to_string(id));
    });
  }

  // The WAL is copied back (a PASSIVE checkpoint: it never waits for, nor
  // blocks, the writer) by the thread once it holds kBackgroundPages frames
  // more than at the last copy (SQLite's own threshold), or holds new frames
  // a second after the last look (a quiet sweep's tail).
  //
  // The WAL starts over (its next frame written at its start) only when a
  // transaction begins with every frame copied, which a writer that commits
  // without a pause never gives the thread: the WAL grew to kForegroundPages,
  // where a commit copied the rest itself. So once the WAL holds
  // kRestartPages frames, the first commit after one of the thread's copies
  // copies the few frames written during it, and the WAL starts over at the
  // next commit. That copy syncs both files (the thread syncs the database
  // after each of its copies, sync_database, so the commit's syncs write only
  // the pages written since), and the first frames of a WAL that starts over
  // sync its header (SQLite's rule): each start over stalls two commits,
  // every answer of their turns waiting. At ASHA's ~35,000 frames a second
  // the WAL started over ~15 times a second; now at most once per
  // `restart_every` (1 s: 60-130 MiB of WAL at 10,000 results/s), and at
  // once past kRestartPagesAlways. A writer that pauses lets the thread copy
  // everything and starts over at its next commit, as before. Past
  // kForegroundPages, should the thread fall behind, a commit copies
  // whatever is left. On a disk with little room the WAL also starts over
  // once it holds half the space its disk has free (wal_cap_, from the
  // thread's statvfs after each copy; never under kRestartPages): it then
  // takes at most about a third of what was free, where a second of commits
  // wrote 18-36 MiB of WAL for a sweep of 2 MiB of results and filled a
  // 20 MiB disk.
  static constexpr int kBackgroundPages = 1000;
  static constexpr int kRestartPages = 2000;         // ~8 MiB
  static constexpr int kRestartPagesAlways = 32768;  // ~128 MiB
  static constexpr int kForegroundPages = 65536;     // ~256 MiB
  static constexpr auto kIdleCheckpoint = std::chrono::seconds(1);

  static int on_commit(void* self, sqlite3* db, const char* name, int frames) {
    auto* store = static_cast<SqliteStore*>(self);
    // Taken by every commit, so a copy made while the WAL was short does not count later.
    const bool just_copied = store->copy_done_.exchange(false, std::memory_order_relaxed);
    // The hook runs on the writer's thread only: these two are its own. The
    // clock is read only where it decides something (not on most commits).
    if (frames < store->hook_frames_) store->wal_started_ = std::chrono::steady_clock::now();  // started over
    store->hook_frames_ = frames;
    const auto restart_due = [&] {
      return frames >= kRestartPagesAlways || frames >= store->wal_cap_.load(std::memory_order_relaxed) ||
             std::chrono::steady_clock::now() - store->wal_started_ >= store->restart_every_;
    };
    const bool thread_down = store->disk_full_.load(std::memory_order_relaxed);
    if (frames >= kForegroundPages || (frames >= kRestartPages && just_copied && restart_due()) ||
        (thread_down && frames >= kBackgroundPages)) {
      sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      return SQLITE_OK;
    }
    store->wal_frames_.store(frames, std::memory_order_relaxed);
    if (frames >= kBackgroundPages) store->checkpoint_wake_.notify_one();
    return SQLITE_OK;
  }

  // SQLite syncs the database file only after a copy that reached the WAL's
  // end, and a writer that never pauses leaves the thread only partial copies
  // (the frames written meanwhile): every page they wrote stayed unsynced
  // until the commit that copies the rest, whose sync then wrote them all
  // (~10 ms of a 10-15 ms stall at each start over, every answer of the turn
  // waiting: bench/scale/README.md). The thread syncs them after each copy,
  // so that commit's sync has only its own few pages to write. Through
  // SQLite's file (its VFS); a failure leaves them to that commit's sync.
  static void sync_database(sqlite3* db) {
    sqlite3_file* file = nullptr;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK && file && file->pMethods)
      file->pMethods->xSync(file, SQLITE_SYNC_NORMAL);
  }

  // The frames the WAL may hold before it starts over on a disk with little
  // room: half the space free, in frames of `frame_bytes`.
  void measure_room(int64_t frame_bytes) {
    struct statvfs disk {};
    if (::statvfs(path_.c_str(), &disk) != 0) return;
    const auto free_bytes = static_cast<int64_t>(disk.f_bavail) * static_cast<int64_t>(disk.f_frsize);
    const int64_t frames = free_bytes / 2 / frame_bytes;
    wal_cap_.store(static_cast<int>(std::clamp<int64_t>(frames, kRestartPages, kRestartPagesAlways)),
                   std::memory_order_relaxed);
  }

  void run_checkpoints(sqlite3* db) {
    sqlite3_stmt* page_size = nullptr;
    int64_t frame_bytes = 4096 + 24;  // a WAL frame: a page and its header
    if (sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &page_size, nullptr) == SQLITE_OK &&
        sqlite3_step(page_size) == SQLITE_ROW)
      frame_bytes = sqlite3_column_int64(page_size, 0) + 24;
    sqlite3_finalize(page_size);
    measure_room(frame_bytes);
    std::unique_lock<std::mutex> lock(checkpoint_mutex_);
    int copied = 0;  // the WAL's frames at the last copy
    auto due = [&] {
      const int frames = wal_frames_.load(std::memory_order_relaxed);
      return stop_checkpoints_ || frames < copied || frames >= copied + kBackgroundPages;
    };
    while (true) {
      checkpoint_wake_.wait_for(lock, kIdleCheckpoint, due);
      if (stop_checkpoints_) break;
      const int frames = wal_frames_.load(std::memory_order_relaxed);
      if (frames < copied) copied = 0;  // the writer started the WAL over
      if (frames == copied) continue;
      lock.unlock();
      {
        std::lock_guard<std::mutex> copying(copy_mutex_);
        if (!disk_full_.load(std::memory_order_relaxed) &&
            sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) == SQLITE_OK) {
          sync_database(db);
          measure_room(frame_bytes);
          copy_done_.store(true, std::memory_order_relaxed);
        }
      }
      lock.lock();
      // Counted from the copy's end: the frames written during a slow copy
      // are the next commit's to copy once the WAL may start over, not a
      // reason to begin another copy at once (which held the checkpoint lock
      // against that commit, and the WAL grew on).
      copied = std::max(frames, wal_frames_.load(std::memory_order_relaxed));
    }
    sqlite3_close(db);
  }

  SQLite::Database db_;  // declared before cache_: statements must die first
  std::unordered_map<const char*, std::unique_ptr<SQLite::Statement>> cache_;
  std::vector<std::unique_ptr<SQLite::Statement>> params_inserts_;  // [n - 1]: n rows
  bool read_only_;
  std::string path_;
  std::string reserve_path_;  // "" when read-only
  int depth_ = 0;
  std::thread checkpointer_;
  std::mutex checkpoint_mutex_;
  std::condition_variable checkpoint_wake_;
  bool stop_checkpoints_ = false;
  std::atomic<int> wal_frames_{0};  // as of the last commit
  std::atomic<int> wal_cap_{kRestartPagesAlways};  // measure_room()
  std::atomic<bool> copy_done_{false};  // the thread copied the WAL since the last commit
  std::mutex copy_mutex_;                // held by the thread during each copy
  std::atomic<bool> disk_full_{false};   // a write failed for want of space: the thread copies no more
  std::chrono::steady_clock::duration restart_every_{};
  int hook_frames_ = 0;                                // the WAL's frames at the last commit (the hook's)
  std::chrono::steady_clock::time_point wal_started_;  // when the WAL last started over (or the thread started)
};

}  // namespace

namespace storage_internal {

std::unique_ptr<Store> open_sqlite_store(const std::string& path, bool read_only, bool immutable) {
  // SQLite's memory statistics (sqlite3_memory_used(), sqlite3_status(), the
  // heap limits) cost every allocation of SQLite's a global mutex and two
  // counters: ~5 % of the driver's instructions a trial and ~4 % a result
  // (callgrind, bench/overhead/instructions.sh). Off, as SQLite's recommended
  // compile-time options have them (SQLITE_DEFAULT_MEMSTATUS=0), when tune
  // is the first to use SQLite in the process: sqlite3_config() refuses
  // (SQLITE_MISUSE, ignored) once SQLite is initialized, so an application
  // that wants them calls sqlite3_initialize() before it opens a store.
  static const bool configured = [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return true;
  }();
  (void)configured;
  return std::make_unique<SqliteStore>(path, read_only, immutable);
}

SQLite::Database& raw_database(Store& store) {
  auto* sqlite = dynamic_cast<SqliteStore*>(&store);
  if (!sqlite) throw Error("not a SQLite store");
  return sqlite->db();
}

}  // namespace storage_internal
}  // namespace tune
