// Internal: the Driver behind run_experiment (tuner/driver/driver.h). Its methods
// live in driver.cpp (opening, launching, the loop, finishing) and
// trial_events.cpp (what each event and each decision does to a trial and
// the store). Tests drive it a step at a time with a fake executor and clock.
//
//   Driver driver(std::move(sweep), run, /*resume=*/false, env);
//   driver.open();
//   while (driver.step(std::chrono::milliseconds(50))) {}
//   driver.finish();
#pragma once

#include <chrono>
#include <cstdint>
#include <cmath>
#include <filesystem>
#include <map>
#include <unordered_map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "schedulers/trial_state_machine.h"
#include "storage/store.h"
#include "tuner/driver/checkpoints.h"
#include "tuner/driver/driver.h"
#include "tuner/driver/live_report.h"
#include "tuner/exec/resource_pool.h"

// The parts of the loop that tuner/exec/profile.h times are functions of their
// own, never inlined, so that callgrind reports each one's instructions too
// (bench/overhead/parts.sh).
#define TUNE_PROFILED [[gnu::noinline]]

namespace tune::internal {

// The driver's view of one trial.
struct TrialState {
  int64_t index = 0;
  int64_t row = 0;  // trials.id in the store (0: a new trial whose start writes its row)
  Json config;  // its status lives in Driver::lifecycle_
  int attempt = 0;  // starts so far; events of other attempts are stale
  int failures = 0;
  int host_losses = 0;  // attempts lost with their host (multi-host sweeps)
  int64_t iteration = 0;
  int64_t exploits = 0;  // PBT exploits so far (names its checkpoints apart)
  double attempt_started = 0, last_report = 0;  // clock.now() of the running attempt
  double time_before_attempt = 0;               // seconds run in earlier attempts
  std::optional<Checkpoint> checkpoint;
  Json last_result;
  // The trial's row (last_iteration, last_result_json) is written with every
  // status change (in the same UPDATE) and, while the trial runs, at most
  // every kRowRefreshS from its start (Driver::set_status, on_result): most
  // results append a results row only, and a trial that ends within
  // kRowRefreshS writes its row once. unsaved_iteration: the iteration of a
  // last result the row does not hold yet (0: it holds it).
  static constexpr double kRowRefreshS = 5.0;
  int64_t unsaved_iteration = 0;
  double row_saved_at = -INFINITY;  // clock.now()
  std::string error;
  // A final trial's config and last result, packed (CBOR) once nothing but
  // the ResultGrid and the progress table reads them: the driver keeps every
  // trial it has seen, and unpacked they cost ~1.4 KB a trial (a JSON object
  // is a std::map: ~100 bytes a key). Empty until then; config and
  // last_result are null after.
  std::vector<std::uint8_t> packed;
  double packed_metric = NAN;  // packed: its last result's metric (the progress table ranks by it)
  // stop.plateau: the last num_results values of its metric, oldest first
  // (emptied by an exploit: the values before it are another config's), and
  // how many values it has reported in all (its grace period). Not saved: a
  // resumed sweep fills the window again.
  std::vector<double> plateau_values;
  int64_t plateau_seen = 0;
};

// A final trial's config and last result, packed or not.
struct TrialRecordView {
  Json config, last_result;
};
void pack(TrialState& trial, const std::string& metric);
TrialRecordView unpacked(const TrialState& trial);

class Driver {
 public:
  Driver(PreparedSweep sweep, RunConfig run, bool resume, DriverEnvironment env);
  // After an exception: cancels live attempts, answers their pending
  // results with kStop, and shuts the executor down.
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Creates (or, resuming, loads) the experiment and starts the executor.
  void open();
  // One turn of the loop: launch what can start, wait up to `max_wait` for
  // events, handle them in one store transaction, then send the replies.
  // False when the sweep is over (nothing runs and nothing can start).
  bool step(std::chrono::microseconds max_wait);
  // Records the end (FINISHED or INTERRUPTED) and releases the executor.
  void finish();
  std::string run();
  // After run(): the trials, moved out (the driver is done with them).
  std::vector<TrialOutcome> take_outcomes();

  TrialStatus status(int64_t trial) const { return lifecycle_.status(trial); }
  const std::string& name() const { return sweep_.spec.name; }
  int64_t experiment_id() const { return experiment_.id; }
  // Final trials held packed (DriverEnvironment::unpacked_final_trials).
  size_t packed_trials() const { return packed_final_; }
  Store& store() { return *store_; }
  // A save of the scheduler's state only to keep it recent holds at most
  // this many of its changes (Scheduler::save_state_part_up_to).
  static constexpr size_t kStatePartEntries = 1000;

