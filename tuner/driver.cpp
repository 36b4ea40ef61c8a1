#include "tuner/driver.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <random>
#include <thread>

#include "schedulers/scheduler.h"
#include "tuner/checkpoints.h"
#include "tuner/error.h"
#include "tuner/in_process_executor.h"
#include "tuner/progress.h"
#include "tuner/worker_group.h"

namespace tune::internal {

std::atomic<int> g_interrupt_requests{0};

namespace fs = std::filesystem;

namespace {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

int available_slots(const RunConfig& run) {
  if (run.slots > 0) return run.slots;
  unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

const RegisteredTrainable* resolve_trainable(const SweepSpec& spec, const TrainableFunction& function) {
  if (function) return nullptr;
  if (spec.trainable.empty()) throw ConfigError("no trainable: set `trainable:` to a registered name");
  const RegisteredTrainable* found = find_trainable(spec.trainable);
  if (!found) {
    std::string hint = closest_match(spec.trainable, trainable_names());
    std::string known;
    for (const auto& name : trainable_names()) known += (known.empty() ? "" : ", ") + name;
    throw ConfigError("unknown trainable '" + spec.trainable + "'" +
                      (hint.empty() ? " (registered: " + known + ")" : " (did you mean '" + hint + "'?)"));
  }
  return found;
}

// The first non-finite metric in a result, if any.
std::string non_finite_metric(const Json& metrics) {
  for (const auto& [key, value] : metrics.items()) {
    if (value.is_number_float() && !std::isfinite(value.get<double>())) return key;
  }
  return "";
}

struct TrialState {
  int64_t index = 0;
  int64_t row = 0;
  Json config;
  std::string status = kPending;
  int attempt = 0;   // starts so far; events of older attempts are stale
  int failures = 0;
  int64_t iteration = 0;
  double attempt_started = 0, last_report = 0, time_before_attempt = 0;
  std::optional<Checkpoint> checkpoint;
  Json last_result;
  std::string error;
  // What to do once the running attempt has stopped on the scheduler's word:
  // kPause (-> PAUSED) or kExploit (-> restart from the donor's checkpoint).
  TrialDecision after_stop;
};

class Driver {
 public:
  Driver(SweepSpec spec, RunConfig run, TrainableFunction function, bool resume,
         std::unique_ptr<Scheduler> scheduler)
      : spec_(std::move(spec)),
        run_(std::move(run)),
        function_(std::move(function)),
        resume_(resume),
        scheduler_(std::move(scheduler)) {
    if (scheduler_) spec_.scheduler = {"custom", Json::object()};
  }

  // On an exception out of the loop, trials still waiting in report() are
  // told to stop so their threads can be joined.
  ~Driver() {
    if (!threads_) return;
    while (threads_->active() > 0) {
      for (Event& event : events_.pop_all(std::chrono::milliseconds(10))) {
        if (event.reply) event.reply("stop");
      }
    }
  }

  std::string run() {
    open();
    loop();
    finish();
    return spec_.name;
  }

 private:
  void open();
  void loop();
  void finish();
  bool launch_ready();
  void start(TrialState& trial);
  void handle(Event& event, std::vector<std::pair<std::function<void(const std::string&)>, std::string>>& replies);
  void on_result(TrialState& trial, Event& event, std::string& action);
  void record_checkpoint(TrialState& trial, const std::string& path);
  void on_done(TrialState& trial, bool stopped);
  void terminate(TrialState& trial, double now);
  void exploit(TrialState& trial, const TrialDecision& decision);
  void on_failure(TrialState& trial, const std::string& message);
  void end_attempt(TrialState& trial);
  TrialState* trial_for(const Event& event);
  bool stop_criteria_met(const TrialState& trial, const Json& result) const;
  void print_progress(bool final);
  void save_states(bool force);

  SweepSpec spec_;
  RunConfig run_;
  TrainableFunction function_;
  bool resume_;
  const RegisteredTrainable* registered_ = nullptr;
  bool in_process_ = true;
  int slots_ = 1, slots_per_trial_ = 1, used_slots_ = 0, running_ = 0;

  std::unique_ptr<Store> store_;
  ExperimentRecord experiment_;
  fs::path experiment_dir_;
  std::unique_ptr<Searcher> searcher_;
  std::unique_ptr<Scheduler> scheduler_;
  EventQueue events_;
  std::unique_ptr<InProcessExecutor> threads_;
  std::unique_ptr<WorkerGroupPool> groups_;

  std::map<int64_t, TrialState> trials_;
  std::deque<int64_t> pending_;  // retries and exploits: started first
  std::set<int64_t> paused_;      // PAUSED, resumed when the scheduler picks them
  int64_t next_index_ = 0;
  bool searcher_done_ = false;
  bool stopping_ = false, interrupted_ = false;
  double started_ = 0, last_progress_ = 0, last_state_save_ = 0;
};

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

  searcher_ = make_searcher(spec_.search, spec_.param_space, spec_.num_samples, spec_.points_to_evaluate);
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
        break;
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
  fs::create_directories(start.trial_dir);
  if (threads_) {
    threads_->start(std::move(start), function_ ? function_ : registered_->function, trial.attempt);
  } else {
    groups_->start(std::move(start), spec_.resources.workers, trial.attempt);
  }
}

TrialState* Driver::trial_for(const Event& event) {
  int64_t index = event.trial_index;
  int attempt = event.attempt;
  if (event.group >= 0) {
    auto running = groups_->trial_on(event.group);
    if (!running) return nullptr;
    std::tie(index, attempt) = *running;
  }
  auto it = trials_.find(index);
  if (it == trials_.end() || it->second.attempt != attempt || it->second.status != kRunning) return nullptr;
  return &it->second;
}

void Driver::handle(Event& event,
                    std::vector<std::pair<std::function<void(const std::string&)>, std::string>>& replies) {
  switch (event.kind) {
    case Event::Kind::kGroupConnected:
      groups_->on_connected(event.group, event.fd);
      return;
    case Event::Kind::kGroupExited: {
      std::string message;
      auto running = groups_->trial_on(event.group);
      TrialState* trial = running ? trial_for(event) : nullptr;
      groups_->on_exited(event.group, event.status, &message);
      if (trial) on_failure(*trial, message);
      return;
    }
    case Event::Kind::kResult: {
      TrialState* trial = trial_for(event);
      std::string action = "stop";
      if (trial) on_result(*trial, event, action);
      replies.emplace_back(std::move(event.reply), action);
      return;
    }
    case Event::Kind::kDone:
    case Event::Kind::kError: {
      TrialState* trial = trial_for(event);
      if (event.group >= 0) groups_->release(event.group);
      if (!trial) return;
      if (event.kind == Event::Kind::kDone) {
        on_done(*trial, event.payload.is_object() && event.payload.value("stopped", false));
      } else {
        on_failure(*trial, event.message);
      }
      return;
    }
  }
}

void Driver::on_result(TrialState& trial, Event& event, std::string& action) {
  const double now = now_seconds();
  Json result = event.payload.value("metrics", Json::object());
  if (!result.is_object()) result = Json{{"value", result}};
  if (std::string bad = non_finite_metric(result); !bad.empty()) {
    on_failure(trial, "metric '" + bad + "' is not finite at iteration " + std::to_string(trial.iteration + 1));
    return;  // action stays "stop"
  }
  trial.iteration += 1;
  result["training_iteration"] = trial.iteration;
  result["time_this_iter_s"] = now - trial.last_report;
  result["time_total_s"] = trial.time_before_attempt + (now - trial.attempt_started);
  result["timestamp"] = now;
  trial.last_report = now;
  trial.last_result = result;
  store_->add_result(trial.row, trial.iteration, trial.attempt, result, now);
  const std::string checkpoint = event.payload.value("checkpoint", std::string());
  if (!checkpoint.empty()) record_checkpoint(trial, checkpoint);
  searcher_->on_result(trial.index, result);
  if (stopping_ || stop_criteria_met(trial, result)) {
    trial.after_stop = TrialDecision::stop();  // it ends here, whatever the scheduler would say
    action = "stop";
    return;
  }
  TrialDecision decision = scheduler_->on_result(trial.index, result);
  if (decision.action == TrialAction::kExploit) {
    auto donor = trials_.find(decision.donor);
    if (donor == trials_.end() || !donor->second.checkpoint || decision.donor == trial.index) {
      decision = TrialDecision::next();  // never clone from a trial without a checkpoint
    }
  }
  trial.after_stop = decision;
  action = decision.action == TrialAction::kContinue ? "continue" : "stop";
}

void Driver::record_checkpoint(TrialState& trial, const std::string& path) {
  const double now = now_seconds();
  if (!fs::is_directory(path)) {
    store_->add_event(experiment_.id, trial.row, "checkpoint_missing", {{"path", path}}, now);
    return;
  }
  std::string attribute = spec_.checkpoint.score_attribute.empty() ? spec_.metric : spec_.checkpoint.score_attribute;
  std::optional<double> score;
  if (!attribute.empty() && trial.last_result.contains(attribute) && trial.last_result[attribute].is_number()) {
    score = trial.last_result[attribute].get<double>();
  }
  store_->add_checkpoint(trial.row, trial.iteration, path, score, now);
  trial.checkpoint = Checkpoint{path, trial.iteration};
  scheduler_->on_checkpoint(trial.index, trial.iteration);

  prune_checkpoints(*store_, trial.row, spec_.checkpoint, spec_.mode);
}

bool Driver::stop_criteria_met(const TrialState& trial, const Json& result) const {
  if (spec_.stop.training_iteration && trial.iteration >= *spec_.stop.training_iteration) return true;
  for (const auto& [key, threshold] : spec_.stop.metric_thresholds) {
    auto it = result.find(key);
    if (it == result.end() || !it->is_number()) continue;
    double value = it->get<double>();
    if (key == spec_.metric && spec_.mode == "min" ? value <= threshold : value >= threshold) return true;
  }
  return false;
}

void Driver::end_attempt(TrialState& trial) {
  used_slots_ -= slots_per_trial_;
  running_ -= 1;
  trial.time_before_attempt += now_seconds() - trial.attempt_started;
}

void Driver::on_done(TrialState& trial, bool stopped) {
  end_attempt(trial);
  const double now = now_seconds();
  if (stopped && interrupted_) {
    // Interrupted, not finished: left PENDING so `tune resume` restarts it.
    trial.status = kPending;
    store_->set_trial_status(trial.row, kPending, now);
    return;
  }
  TrialDecision decision = std::move(trial.after_stop);
  trial.after_stop = TrialDecision::next();
  const TrialAction after = stopped ? decision.action : TrialAction::kStop;
  if (after == TrialAction::kPause && !stopping_) {
    trial.status = kPaused;
    store_->set_trial_status(trial.row, kPaused, now);
    paused_.insert(trial.index);
    return;
  }
  if (after == TrialAction::kExploit && !stopping_) {
    exploit(trial, decision);
    return;
  }
  terminate(trial, now);
}

void Driver::terminate(TrialState& trial, double now) {
  trial.status = kTerminated;
  store_->set_trial_status(trial.row, kTerminated, now);
  searcher_->on_complete({trial.index, trial.config, trial.last_result, false});
  scheduler_->on_trial_complete(trial.index, trial.last_result);
}

// PBT: the trial continues from a copy of the donor's latest checkpoint with
// the explored config; its own iteration count goes on.
void Driver::exploit(TrialState& trial, const TrialDecision& decision) {
  const double now = now_seconds();
  const TrialState& donor = trials_.at(decision.donor);
  const fs::path copy = clone_checkpoint(donor.checkpoint->path, experiment_dir_ / trial_name(trial.index),
                                         trial.iteration, decision.donor);
  ExploitRecord record;
  record.trial_id = trial.row;
  record.donor_trial_id = donor.row;
  record.iteration = trial.iteration;
  record.donor_iteration = donor.checkpoint->iteration;
  record.checkpoint_path = copy.string();
  record.old_config = trial.config;
  record.new_config = decision.new_config;
  record.time = now;
  store_->add_exploit(record);
  store_->set_trial_config(trial.row, decision.new_config);
  store_->add_checkpoint(trial.row, trial.iteration, copy.string(), std::nullopt, now);
  trial.config = decision.new_config;
  trial.checkpoint = Checkpoint{copy.string(), trial.iteration};
  scheduler_->on_checkpoint(trial.index, trial.iteration);
  trial.status = kPending;
  store_->set_trial_status(trial.row, kPending, now);
  pending_.push_front(trial.index);
}

void Driver::on_failure(TrialState& trial, const std::string& message) {
  end_attempt(trial);
  const double now = now_seconds();
  trial.failures += 1;
  trial.error = message;
  const int max = spec_.failure.max_failures;
  const bool retry = !stopping_ && (max < 0 || trial.failures <= max);
  store_->add_event(experiment_.id, trial.row, retry ? "trial_retry" : "trial_error",
                    {{"message", message}, {"attempt", trial.attempt},
                     {"restore_iteration", trial.checkpoint ? trial.checkpoint->iteration : 0}}, now);
  if (retry) {
    trial.status = kPending;
    store_->set_trial_status(trial.row, kPending, now, message);
    pending_.push_front(trial.index);
    return;
  }
  trial.status = kError;
  store_->set_trial_status(trial.row, kError, now, message);
  searcher_->on_complete({trial.index, trial.config, trial.last_result, true});
  scheduler_->on_trial_error(trial.index);
  if (run_.verbose) std::cerr << "tune: " << trial_name(trial.index) << " failed: " << message << "\n";
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
  if (!force && now - last_state_save_ < 1.0) return;
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
  std::cout << render_progress(spec_.name, spec_.metric, spec_.mode, rows, now_seconds() - started_,
                               used_slots_, slots_, final)
            << std::flush;
}

}  // namespace

void check_experiment_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 100 && std::isalnum(static_cast<unsigned char>(name[0]));
  for (char c : name) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  }
  if (!ok) {
    throw ConfigError("invalid experiment name '" + name +
                      "' (use letters, digits, '_', '-', '.', starting with a letter or digit)");
  }
}

