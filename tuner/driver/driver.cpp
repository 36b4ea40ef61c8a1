// The driver: opening a new or resumed experiment, launching trials on free
// slots, and the event loop that commits each batch before answering workers.
#include "tuner/driver/driver.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>

#include "base/error.h"
#include "base/names.h"
#include "base/options.h"
#include "base/process_limits.h"
#include "tuner/driver/driver_impl.h"
#include "tuner/driver/progress.h"
#include "tuner/exec/hosts.h"
#include "tuner/exec/profile.h"
#include "tuner/exec/session_base.h"
#include "tuner/exec/trial_processes.h"
#include "tuner/exec/transport.h"

namespace tune::internal {

std::atomic<int> g_interrupt_requests{0};

Driver::Driver(PreparedSweep sweep, RunConfig run, bool resume, DriverEnvironment env)
    : sweep_(std::move(sweep)),
      trial_setup_(sweep_.spec.setup()),
      run_(std::move(run)),
      resume_(resume),
      env_(std::move(env)),
      clock_(env_.clock ? *env_.clock : system_clock_),
      pool_(sweep_.hosts) {
  pool_.set_failure_limit(sweep_.spec.failure.max_host_failures);
}

Driver::~Driver() {
  if (executor_) {
    drain();
    executor_->shutdown();
  }
  release_lease();
}

// Ends what still runs after an exception left the loop: live attempts are
// cancelled until none is left (bounded: the executor abandons what does not
// stop). Results that arrive meanwhile are dropped without an answer: they
// are not stored, so no trial may be told anything about them (an answer is
// an acknowledgement, TUNE_ACK_LOG). An in-process trial sees its answer
// broken and stops; a worker group is ended by the cancel.
void Driver::drain() {
  for (const auto& [attempt, placement] : live_) executor_->cancel(attempt, "the driver is stopping");
  const double deadline = system_clock_.now() + 30;
  while (executor_->live() > 0 && system_clock_.now() < deadline) {
    events_.take(std::chrono::milliseconds(10));  // dropped, replies uncalled
    executor_->poll();
  }
}

// Everything that can refuse the sweep (no address toward the hosts, a host
// that cannot run tune) comes before the store is touched: a refused run
// leaves nothing behind that would block its retry.
void Driver::open() {
  // Each running trial holds descriptors here (a command's pipes, a group's
  // mpirun, its connection, host watches): a few hundred trials pass the
  // usual soft limit of 1,024, and their starts failed as the trials' errors.
  raise_descriptor_limit(kDescriptorsWanted);
  SweepSpec& spec = sweep_.spec;
  if (!resume_ && spec.name.empty()) {
    spec.name = (spec.trainable.empty() ? std::string("experiment") : spec.trainable) + "-" +
                std::to_string(static_cast<long long>(clock_.unix_time()));
  }
  experiment_dir_ = std::filesystem::path(run_.storage_path) / spec.name;
  ExecutorContext context{spec, run_, sweep_.trainable, sweep_.function, experiment_dir_.string(),
                          sweep_.slots, pool_.single_host(), "", "", "", events_, clock_};
  if (!pool_.single_host()) listen_on_cluster(context);
  std::string kind = "custom";
  executor_ = env_.make_executor ? env_.make_executor(context) : make_executor(context, &kind);
  if (!pool_.single_host() && executor_->checks_hosts()) preflight();

  store_ = Store::open(run_.storage_path, false, run_.durability);
  store_->checkpoint_in_background();  // a commit never waits for a checkpoint
  if (resume_) {
    load_experiment();
  } else {
    create_experiment();
  }
  const Resources& r = spec.resources;
  Json started = {{"slots", sweep_.slots}, {"trial_slots", r.workers * r.cpus_per_worker}, {"executor", kind}};
  if (!pool_.single_host()) {
    Json hosts = Json::array();
    for (const Host& host : pool_.hosts()) hosts.push_back({{"name", host.name}, {"slots", host.slots}, {"gpus", host.gpus}});
    started["hosts"] = std::move(hosts);
  }
  started_unix_ = clock_.unix_time();
  store_->add_event(experiment_.id, std::nullopt, "started", started, started_unix_);
  if (!run_.report_path.empty()) {
    report_ = std::make_unique<LiveReport>(run_.storage_path, spec.name, run_.report_path,
                                           run_.report_interval_s, run_.verbose);
  }
  started_ = last_progress_ = clock_.now();
}

// Several hosts: the driver listens on the address it reaches the hosts
// from (or the interface the user named), never on a wildcard, and proves
// itself with the cluster key every host holds (made here on first use).
void Driver::listen_on_cluster(ExecutorContext& context) {
  std::string remote;
  for (const Host& host : pool_.hosts())
    if (!host.local && remote.empty()) remote = host.name;
  context.listen_address = run_.network_interface.empty() ? address_toward(remote) : interface_address(run_.network_interface);
  // Slurm node names this machine cannot resolve: Slurm knows their address.
  if (context.listen_address.empty() && run_.network_interface.empty() && std::getenv("SLURM_JOB_ID")) {
    if (const std::string address = slurm_node_address(remote); !address.empty())
      context.listen_address = address_toward(address);
  }
  if (context.listen_address.empty()) {
    throw ConfigError(run_.network_interface.empty()
                          ? "cannot find this machine's address toward host '" + remote + "' (name one with --network-interface)"
                          : "no IPv4 address on interface '" + run_.network_interface + "'");
  }
  context.network = network_of(context.listen_address);
  context.key_file = run_.secret_file.empty() ? default_cluster_key_path() : run_.secret_file;
  if (run_.secret_file.empty() && !std::filesystem::exists(context.key_file)) {
    write_cluster_key(context.key_file);
    std::cerr << "tune: made a cluster key at " << context.key_file
              << " (mode 0600): every host needs the same file at the same path; it never crosses the network\n";
  }
  try {
    (void)read_cluster_key(context.key_file);
  } catch (const Error& e) {
    throw ConfigError(std::string(e.what()) + " (--secret-file, docs/CLUSTER.md)");
  }
}

void Driver::create_experiment() {
  SweepSpec& spec = sweep_.spec;
  const double now = clock_.unix_time();
  if (store_->find_experiment(spec.name)) {
    throw ConfigError("experiment '" + spec.name + "' already exists in " + run_.storage_path +
                      " (continue it with `tune resume " + spec.name + "` or pick another --name)");
  }
  experiment_.name = spec.name;
  experiment_.status = "RUNNING";
  experiment_.metric = spec.metric;
  experiment_.mode = spec.mode;
  experiment_.spec = spec.to_json();
  experiment_.created_at = experiment_.updated_at = now;
  experiment_.id = store_->create_experiment(experiment_);
  take_lease();
  std::filesystem::create_directories(experiment_dir_);
}

// Rebuilds every trial from the store: finished ones are kept, the others
// restart from their latest checkpoint (PAUSED ones wait for the scheduler).
void Driver::load_experiment() {
  auto found = store_->find_experiment(sweep_.spec.name);
  if (!found) throw NotFoundError("no experiment named '" + sweep_.spec.name + "' in " + run_.storage_path);
  experiment_ = *found;
  take_lease();  // before anything changes: another driver may be running it
  std::filesystem::create_directories(experiment_dir_);
  store_->set_experiment_status(experiment_.id, "RUNNING");
  Scheduler& scheduler = *sweep_.scheduler;
  const bool restored_scheduler = !experiment_.scheduler_state.is_null();
  if (restored_scheduler) {
    scheduler.restore_state(experiment_.scheduler_state);
    for (const Json& part : store_->scheduler_state_parts(experiment_.id)) scheduler.restore_state(part);
  }
  scheduler_state_stored_ = restored_scheduler;
  // A driver that died left unfinished trials' rows up to
  // TrialState::kRowRefreshS behind their results.
  store_->refresh_last_results(experiment_.id);
  std::vector<Observation> observations;
  std::map<int64_t, int64_t> exploits;  // trial row -> exploits so far
  for (const ExploitRecord& exploit : store_->exploits(experiment_.id)) exploits[exploit.trial_id] += 1;
  for (const TrialRecord& record : store_->trials(experiment_.id)) {
    TrialState trial;
    trial.index = record.trial_index;
    trial.row = record.id;
    trial.config = record.config;
    trial.attempt = record.attempts;
    trial.last_result = record.last_result;
    trial.error = record.error;
    trial.time_before_attempt = json_field(trial.last_result, "time_total_s", 0.0);
    auto checkpoints = store_->checkpoints(record.id);
    if (!checkpoints.empty()) trial.checkpoint = Checkpoint{checkpoints.back().path, checkpoints.back().iteration};
    trial.iteration = trial.checkpoint ? trial.checkpoint->iteration : 0;
    trial.exploits = exploits[record.id];
    next_index_ = std::max(next_index_, record.trial_index + 1);
    const std::optional<TrialStatus> status = parse_trial_status(record.status);
    if (!status) throw Error("trial " + std::to_string(record.trial_index) + " of '" + sweep_.spec.name +
                             "' has an unknown status '" + record.status + "'");
    if (is_final(*status)) {
      lifecycle_.add(trial.index, *status);
      observations.push_back({record.trial_index, record.config, record.last_result, *status == TrialStatus::kError});
      settle(trial);
    } else {
      // Searchers count it as pending (it is re-run with this config).
      observations.push_back({record.trial_index, record.config, record.last_result, false, true});
      if (restored_scheduler) {
        scheduler.on_trial_restored(trial.index, trial.config);  // known, with the config it may have saved before an exploit
      } else {
        scheduler.on_trial_add(trial.index, trial.config);
      }
      if (trial.checkpoint) scheduler.on_checkpoint(trial.index, trial.checkpoint->iteration);
      // A PAUSED trial waits for the scheduler; any other restarts.
      lifecycle_.add(trial.index, *status == TrialStatus::kPaused ? TrialStatus::kPaused : TrialStatus::kPending,
                     /*queued=*/true);
    }
    trials_.emplace(trial.index, std::move(trial));
  }
  sweep_.searcher->restore(next_index_, observations);
  store_->add_event(experiment_.id, std::nullopt, "resumed",
                    {{"restarting", lifecycle_.queued_count()}, {"suggested", next_index_}}, clock_.unix_time());
}

PlacementRequest Driver::request() const {
  const Resources& r = sweep_.spec.resources;
  return {r.workers, r.cpus_per_worker, r.gpus_per_worker,
          r.placement == "spread" ? PlacementPolicy::kSpread : PlacementPolicy::kPack};
}

// Whether launch_ready() may start anything: a free place, and a queue not known
// to wait on attempts that are still ending. Queued trials that all wait for
// their old attempts still do, until an attempt ends or the lifecycle changes
// (next_trial() records when): no need to look through them again (many
// exploits in flight made that look the driver's largest cost).
bool Driver::may_launch() const {
  const int limit = sweep_.spec.max_concurrent_trials;
  return !stopping_ && !interrupt_requested() && pool_.fits(request()) &&
         (limit == 0 || static_cast<int>(live_.size()) < limit) &&
         (descriptor_cap_ == 0 || live_.size() < descriptor_cap_) &&
         !(waiting_.version == lifecycle_.version() && waiting_.attempts_ended == attempts_ended_);
}

void Driver::launch_ready() {
  profile::Scope timed(profile::Part::kLaunch);
  launch_left_ = false;
  while (may_launch()) {
    if (started_this_turn_ >= std::max(1, env_.starts_per_turn)) {  // the rest next turn, which then does not wait
      launch_left_ = true;
      return;
    }
    std::optional<int64_t> index = next_trial();
    if (!index) break;
    start(trials_.at(*index), *pool_.acquire(request()));
    started_this_turn_ += 1;
  }
}

// The trial to start next: a retry or exploit, else a paused trial the
// scheduler picks, else a new one from the searcher. A trial whose previous
// attempt is still ending waits for it. Called only when may_launch().
std::optional<int64_t> Driver::next_trial() {
  auto attempt_live = [this](int64_t index) {
    return live_attempts_.count(index) > 0 || exploits_in_flight_.count(index) > 0;  // an exploit's copy: busy too
  };
  auto apply_to = [this](int64_t index, const TrialDecision& decision) { apply(trials_.at(index), decision); };
  auto checkpointed = [this](int64_t index) { return has_checkpoint(index); };
  while (true) {
    const TrialStateMachine::Next next = lifecycle_.next(*sweep_.scheduler, attempt_live, apply_to, checkpointed);
    if (next.kind == TrialStateMachine::Next::kStart) return next.trial;
    if (next.kind == TrialStateMachine::Next::kWait) waiting_ = {lifecycle_.version(), attempts_ended_};
    if (next.kind == TrialStateMachine::Next::kNone || next.kind == TrialStateMachine::Next::kWait) return std::nullopt;
    std::optional<Json> config;
    {
      profile::Scope timed(profile::Part::kSuggest);
      config = sweep_.searcher->suggest(next_index_);
    }
    if (!config) {
      lifecycle_.no_more_trials(*sweep_.scheduler);  // then look again
      continue;
    }
    profile::Scope timed(profile::Part::kAddTrial);
    TrialState trial;
    trial.index = next_index_++;
    trial.config = std::move(*config);
    // Its row is written by start(), which follows at once in this batch:
    // inserted RUNNING, rather than PENDING and then updated.
    sweep_.scheduler->on_trial_add(trial.index, trial.config);
    lifecycle_.add(trial.index);
    const int64_t index = trial.index;
    trials_.emplace(index, std::move(trial));
    return index;
  }
}

// The attempt starts first and its rows follow in the same transaction (it
// commits before the trial can learn anything): a trial waits only for what
// it needs.
void Driver::start(TrialState& trial, const Placement& placement) {
  profile::Scope timed(profile::Part::kStart);
  const double now = clock_.now();
  trial.attempt += 1;
  lifecycle_.start(trial.index);
  trial.attempt_started = trial.last_report = now;
  trial.iteration = trial.checkpoint ? trial.checkpoint->iteration : 0;
  const AttemptId attempt{trial.index, trial.attempt};
  live_[attempt] = placement;
  live_attempts_[trial.index] += 1;

  TrialStart start;
  start.experiment = sweep_.spec.name;
  start.trainable = sweep_.spec.trainable;
  start.trial_index = trial.index;
  start.trial_dir = (experiment_dir_ / trial_folder_name(trial.index)).string();
  start.config = trial.config;
  start.iteration = trial.iteration;
  start.exploits = trial.exploits;
  start.checkpoint = trial.checkpoint;
  start.cpus = sweep_.spec.resources.cpus_per_worker;
  start.setup = trial_setup_;
  start.run_ahead = next_result_runs_ahead(trial);
  // The executor makes the trial's folder where the trial runs (the trial's
  // own thread, the worker on its host): a mkdir costs the driver's loop more
  // than the rest of a start, and a trial on another host needs none here.
  executor_->start(attempt, std::move(start), placement);

  if (trial.row == 0) {  // a new trial (next_trial()): its first row
    trial.row = store_->add_started_trial(experiment_.id, trial.index, trial.config, clock_.unix_time());
  } else {
    set_status(trial, kRunning, clock_.unix_time());
  }
  trial.row_saved_at = clock_.now();  // its results reach the row from kRowRefreshS on
  Json hosts = Json::array();
  for (const auto& share : placement.hosts) hosts.push_back(share.host.empty() ? std::string("localhost") : share.host);
  store_->add_event(experiment_.id, trial.row, "trial_started",
                    {{"attempt", trial.attempt}, {"iteration", trial.iteration}, {"host", hosts.empty() ? Json("") : hosts[0]},
                     {"hosts", hosts}},
                    clock_.unix_time());
}

bool Driver::step(std::chrono::microseconds max_wait) {
  started_this_turn_ = 0;
  launch_left_ = false;  // set again by a launch_ready() of this turn that stops at the cap
  // While every place is taken (most turns of a busy sweep) no transaction at all.
  if (may_launch()) {
    Transaction txn(*store_);
    hold_lease();
    launch_ready();
    commit(txn);
  }
  // launch_ready() started whatever could start; with nothing running,
  // nothing ever will (searcher done, or the scheduler holds the rest),
  // unless hosts taken out are being checked again or an exploit's copy is
  // being made.
  if (live_.empty() && exploits_in_flight_.empty() && !waiting_for_hosts()) return false;

  std::deque<TrialEvent> events;
  {
    profile::Scope timed(profile::Part::kWait);
    events = events_.take(launch_left_ ? std::chrono::microseconds(0) : max_wait);
  }
  {
    profile::Scope timed(profile::Part::kPoll);
    executor_->poll();
  }
  // A stop asked for before these events are handled comes first: a batch
  // job's end signals every process of the job at once, so a group that died
  // meanwhile died of the same stop; its failure is then a stale event.
  if (interrupt_requested() && !stopping_) interrupt();
  std::vector<CheckpointCopier::Copy> copies;
  if (!exploits_in_flight_.empty()) copies = copier_.take();
  if (!events.empty() || !copies.empty()) {
    std::vector<Reply> replies;
    Transaction txn(*store_);
    hold_lease();
    for (CheckpointCopier::Copy& copy : copies) exploit_copied(copy);
    for (TrialEvent& event : events) handle(event, replies);
    launch_ready();  // start successors in the same commit
    save_states(false);
    commit(txn);
    // Only now, with the batch durable, do trials learn the verdicts.
    send(replies);
  }
  housekeeping();
  return true;
}

// A commit that found the store locked for the whole busy timeout (a reader
// holding a transaction open on a store with the rollback journal, another
// writer) is tried again until it goes through: the batch's results were
// not acknowledged yet, and a reader must not end the sweep. Said once; an
// interrupt ends the wait.
void Driver::commit(Transaction& txn) {
  profile::Scope timed(profile::Part::kCommit);
  for (bool told = false;;) {
    try {
      txn.commit();
      return;
    } catch (const StoreBusyError& e) {
      if (interrupt_requested()) throw;
      if (!told) {
        std::cerr << "tune: the store " << run_.storage_path
                  << " stays locked by another process (a reader holding a transaction open?): waiting for it ("
                  << e.what() << ")\n";
        told = true;
      }
    }
  }
}

void Driver::send(std::vector<Reply>& replies) {
  profile::Scope timed(profile::Part::kReply);
  for (auto& [reply, verdict] : replies) {
    if (reply) reply(verdict);
  }
}

void Driver::housekeeping() {
  profile::Scope timed(profile::Part::kHousekeeping);
  const double now = clock_.now();
  // A driver that did not run for a while (Ctrl-Z then `fg`, a debugger, a VM
  // its host froze, a turn that took long) heard nothing meanwhile: its
  // trials' silence then says nothing about them.
  constexpr double kStallS = 1.0;
  if (last_turn_end_ > 0 && now - last_turn_end_ > kStallS) heard_nothing_until_ = now;
  last_turn_end_ = now;
  if (sweep_.spec.failure.result_timeout_s) end_hung_trials(now);
  if (!pool_.single_host()) hosts_housekeeping();
  renew_lease();
  if (interrupt_requested() && !stopping_) interrupt();
  if (sweep_.spec.stop.time_budget_s && now - started_ >= *sweep_.spec.stop.time_budget_s && !stopping_) {
    stopping_ = true;  // running trials end at their next result
    store_->add_event(experiment_.id, std::nullopt, "time_budget_reached", {{"seconds", now - started_}},
                      clock_.unix_time());
  }
  if (run_.verbose && now - last_progress_ >= run_.progress_interval_s) {
    print_progress(false);
    last_progress_ = now;
  }
  if (report_) report_->tick(now);
}

// A trial silent for longer than failure.result_timeout_s fails (and is
// retried per max_failures); its attempt is cancelled (a whole group is
// killed; an in-process one is abandoned after the executor's grace). Its
// silence counts from its last result or from the end of the driver's own
// latest stall (housekeeping()), whichever is later.
void Driver::end_hung_trials(double now) {
  const double timeout = *sweep_.spec.failure.result_timeout_s;
  std::vector<AttemptId> hung;
  for (const auto& [attempt, placement] : live_) {
    TrialState* trial = current(attempt);
    if (trial && now - std::max(trial->last_report, heard_nothing_until_) > timeout) hung.push_back(attempt);
  }
  if (hung.empty()) return;
  Transaction txn(*store_);
  for (const AttemptId& attempt : hung) {
    TrialState& trial = trials_.at(attempt.trial);
    fail(trial, "no result for " + short_number(timeout) + " s (failure.result_timeout_s); the trial was stopped");
  }
  commit(txn);
  for (const AttemptId& attempt : hung) executor_->cancel(attempt, TrialExecutor::kCancelHung);
}

// Ctrl-C: running trials go back to PENDING (`tune resume` restarts them
// from their checkpoints) and their attempts are cancelled.
void Driver::interrupt() {
  if (run_.verbose)
    std::cerr << "tune: interrupted; stopping trials (resume with `tune resume " << sweep_.spec.name << "`)\n";
  stop_and_requeue("interrupted");
}

// Ends the sweep as interrupted: running trials go back to PENDING and their
// attempts are cancelled.
void Driver::stop_and_requeue(const std::string& reason) {
  stopping_ = interrupted_ = true;
  Transaction txn(*store_);
  for (auto& [index, trial] : trials_)
    if (running(trial)) requeue(trial);
  commit(txn);
  for (const auto& [attempt, placement] : live_) executor_->cancel(attempt, reason);
}

// Scheduler state (rungs, pauses, lineage) for `tune resume`: saved with the
// batch at most once a second, and at the end. A scheduler that saves by
// parts (ASHA) appends what changed; one that cannot is saved whole, and its
// state grows with the trials.
void Driver::save_states(bool force) {
  profile::Scope timed(profile::Part::kStateSave);
  const double now = clock_.now();
  // A pause is saved with its batch: a restored scheduler must know every
  // trial the store shows PAUSED (e.g. its ASHA rung), or it is orphaned
  // (Scheduler::save_state_part_for_pause). An exploit is not: a resume hands
  // each trial its stored config (Scheduler::on_trial_restored).
  // Otherwise at most once a second, and a whole state no more often than
  // keeps the saves under ~5 % of the driver's time (a sweep of a million
  // trials must not spend its loop writing it; Ray adapts its experiment
  // checkpoints so).
  // A save only to keep the stored state recent takes at most
  // kStatePartEntries of what changed (a PBT population of 10,000 reporting
  // each second changes every member between two saves: ~20 ms to save at
  // once, a stall of every answer of that turn); the rest follows over the
  // next turns.
  Scheduler& scheduler = *sweep_.scheduler;
  const double interval = std::max(1.0, 19 * last_state_save_cost_);
  const bool pending = scheduler.state_part_pending();
  if (!force && !state_changed_ && !pending && now - last_state_save_ < interval) {
    drop_old_state_parts();
    return;
  }
  const bool whole_part = state_changed_;
  state_changed_ = false;
  if (!pending) {  // the rest of a periodic save is not a save of its own
    last_state_save_ = now;
    // Only when it moved: it rewrites the experiment's row, which holds the
    // scheduler's first part (~1 MB at 10,000 PBT members: 5-14 ms a second).
    if (next_index_ != searcher_state_saved_) {
      store_->set_searcher_state(experiment_.id, {{"suggested", next_index_}});
      searcher_state_saved_ = next_index_;
    }
  }
  // At the end the whole state replaces the parts: one row to read back.
  std::optional<Json> part = force        ? std::nullopt
                             : whole_part ? scheduler.save_state_part_for_pause(kStatePartEntries)
                                          : scheduler.save_state_part_up_to(kStatePartEntries);
  if (!part) {
    store_->set_scheduler_state(experiment_.id, scheduler.save_state());
    if (force) scheduler.save_state_part();  // the parts start again from here
    scheduler_state_stored_ = true;
  } else if (!part->is_null()) {
    if (scheduler_state_stored_) {
      const int64_t id = store_->add_scheduler_state_part(experiment_.id, *part);
      // A run of parts that holds everything the parts before it held
      // (Scheduler::save_state_part): those go once its last is stored.
      if (part->value("base", false)) state_base_part_ = id;
      if (part->value("rebased", false) && state_base_part_ > 0) {
        drop_parts_before_ = state_base_part_;
        state_base_part_ = 0;
      }
    } else {
      store_->set_scheduler_state(experiment_.id, *part);  // the first part
      scheduler_state_stored_ = true;
    }
  }
  drop_old_state_parts();
  last_state_save_cost_ = clock_.now() - now;
}

// The parts before a finished run of parts that holds everything they held
// (Scheduler::save_state_part's "base"): a few a turn, oldest first (each
// may hold 1,000 PBT members); a state restored meanwhile is the same.
void Driver::drop_old_state_parts() {
  constexpr int64_t kPerTurn = 8;
  if (drop_parts_before_ > 0 &&
      store_->drop_scheduler_state_parts_before(experiment_.id, drop_parts_before_, kPerTurn) < kPerTurn)
    drop_parts_before_ = 0;
}

void Driver::finish() {
  // A signal after the loop's last look still interrupts the sweep: the CLI
  // exits 130 exactly when the store says INTERRUPTED.
  if (interrupt_requested()) interrupted_ = true;
  Transaction txn(*store_);
  hold_lease();
  for (auto& [index, trial] : trials_) {
    if (running(trial)) {
      requeue(trial);  // abandoned: resumable
    } else if (lifecycle_.status(index) == TrialStatus::kPaused && !interrupted_) {
      terminate(trial);  // the sweep is over: never promoted
    }
  }
  save_states(true);
  const double now = clock_.unix_time();
  store_->set_experiment_status(experiment_.id, interrupted_ ? "INTERRUPTED" : "FINISHED");
  store_->add_event(experiment_.id, std::nullopt, interrupted_ ? "interrupted" : "finished", Json::object(), now);
  commit(txn);
  clean_scratch();
  executor_->shutdown();
  executor_.reset();
  release_lease();
  if (report_) report_->finish();  // shows the end: the open page stops reloading
  if (run_.verbose) print_progress(true);
  if (no_hosts_left_) {
    throw NoHostsLeft("no host left that can run a trial of " + sweep_.spec.name + " (taken out: " +
                      join_names(pool_.excluded()) + "; each was checked again and failed): the experiment is "
                      "INTERRUPTED; `tune resume " + sweep_.spec.name + "` once the hosts are back");
  }
}

namespace {
// A write that failed for want of space: the store's and checkpoints'
// DiskFullError, or a std::filesystem / system error saying so.
bool disk_full(const std::exception& e) {
  if (dynamic_cast<const DiskFullError*>(&e)) return true;
  const auto* system = dynamic_cast<const std::system_error*>(&e);
  return system && is_disk_full(system->code());
}

// After a write failed for want of space: the experiment is INTERRUPTED
// (`tune status` must not say RUNNING with no driver). The store freed the
// room it keeps for this (tune.db-reserve) when its write failed; a second
// try covers a failure that was not the store's (a checkpoint's folder).
void record_disk_full_stop(Store& store, int64_t experiment_id, double now) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      Transaction txn(store);
      store.set_experiment_status(experiment_id, "INTERRUPTED");
      store.add_event(experiment_id, std::nullopt, "disk_full", Json::object(), now);
      txn.commit();
      return;
    } catch (const std::exception&) {
    }
  }
}
}  // namespace