 private:
  using Reply = std::pair<std::function<void(Verdict)>, Verdict>;

  // driver.cpp
  void listen_on_cluster(ExecutorContext& context);
  void create_experiment();
  void take_lease();
  void renew_lease();
  void hold_lease();
  [[noreturn]] void lost_lease();
  void release_lease();
  static constexpr uint64_t kDescriptorsWanted = 65536;  // the soft RLIMIT_NOFILE, within the hard one
  static constexpr double kLeaseTimeout = 60;      // s without a heartbeat: the holder is gone
  static constexpr double kHeartbeatInterval = 2;  // s
  static constexpr double kFrozenS = 3 * kHeartbeatInterval;  // another host's heartbeat this still: no driver renews it
  void load_experiment();
  bool may_launch() const;
  TUNE_PROFILED void launch_ready();
  std::optional<int64_t> next_trial();
  TUNE_PROFILED void start(TrialState& trial, const Placement& placement);
  PlacementRequest request() const;
  TUNE_PROFILED void housekeeping();
  TUNE_PROFILED void commit(Transaction& txn);
  TUNE_PROFILED void send(std::vector<Reply>& replies);
  void end_hung_trials(double now);
  void interrupt();
  // Ctrl-C or a signal has asked the driver to stop (it acts on it at the end
  // of the turn, in housekeeping()).
  bool interrupt_requested() const { return env_.interrupt && env_.interrupt->load() > 0; }
  void stop_and_requeue(const std::string& reason);
  TUNE_PROFILED void save_states(bool force);
  void drop_old_state_parts();
  TUNE_PROFILED void print_progress(bool final);
  std::optional<double> eta() const;
  void drain();

  // trial_events.cpp
  void handle(TrialEvent& event, std::vector<Reply>& replies);
  TrialState* current(const AttemptId& attempt);
  TUNE_PROFILED Verdict on_result(TrialState& trial, TrialEvent& event);
  TUNE_PROFILED void on_end(TrialState* trial, const TrialEvent& event);
  void record_checkpoint(TrialState& trial, const std::string& path);
  void note_plateaus(TrialState& trial, const Json& result);
  bool stop_criteria_met(const TrialState& trial, const Json& result) const;
  bool next_result_runs_ahead(const TrialState& trial) const;
  TrialDecision decide(const TrialState& trial, const Json& result);
  TrialDecision vetted(int64_t trial, TrialDecision decision) const;
  bool has_checkpoint(int64_t trial) const;
  std::optional<Checkpoint> donor_checkpoint(int64_t trial) const;
  bool running(const TrialState& trial) const { return lifecycle_.status(trial.index) == TrialStatus::kRunning; }
  void apply(TrialState& trial, const TrialDecision& decision);
  void leave_running(TrialState& trial);
  // The trial's status in the store, with its last result if the row lags.
  void set_status(TrialState& trial, const char* status, double unix_time, const std::string& error = "");
  void terminate(TrialState& trial);
  void settle(TrialState& trial);
  void pause(TrialState& trial);
  void exploit(TrialState& trial, const TrialDecision& decision);
  void exploit_copied(CheckpointCopier::Copy& done);
  void prune(const TrialState& trial);
  void requeue(TrialState& trial);
  // lost_hosts: the hosts blamed for a lost attempt; suspects: its hosts
  // when none could be blamed (each is checked).
  void fail(TrialState& trial, const std::string& message, bool host_lost = false,
            const std::vector<std::string>& lost_hosts = {}, const std::vector<std::string>& suspects = {});
  static constexpr int kMaxHostLossesPerTrial = 10;
  void attempt_ended(const TrialEvent& event);

  // driver_hosts.cpp: the hosts of a multi-host sweep over its life
  void preflight();
  void host_lost(const std::string& host);
  void suspect(const std::string& host);
  void hosts_housekeeping();
  // Nothing can start until a check answers: no host can run a trial and
  // the taken-out ones are being checked, or the hosts that can are
  // suspects whose checks are out (a sweep with trials left must not end
  // as finished meanwhile).
  bool waiting_for_hosts() const { return (no_hosts_since_ >= 0 || !suspects_.empty()) && !stopping_; }
  void clean_scratch();
  void host_requests();
  struct HostCheckState {
    double due = 0;    // clock_.now() of the next check; <0: in flight
    double delay = 0;  // since the last one; doubles after each failure
  };
  std::map<std::string, HostCheckState> host_checks_;  // excluded hosts waiting to be checked
  std::set<std::string> suspects_;  // hosts of a lost attempt that no one could blame: being checked
  double no_hosts_since_ = -1;  // no host can run a trial: checking the excluded ones once more
  bool no_hosts_left_ = false;  // ... and none came back: the sweep stops (NoHostsLeft)
  std::vector<std::string> check_paths_;  // what a host must have (data files, the command's program)
  std::map<std::string, Host> joining_;   // `tune hosts EXP add`: being checked before they join
  int64_t last_request_ = 0;              // host_request events are read after this event id
  double last_request_poll_ = 0, started_unix_ = 0;

