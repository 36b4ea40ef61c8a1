// Store: the SQLite database holding every experiment, trial, result,
// checkpoint and event. Schema: docs/SCHEMA.md (versioned; see kSchemaVersion).
//
// One database file per results directory: DIR/tune.db, opened in WAL mode so
// readers (the CLI, user SQL) never block the sweep. The driver is the only
// writer. Writes are grouped by the caller with Transaction so a batch of
// results costs one commit; a result acknowledged to a worker has been
// committed. Durability: synchronous=NORMAL by default (a commit survives a
// crash or kill -9 of the driver; use Durability::kFull to survive power loss).
//
//   auto store = tune::Store::open("tune_results");
//   tune::Transaction txn(*store);
//   int64_t trial = store->add_trial(experiment_id, 0, config);
//   store->add_result(trial, 1, 0, {{"loss", 0.5}}, now);
//   txn.commit();
//
// Thread safety: a Store is used by one thread at a time. Every SQL statement
// uses bound parameters. Errors throw tune::Error with SQLite's message.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/trial_status.h"

namespace tune {

inline constexpr int kSchemaVersion = 3;

enum class Durability { kNormal, kFull };

// Trial statuses are stored as the strings of base/trial_status.h (kPending...).

// A trial's folder under its experiment's folder (STORAGE/EXPERIMENT/trial_00007):
// the one spelling of it, for the driver, the executors and checkpoint lookup.
std::string trial_folder_name(int64_t trial_index);

struct ExperimentRecord {
  int64_t id = 0;
  std::string name;
  std::string status;       // RUNNING | FINISHED | INTERRUPTED | FAILED
  std::string metric;       // may be empty
  std::string mode;         // "min" | "max" | ""
  Json spec;                // the whole sweep spec, as JSON (what resume needs)
  std::string spec_source;  // the sweep file text, if any
  Json searcher_state;      // free-form; null when none
  Json scheduler_state;     // free-form; null when none
  double created_at = 0;    // unix seconds
  double updated_at = 0;
};

struct TrialRecord {
  int64_t id = 0;             // global row id
  int64_t experiment_id = 0;
  int64_t trial_index = 0;    // 0.. within the experiment
  std::string status;
  Json config;
  int attempts = 0;           // number of starts so far
  std::string error;          // last error message, empty if none
  int64_t last_iteration = 0;
  Json last_result;           // null when none
  double created_at = 0, started_at = 0, ended_at = 0;
};

struct ResultRecord {
  int64_t id = 0;
  int64_t trial_id = 0;
  int64_t iteration = 0;
  int attempt = 0;
  double time = 0;
  Json metrics;
};

struct CheckpointRecord {
  int64_t id = 0;
  int64_t trial_id = 0;
  int64_t iteration = 0;
  std::string path;
  std::optional<double> score;
  bool deleted = false;
  double created_at = 0;
};

// One PBT exploit: `trial` cloned `donor`'s checkpoint and continued with
// new_config (the lineage; docs/SCHEMA.md table `exploits`).
struct ExploitRecord {
  int64_t id = 0;
  int64_t trial_id = 0;        // row ids (trials.id)
  int64_t donor_trial_id = 0;
  int64_t iteration = 0;       // the trial's iteration when it exploited
  int64_t donor_iteration = 0; // the iteration of the donor's checkpoint
  std::string checkpoint_path; // the trial's copy it restarted from
  Json old_config, new_config;
  double time = 0;
};

// Who runs an experiment now (docs/SCHEMA.md table `driver_leases`).
struct LeaseRecord {
  std::string host;
  int64_t pid = 0;
  double started_at = 0;    // identifies the driver with host and pid
  double heartbeat_at = 0;  // renewed while it runs
};

// One row of the events log (docs/SCHEMA.md table `events`).
struct EventRecord {
  int64_t id = 0;
  std::optional<int64_t> trial_id;  // nullopt for experiment-wide events
  double time = 0;
  std::string kind;
  Json detail;  // null when none
};

// Chosen numbers of many results, one column per field (what a report plots):
// row i is one result; values[k][i] is keys[k] in its metrics, NaN when the
// key is missing, null (a NaN metric) or not a number.
struct ResultColumns {
  std::vector<std::string> keys;
  std::vector<int64_t> trial_id, iteration;
  std::vector<int> attempt;
  std::vector<double> time;
  std::vector<std::vector<double>> values;
  size_t size() const { return time.size(); }
};

class Store {
 public:
  // Opens (creating if needed, unless read_only) DIR/tune.db, migrating an
  // older schema. Throws tune::Error if DIR is unusable, the file is not a
  // tune store, or its schema is newer than this build understands.
  static std::unique_ptr<Store> open(const std::string& dir, bool read_only = false,
                                     Durability durability = Durability::kNormal);
  // True if DIR/tune.db exists.
  static bool exists(const std::string& dir);
  static std::string database_path(const std::string& dir);