std::string Driver::run() {
  try {
    open();
    // Programs a dead driver's trials left running (its records, their
    // cgroups, TUNE_TRIAL_DIR): ended before any trial starts again.
    if (resume_) end_leftover_processes_of_experiment(experiment_dir_.string());
    while (step(std::chrono::milliseconds(50))) {
    }
    finish();
    profile::write_if_enabled();
  } catch (const std::exception& e) {
    // A write that did not commit was not acknowledged: the store holds every
    // result a trial was told about, and `tune resume` goes on from there.
    if (!disk_full(e)) throw;
    if (store_ && experiment_.id > 0 && !lease_lost_) record_disk_full_stop(*store_, experiment_.id, clock_.unix_time());
    throw Error("the disk holding " + run_.storage_path + " is full (" + e.what() +
                "); the sweep stopped with every acknowledged result stored: free space, then `tune resume " +
                sweep_.spec.name + " --storage " + run_.storage_path + "`");
  }
  return sweep_.spec.name;
}

constexpr size_t kProgressRows = 20;  // trials the progress table lists

void Driver::print_progress(bool final) {
  profile::Scope timed(profile::Part::kProgress);
  const std::string& metric = sweep_.spec.metric;
  std::vector<ProgressRow> rows;
  std::vector<const TrialState*> packed(trials_.size(), nullptr);
  rows.reserve(trials_.size());
  // Every row holds only its metric (what ranks it); the rows the table
  // shows get their config and result below. Copying every trial's (a PBT
  // population of 10,000) held the loop for ~80 ms.
  for (const auto& [index, trial] : trials_) {
    ProgressRow row{index, status_name(lifecycle_.status(index)), Json(), Json(), trial.error};
    packed[rows.size()] = &trial;
    if (trial.packed.empty()) {
      if (!metric.empty() && trial.last_result.is_object()) {
        if (auto it = trial.last_result.find(metric); it != trial.last_result.end()) row.last_result = {{metric, *it}};
      }
    } else if (!metric.empty() && !std::isnan(trial.packed_metric)) {
      row.last_result = {{metric, trial.packed_metric}};
    }
    rows.push_back(std::move(row));
  }
  std::vector<size_t> shown = progress_order(metric, sweep_.spec.mode, rows, kProgressRows);
  shown.push_back(0);  // the first row names the parameter columns when nothing is sampled
  for (size_t i : shown) {
    if (i >= rows.size() || !packed[i]) continue;
    const TrialState& trial = *packed[i];
    if (trial.packed.empty()) {
      rows[i].config = trial.config;
      rows[i].last_result = trial.last_result;
    } else {
      TrialRecordView view = unpacked(trial);
      rows[i].config = std::move(view.config);
      rows[i].last_result = std::move(view.last_result);
    }
    packed[i] = nullptr;
  }
  std::vector<std::string> sampled;
  for (const auto& parameter : sweep_.spec.param_space.parameters()) sampled.push_back(parameter.path);
  // A multi-objective sweep shows every objective (ordered by the first).
  std::vector<std::string> more_metrics;
  for (size_t i = 1; i < sweep_.spec.objectives.size(); ++i) more_metrics.push_back(sweep_.spec.objectives[i].metric);
  std::cout << render_progress(sweep_.spec.name, sweep_.spec.metric, sweep_.spec.mode, rows, clock_.now() - started_,
                               pool_.used(), pool_.total(), final, sampled, kProgressRows, eta(), more_metrics);
  if (const auto excluded = pool_.excluded(); !excluded.empty())
    std::cout << "hosts taken out after repeated losses: " << join_names(excluded) << "\n";
  std::cout << std::flush;
}