  PreparedSweep sweep_;
  Json trial_setup_;  // sweep_.spec.setup(), made once: every TrialStart carries it
  RunConfig run_;
  bool resume_;
  DriverEnvironment env_;
  SystemClock system_clock_;
  const Clock& clock_;

  std::unique_ptr<Store> store_;
  ExperimentRecord experiment_;
  std::filesystem::path experiment_dir_;
  EventSink events_;
  // PBT exploits whose copy of the donor's checkpoint is being made, by
  // trial (Driver::exploit); the donors' folders being copied from (with how
  // many copies), and those of them pruned meanwhile (removed after).
  struct ExploitInFlight {
    int64_t donor = 0, donor_row = 0, restored = 0;
    double decided_at = 0;  // unix time
    std::string source;
    std::filesystem::path target;
    Json new_config;
  };
  std::unordered_map<int64_t, ExploitInFlight> exploits_in_flight_;
  std::unordered_map<std::string, int> copying_from_;
  std::set<std::string> remove_after_copy_;
  CheckpointCopier copier_{[this] { events_.wake(); }, env_.copy_checkpoint};
  std::unique_ptr<TrialExecutor> executor_;
  ResourcePool pool_;
  std::unique_ptr<LiveReport> report_;  // with run.report_path
  double last_iteration_s_ = INFINITY;  // time_this_iter_s of the latest result of any trial

  std::map<int64_t, TrialState> trials_;
  TrialStateMachine lifecycle_;          // each trial's status; retries, exploits and paused trials waiting
  std::map<AttemptId, Placement> live_;  // attempts started and not yet ended
  std::unordered_map<int64_t, int> live_attempts_;  // per trial, of live_: a hash look for the queue's busy test
  int64_t next_index_ = 0;
  int64_t searcher_state_saved_ = -1;  // next_index_ when the searcher's state was last saved
  bool state_changed_ = false;  // a pause/exploit in this batch: save scheduler state now
  bool stopping_ = false, interrupted_ = false;
  // stop.experiment_plateau: the best `top` values of its metric so far (best
  // first) and for how many results in a row they have been flat.
  std::vector<double> top_values_;
  int64_t flat_results_ = 0;
  bool launch_left_ = false;  // launch_ready() stopped at starts_per_turn with places left
  int started_this_turn_ = 0;
  double started_ = 0, last_progress_ = 0, last_state_save_ = 0;
  // clock_.now() at the end of the last turn, and at the end of the latest
  // turn that came over a second after the one before (the driver stood
  // still: a stopped process, a frozen VM): end_hung_trials() counts from it.
  double last_turn_end_ = 0, heard_nothing_until_ = -INFINITY;
  double last_state_save_cost_ = 0;  // seconds the last save of the scheduler's state took
  size_t unpacked_final_ = 0, packed_final_ = 0;  // final trials held as they are, and packed (settle())
  bool scheduler_state_stored_ = false;  // experiments.scheduler_state holds a state (later ones are parts)
  int64_t state_base_part_ = 0;    // the stored "base" part of a run of parts under way (0: none)
  int64_t drop_parts_before_ = 0;  // a finished run's base: the parts before it go, a few a turn
  // next_trial() / may_launch(): when every queued trial waited for its old attempt (kWait),
  // the lifecycle's version and attempts_ended_ then; unchanged, so is the answer.
  struct Waiting {
    uint64_t version = ~uint64_t{0};
    int64_t attempts_ended = -1;
  } waiting_;
  int64_t attempts_ended_ = 0;  // attempts ended so far
  std::optional<LeaseRecord> lease_;  // held while this driver runs the experiment
  double last_heartbeat_ = 0;
  bool lease_lost_ = false;
  bool hosts_changed_ = true;  // a host was taken out since launch_ready last checked
  size_t descriptor_cap_ = 0;  // trials at once when a start ran out of descriptors (0: none did)
  bool descriptors_told_ = false;
};

// The first non-finite metric in a result, if any.
std::string non_finite_metric(const Json& metrics);

}  // namespace tune::internal