  virtual ~Store() = default;
  virtual int schema_version() = 0;

  // Moves the store's WAL checkpoints (copying committed pages back into the
  // database file, with its fsyncs) off the caller's thread, onto a thread of
  // the store's with a connection of its own, at SQLite's own pace (every
  // 1,000 WAL pages, and a second after the last commit); commits then never
  // wait for one, but for the few frames written during the thread's last
  // copy, which a commit copies itself once the WAL holds 2,000 pages (~8 MiB)
  // and started over at least `restart_every` ago (or holds ~128 MiB), so that
  // the WAL starts over: under a writer that never pauses the thread alone
  // never catches up, and each start over syncs files in two commits. The
  // thread syncs the database after each of its copies, so that commit's sync
  // writes only its own pages. A write store only; the driver calls it.
  // Should that thread fall behind, a commit checkpoints itself once the WAL
  // holds ~256 MiB. After a write failed for want of space (DiskFullError)
  // the thread copies nothing more, and commits checkpoint as by default.
  virtual void checkpoint_in_background(std::chrono::milliseconds restart_every = std::chrono::seconds(1)) {
    (void)restart_every;
  }

  // Transactions (nestable: only the outermost begin/commit reach SQLite).
  virtual void begin() = 0;
  virtual void commit() = 0;
  virtual void rollback() = 0;

  // --- experiments
  // Throws tune::Error if the name is taken.
  virtual int64_t create_experiment(const ExperimentRecord& experiment) = 0;
  virtual std::optional<ExperimentRecord> find_experiment(const std::string& name) = 0;
  virtual std::vector<ExperimentRecord> experiments() = 0;
  virtual void set_experiment_status(int64_t experiment_id, const std::string& status) = 0;
  virtual void set_searcher_state(int64_t experiment_id, const Json& state) = 0;
  // Replaces the scheduler's saved state and drops its later parts.
  virtual void set_scheduler_state(int64_t experiment_id, const Json& state) = 0;
  // A later part of the scheduler's state (what was added since the previous
  // save), applied after scheduler_state on restore, in order. Returns its id.
  virtual int64_t add_scheduler_state_part(int64_t experiment_id, const Json& part) = 0;
  virtual std::vector<Json> scheduler_state_parts(int64_t experiment_id) = 0;
  // Drops the oldest parts stored before part `part_id` (the parts from it
  // on hold everything they held: Scheduler::save_state_part's "base"), at
  // most `limit` of them; returns how many went.
  virtual int64_t drop_scheduler_state_parts_before(int64_t experiment_id, int64_t part_id, int64_t limit) = 0;

  // --- trials
  // Inserts the trial (status PENDING) and one row per flattened leaf of
  // `config` (table params). Returns the trial's row id.
  virtual int64_t add_trial(int64_t experiment_id, int64_t trial_index, const Json& config) = 0;
  // The same for a trial that starts at once: inserted RUNNING, attempts 1,
  // started_at `time` (as add_trial() then set_trial_status(RUNNING, time),
  // in one row write instead of two).
  virtual int64_t add_started_trial(int64_t experiment_id, int64_t trial_index, const Json& config, double time) = 0;
  // Sets status; started_at when RUNNING (and attempts += 1), ended_at when
  // TERMINATED/ERROR. `error` replaces the stored message when non-empty.
  virtual void set_trial_status(int64_t trial_id, const std::string& status, double time,
                                const std::string& error = "") = 0;
  // set_trial_status() and set_last_result() in one write of the row.
  virtual void set_trial_status_and_result(int64_t trial_id, const std::string& status, double time,
                                           const std::string& error, int64_t last_iteration,
                                           const Json& last_result) = 0;
  // Replaces the trial's config (PBT explore) and its params rows.
  virtual void set_trial_config(int64_t trial_id, const Json& config) = 0;
  virtual std::vector<TrialRecord> trials(int64_t experiment_id) = 0;
  virtual std::optional<TrialRecord> trial(int64_t experiment_id, int64_t trial_index) = 0;