std::optional<double> Driver::eta() const {
  EtaInput in;
  in.total_trials = sweep_.searcher->total();
  const Resources& r = sweep_.spec.resources;
  in.concurrency = std::max(1, pool_.total() / std::max(1, r.workers * r.cpus_per_worker));
  if (sweep_.spec.max_concurrent_trials > 0) in.concurrency = std::min(in.concurrency, sweep_.spec.max_concurrent_trials);
  const double now = clock_.now();
  for (const auto& [index, trial] : trials_) {
    const double run_time = trial.time_before_attempt + (running(trial) ? now - trial.attempt_started : 0);
    if (is_final(lifecycle_.status(index))) {
      in.finished_s.push_back(run_time);
    } else {
      in.running_s.push_back(run_time);
    }
  }
  if (sweep_.spec.stop.time_budget_s) in.budget_left = *sweep_.spec.stop.time_budget_s - (now - started_);
  return estimate_eta(in);
}

std::vector<TrialOutcome> Driver::take_outcomes() {
  std::vector<TrialOutcome> out;
  out.reserve(trials_.size());
  for (auto& [index, trial] : trials_) {
    TrialRecordView view = trial.packed.empty() ? TrialRecordView{std::move(trial.config), std::move(trial.last_result)}
                                                : unpacked(trial);
    out.push_back({index, trial.row, status_name(lifecycle_.status(index)), std::move(view.config),
                   std::move(view.last_result), std::move(trial.error)});
  }
  trials_.clear();
  return out;
}

std::string run_experiment(PreparedSweep sweep, const RunConfig& run, bool resume, DriverEnvironment env) {
  return run_sweep(std::move(sweep), run, resume, std::move(env)).name;
}

SweepOutcome run_sweep(PreparedSweep sweep, const RunConfig& run, bool resume, DriverEnvironment env) {
  Driver driver(std::move(sweep), run, resume, std::move(env));
  SweepOutcome outcome;
  outcome.name = driver.run();
  outcome.trials = driver.take_outcomes();
  return outcome;
}

}  // namespace tune::internal