void preflight(const SweepSpec& spec, const RunConfig& run, const TrainableFunction& function,
               bool custom_scheduler) {
  if (spec.scheduler.type == "custom" && !custom_scheduler) {
    throw ConfigError("experiment '" + spec.name + "' ran a custom C++ scheduler: pass it again (Tuner::set_scheduler)");
  }
  spec.validate();
  if (!spec.name.empty()) check_experiment_name(spec.name);
  const RegisteredTrainable* registered = resolve_trainable(spec, function);
  if (function && (spec.resources.workers > 1 || spec.resources.use_mpi)) {
    throw ConfigError("a C++ lambda trainable runs in-process; to run MPI groups, register it by name "
                      "(tune::register_trainable), call tune::init() first in main, and set spec.trainable");
  }
  (void)registered;
  const int slots = available_slots(run);
  const int need = spec.resources.workers * spec.resources.cpus_per_worker;
  if (need > slots) {
    throw ConfigError("a trial needs " + std::to_string(need) + " slots (workers x cpus_per_worker) but only " +
                      std::to_string(slots) + " are available (raise --slots)");
  }
  // Sampling once catches spaces that parse but cannot resolve.
  auto probe = make_searcher(spec.search, spec.param_space, spec.num_samples, spec.points_to_evaluate);
  (void)probe->suggest(0);
  if (!custom_scheduler) (void)make_scheduler(spec.scheduler.type, spec.scheduler.params, spec.metric, spec.mode);
}

std::string run_experiment(SweepSpec spec, const RunConfig& run, TrainableFunction function, bool resume,
                           std::unique_ptr<Scheduler> scheduler) {
  Driver driver(std::move(spec), run, std::move(function), resume, std::move(scheduler));
  return driver.run();
}

}  // namespace tune::internal