  // --- results
  // Appends a result and makes it the trial's last_iteration / last_result.
  virtual int64_t add_result(int64_t trial_id, int64_t iteration, int attempt, const Json& metrics,
                             double time) = 0;
  // Appends a result and leaves the trial's row as it is: the caller keeps
  // the trial's last result and writes it with set_last_result(). The driver
  // does so with every status change and at most every few seconds while the
  // trial runs (docs/SCHEMA.md), which saves a row rewrite per result.
  virtual int64_t append_result(int64_t trial_id, int64_t iteration, int attempt, const Json& metrics,
                                double time) = 0;
  virtual void set_last_result(int64_t trial_id, int64_t iteration, const Json& metrics) = 0;
  // Sets last_iteration / last_result of every trial of the experiment that
  // is neither TERMINATED nor ERROR to its latest result (the last one
  // appended), where it has one: for a driver that resumes after one that
  // died between two refreshes of those rows.
  virtual void refresh_last_results(int64_t experiment_id) = 0;
  virtual std::vector<ResultRecord> results(int64_t trial_id) = 0;

  // --- checkpoints
  virtual int64_t add_checkpoint(int64_t trial_id, int64_t iteration, const std::string& path,
                                 std::optional<double> score, double time) = 0;
  virtual void mark_checkpoint_deleted(int64_t checkpoint_id) = 0;
  // Live (not deleted) checkpoints of a trial, oldest first.
  virtual std::vector<CheckpointRecord> checkpoints(int64_t trial_id) = 0;
  // Every trial's checkpoints (as checkpoints()), ordered by trial then id:
  // one query for a whole experiment.
  virtual std::vector<CheckpointRecord> experiment_checkpoints(int64_t experiment_id) = 0;

  // --- PBT lineage
  virtual int64_t add_exploit(const ExploitRecord& exploit) = 0;
  // Every exploit of an experiment's trials, in order.
  virtual std::vector<ExploitRecord> exploits(int64_t experiment_id) = 0;

  // --- the driver lease: at most one live driver per experiment.
  // Takes the experiment's lease for `mine`, atomically, unless another
  // driver holds it and `holder_gone(holder)` is false: then nothing changes
  // and the holder is returned.
  virtual std::optional<LeaseRecord> take_lease(int64_t experiment_id, const LeaseRecord& mine,
                                               const std::function<bool(const LeaseRecord&)>& holder_gone) = 0;
  // Whether `mine` holds it (a read: cheap inside every batch).
  virtual bool holds_lease(int64_t experiment_id, const LeaseRecord& mine) = 0;
  // Renews `mine`; false when it is not the holder any more (taken over).
  virtual bool renew_lease(int64_t experiment_id, const LeaseRecord& mine, double now) = 0;
  virtual void release_lease(int64_t experiment_id, const LeaseRecord& mine) = 0;

  // --- events: an append-only log (trial started, stopped, error, retry, ...).
  virtual void add_event(int64_t experiment_id, std::optional<int64_t> trial_id,
                         const std::string& kind, const Json& detail, double time) = 0;

  // --- whole-experiment reads (reports, exports); each is one statement.
  // Every event of an experiment, in order.
  virtual std::vector<EventRecord> events(int64_t experiment_id) = 0;
  // Its events of one `kind` after the event `after_id`, in order (what a
  // driver polls for: `tune hosts EXP add|drain` requests). `newest`, when
  // given, is set to the newest event id of any kind looked past: polling
  // from there reads only what was written since (a read of the events
  // written since `after_id`, not of all of them).
  virtual std::vector<EventRecord> events_after(int64_t experiment_id, const std::string& kind, int64_t after_id,
                                                int64_t* newest = nullptr) = 0;
  // `keys` of every result of an experiment's trials, ordered by trial row id,
  // then as reported. Reads the metrics text without parsing whole objects:
  // 10^6 results in well under a second.
  virtual ResultColumns result_columns(int64_t experiment_id,
                                       const std::vector<std::string>& keys) = 0;
  // Calls `visit` with every result of an experiment's trials, in the same
  // order, one at a time (memory does not grow with the results).
  virtual void for_each_result(int64_t experiment_id,
                               const std::function<void(const ResultRecord&)>& visit) = 0;
};

// RAII transaction: begins on construction, rolls back on destruction unless
// commit() was called.
class Transaction {
 public:
  explicit Transaction(Store& store) : store_(store) { store_.begin(); }
  ~Transaction() {
    if (!done_) {
      try {
        store_.rollback();
      } catch (...) {
      }
    }
  }
  void commit() {
    store_.commit();
    done_ = true;
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

 private:
  Store& store_;
  bool done_ = false;
};

}  // namespace tune
