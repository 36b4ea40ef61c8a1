// The driver: setup (new or resumed experiment), launching trials on free
// slots, and the event loop that commits each batch before answering workers.
#include "tuner/driver.h"

#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>

#include "tuner/driver_impl.h"
#include "tuner/error.h"
#include "tuner/progress.h"

namespace tune::internal {

std::atomic<int> g_interrupt_requests{0};

void Driver::open() {
  preflight(spec_, run_, function_, scheduler_ != nullptr);
  registered_ = resolve_trainable(spec_, function_);
  in_process_ = function_ || (registered_->info.in_process && spec_.resources.workers == 1 &&
                              !spec_.resources.use_mpi);
  slots_ = available_slots(run_);
  slots_per_trial_ = spec_.resources.workers * spec_.resources.cpus_per_worker;

  store_ = Store::open(run_.storage_path, false, run_.durability);
  const double now = now_seconds();
  if (resume_) {
    auto found = store_->find_experiment(spec_.name);
    if (!found) throw NotFoundError("no experiment named '" + spec_.name + "' in " + run_.storage_path);
    experiment_ = *found;
    store_->set_experiment_status(experiment_.id, "RUNNING");
  } else {
    if (spec_.name.empty()) {
      spec_.name = (spec_.trainable.empty() ? std::string("experiment") : spec_.trainable) + "-" +
                   std::to_string(static_cast<long long>(now));
    }
    check_experiment_name(spec_.name);
    if (store_->find_experiment(spec_.name)) {
      throw Error("experiment '" + spec_.name + "' already exists in " + run_.storage_path +
                  " (continue it with `tune resume " + spec_.name + "` or pick another --name)");
    }
    if (!spec_.search.seed) spec_.search.seed = std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
    experiment_.name = spec_.name;
    experiment_.status = "RUNNING";
    experiment_.metric = spec_.metric;
    experiment_.mode = spec_.mode;
    experiment_.spec = spec_.to_json();
    experiment_.created_at = experiment_.updated_at = now;
    experiment_.id = store_->create_experiment(experiment_);
  }
  experiment_dir_ = fs::path(run_.storage_path) / spec_.name;
  fs::create_directories(experiment_dir_);

  searcher_ = make_searcher(spec_.search_options(), spec_.param_space, spec_.num_samples, spec_.points_to_evaluate);
  if (!scheduler_) scheduler_ = make_scheduler(spec_.scheduler.type, spec_.scheduler.params, spec_.metric, spec_.mode);
  if (!experiment_.scheduler_state.is_null()) scheduler_->restore_state(experiment_.scheduler_state);

  if (resume_) {
    std::vector<Observation> observations;
    for (const TrialRecord& record : store_->trials(experiment_.id)) {
      TrialState trial;
      trial.index = record.trial_index;
      trial.row = record.id;
      trial.config = record.config;
      trial.status = record.status;
      trial.attempt = record.attempts;
      trial.last_result = record.last_result;
      trial.error = record.error;
      if (trial.last_result.is_object()) trial.time_before_attempt = trial.last_result.value("time_total_s", 0.0);
      auto checkpoints = store_->checkpoints(record.id);
      if (!checkpoints.empty()) {
        const auto& latest = checkpoints.back();
        trial.checkpoint = Checkpoint{latest.path, latest.iteration};
      }
      trial.iteration = trial.checkpoint ? trial.checkpoint->iteration : 0;
      next_index_ = std::max(next_index_, record.trial_index + 1);
      if (record.status == kTerminated || record.status == kError) {
        observations.push_back({record.trial_index, record.config, record.last_result, record.status == kError});
      } else {
        // Searchers count it as pending (it is re-run with this config).
        observations.push_back({record.trial_index, record.config, record.last_result, false, true});
        // A restored scheduler state already knows its trials.
        if (experiment_.scheduler_state.is_null()) scheduler_->on_trial_add(trial.index, trial.config);
        if (trial.checkpoint) scheduler_->on_checkpoint(trial.index, trial.checkpoint->iteration);
        if (record.status == kPaused) {
          paused_.insert(trial.index);
        } else {
          trial.status = kPending;
          pending_.push_back(trial.index);
        }
      }
      trials_.emplace(trial.index, std::move(trial));
    }
    searcher_->restore(next_index_, observations);
    store_->add_event(experiment_.id, std::nullopt, "resumed",
                      {{"restarting", pending_.size()}, {"suggested", next_index_}}, now);
  }

  if (in_process_) {
    threads_ = std::make_unique<InProcessExecutor>(events_, std::max(1, slots_ / slots_per_trial_));
  } else {
    GroupLaunchOptions options;
    options.executable = run_.worker_executable;
    options.log_dir = (experiment_dir_ / "logs").string();
    fs::create_directories(options.log_dir);
    if (const char* extra = std::getenv("TUNE_MPIRUN_ARGS")) {
      std::istringstream words(extra);
      for (std::string word; words >> word;) options.extra_mpirun_args.push_back(word);
    }
    groups_ = std::make_unique<WorkerGroupPool>(events_, options);
    groups_->set_idle_rank_limit(slots_);
  }
  started_ = last_progress_ = now_seconds();
}

bool Driver::launch_ready() {
  bool launched = false;
  while (!stopping_ && used_slots_ + slots_per_trial_ <= slots_ &&
         (spec_.max_concurrent_trials == 0 || running_ < spec_.max_concurrent_trials)) {
    int64_t index;
    std::optional<int64_t> resumed;
    if (pending_.empty() && !paused_.empty()) {
      resumed = scheduler_->choose_trial_to_run(std::vector<int64_t>(paused_.begin(), paused_.end()));
      if (resumed && !paused_.erase(*resumed)) resumed.reset();  // not a paused trial: ignore
      if (resumed) {
        // The scheduler may end the chosen trial (HyperBand's losers) or
        // exploit it (synchronous PBT) instead of resuming it as it is.
        TrialState& trial = trials_.at(*resumed);
        TrialDecision decision = scheduler_->on_trial_resume(*resumed);
        if (decision.action == TrialAction::kStop) {
          terminate(trial, now_seconds());
          continue;
        }
        if (decision.action == TrialAction::kExploit) {
          auto donor = trials_.find(decision.donor);
          if (donor != trials_.end() && donor->second.checkpoint && decision.donor != *resumed) {
            exploit(trial, decision);  // queues it first in pending_
            continue;
          }
        }
      }
    }
    if (!pending_.empty()) {
      index = pending_.front();
      pending_.pop_front();
    } else if (resumed) {
      index = *resumed;
    } else if (!searcher_done_ && scheduler_->can_start_new_trial()) {
      std::optional<Json> config = searcher_->suggest(next_index_);
      if (!config) {
        searcher_done_ = true;
        // Schedulers waiting for more trials (a HyperBand bracket that will
        // not fill up) decide with what they have; then look again.
        scheduler_->on_no_more_trials();
        continue;
      }
      index = next_index_++;
      TrialState trial;
      trial.index = index;
      trial.config = std::move(*config);
      trial.row = store_->add_trial(experiment_.id, index, trial.config);
      scheduler_->on_trial_add(index, trial.config);
      trials_.emplace(index, std::move(trial));
    } else {
      break;
    }
    start(trials_.at(index));
    launched = true;
  }
  return launched;
}

void Driver::start(TrialState& trial) {
  const double now = now_seconds();
  trial.attempt += 1;
  trial.status = kRunning;
  trial.attempt_started = trial.last_report = now;
  trial.iteration = trial.checkpoint ? trial.checkpoint->iteration : 0;
  store_->set_trial_status(trial.row, kRunning, now);
  used_slots_ += slots_per_trial_;
  running_ += 1;

  TrialStart start;
  start.experiment = spec_.name;
  start.trainable = spec_.trainable;
  start.trial_index = trial.index;
  start.trial_dir = (experiment_dir_ / trial_name(trial.index)).string();
  start.config = trial.config;
  start.iteration = trial.iteration;
  start.checkpoint = trial.checkpoint;
  start.cpus = spec_.resources.cpus_per_worker;
  start.setup = spec_.setup();
  fs::create_directories(start.trial_dir);
  if (threads_) {
    threads_->start(std::move(start), function_ ? function_ : registered_->function, trial.attempt);
  } else {
    groups_->start(std::move(start), spec_.resources.workers, trial.attempt);
  }
}

void Driver::loop() {
  using namespace std::chrono;
  std::vector<std::pair<std::function<void(const std::string&)>, std::string>> replies;
  while (true) {
    {
      Transaction txn(*store_);
      launch_ready();
      txn.commit();
    }
    // launch_ready() started whatever could start; with nothing running,
    // nothing ever will (searcher done, or the scheduler holds the rest).
    if (running_ == 0) break;

    auto events = events_.pop_all(milliseconds(50));
    if (groups_) groups_->poll_starting();
    if (!events.empty()) {
      Transaction txn(*store_);
      for (Event& event : events) handle(event, replies);
      launch_ready();  // start successors in the same commit
      save_states(false);
      txn.commit();
      // Only now, with the batch durable, do workers learn the decisions.
      for (auto& [reply, action] : replies) {
        if (reply) reply(action);
      }
      replies.clear();
    }

    const double now = now_seconds();
    if (g_interrupt_requests.load() > 0 && !stopping_) {
      stopping_ = interrupted_ = true;
      if (run_.verbose) std::cerr << "tune: interrupted; stopping trials (resume with `tune resume " << spec_.name << "`)\n";
    }
    if (spec_.stop.time_budget_s && now - started_ >= *spec_.stop.time_budget_s && !stopping_) {
      stopping_ = true;
      store_->add_event(experiment_.id, std::nullopt, "time_budget_reached", {{"seconds", now - started_}}, now);
    }
    if (stopping_ && interrupted_ && groups_) {
      // MPI trials may be inside a long step; don't wait for their next report.
      break;
    }
    if (run_.verbose && now - last_progress_ >= run_.progress_interval_s) {
      print_progress(false);
      last_progress_ = now;
    }
  }
}

// Scheduler state (rungs, pauses, lineage) for `tune resume`: saved with the
// batch at most once a second (its size grows with the trials), and at the end.
void Driver::save_states(bool force) {
  const double now = now_seconds();
  // A pause or exploit is saved with its batch: a restored scheduler must know
  // every trial the store shows PAUSED (e.g. its ASHA rung), or it is orphaned.
  if (!force && !state_changed_ && now - last_state_save_ < 1.0) return;
  state_changed_ = false;
  last_state_save_ = now;
  store_->set_searcher_state(experiment_.id, {{"suggested", next_index_}});
  store_->set_scheduler_state(experiment_.id, scheduler_->save_state());
}

void Driver::finish() {
  const double now = now_seconds();
  Transaction txn(*store_);
  for (auto& [index, trial] : trials_) {
    if (trial.status == kRunning) {  // abandoned by an interrupt: resumable
      trial.status = kPending;
      store_->set_trial_status(trial.row, kPending, now);
    } else if (trial.status == kPaused && !interrupted_) {
      terminate(trial, now);  // the sweep is over: never promoted
    }
  }
  save_states(true);
  store_->set_experiment_status(experiment_.id, interrupted_ ? "INTERRUPTED" : "FINISHED");
  store_->add_event(experiment_.id, std::nullopt, interrupted_ ? "interrupted" : "finished", Json::object(), now);
  txn.commit();
  groups_.reset();
  threads_.reset();
  if (run_.verbose) print_progress(true);
}

void Driver::print_progress(bool final) {
  std::vector<ProgressRow> rows;
  rows.reserve(trials_.size());
  for (const auto& [index, trial] : trials_) {
    rows.push_back({index, trial.status, trial.config, trial.last_result, trial.error});
  }
  std::vector<std::string> sampled;
  for (const auto& parameter : spec_.param_space.parameters()) sampled.push_back(parameter.path);
  std::cout << render_progress(spec_.name, spec_.metric, spec_.mode, rows, now_seconds() - started_,
                               used_slots_, slots_, final, sampled)
            << std::flush;
}

std::string run_experiment(SweepSpec spec, const RunConfig& run, TrainableFunction function, bool resume,
                           std::unique_ptr<Scheduler> scheduler) {
  Driver driver(std::move(spec), run, std::move(function), resume, std::move(scheduler));
  return driver.run();
}

}  // namespace tune::internal
