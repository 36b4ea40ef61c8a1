// What each trial event does to the trial, the searcher, the scheduler and
// the store, and the one place where a decision becomes an action (apply).
// Runs inside the driver's batch transaction; verdicts reach trials only
// after it commits.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <utility>

#include "base/error.h"
#include "base/names.h"
#include "tuner/driver/checkpoints.h"
#include "tuner/driver/driver_impl.h"
#include "tuner/exec/profile.h"

namespace tune::internal {

std::string non_finite_metric(const Json& metrics) {
  for (const auto& [key, value] : metrics.items()) {
    if (value.is_number_float() && !std::isfinite(value.get<double>())) return key;
  }
  return "";
}

// The trial `attempt` belongs to, if that attempt is still the trial's
// running one; events of older attempts, and of attempts whose trial was
// already decided (paused, stopped, requeued), are stale.
TrialState* Driver::current(const AttemptId& attempt) {
  auto it = trials_.find(attempt.trial);
  if (it == trials_.end() || it->second.attempt != attempt.attempt || !running(it->second)) return nullptr;
  return &it->second;
}

void Driver::handle(TrialEvent& event, std::vector<Reply>& replies) {
  TrialState* trial = current(event.attempt);
  switch (event.kind) {
    case TrialEvent::Kind::kResult:
      replies.emplace_back(std::move(event.reply), trial ? on_result(*trial, event) : Verdict::kStop);
      return;
    case TrialEvent::Kind::kEnded:
    case TrialEvent::Kind::kFailed:
      on_end(trial, event);
      return;
  }
}

// An attempt ended: on its own (the trainable returned) or failed.
void Driver::on_end(TrialState* trial, const TrialEvent& event) {
  profile::Scope timed(profile::Part::kEnd);
  attempt_ended(event);
  if (!trial) return;
  if (event.kind == TrialEvent::Kind::kEnded) {
    terminate(*trial);  // the trainable returned on its own
    return;
  }
  // Out of descriptors with other trials running: the driver's limit, not
  // the trial's failure. It waits first in line, and no more trials run at
  // once than now (a start is allowed again as each one ends). With none
  // running, even one cannot start: a failure as any other.
  if (event.out_of_descriptors && !live_.empty()) {
    descriptor_cap_ = live_.size();
    leave_running(*trial);
    lifecycle_.retry(trial->index);
    set_status(*trial, kPending, clock_.unix_time());
    store_->add_event(experiment_.id, trial->row, "out_of_descriptors",
                      {{"running", live_.size()}, {"message", event.message}}, clock_.unix_time());
    if (!descriptors_told_) {
      std::cerr << "tune: out of file descriptors (the hard limit of `ulimit -n`): trials that could not start "
                   "wait for running ones to end, and fewer run at once\n";
      descriptors_told_ = true;
    }
    return;
  }
  // Across hosts a lost attempt is the host's failure, not the trial's.
  const std::vector<std::string> none;
  fail(*trial, event.message, event.lost && !pool_.single_host(), event.blame_uncertain ? none : event.lost_hosts,
       event.blame_uncertain ? event.lost_hosts : none);
}

// The attempt's hosts are free again. An attempt that ended well clears its
// hosts' loss counts; a lost one (its processes died, not its trainable)
// counts against the hosts the executor blames (the one that died or went
// silent), unless the driver cancelled it while stopping; a host that keeps
// losing attempts is taken out of placement and checked again later.
void Driver::attempt_ended(const TrialEvent& event) {
  auto it = live_.find(event.attempt);
  if (it == live_.end()) return;
  if (event.kind == TrialEvent::Kind::kEnded) {
    for (const auto& share : it->second.hosts) pool_.record_success(share.host);
  } else if (event.lost && !stopping_) {
    for (const std::string& host : event.lost_hosts) {
      if (event.blame_uncertain) {
        suspect(host);
      } else {
        host_lost(host);
      }
    }
  }
  pool_.release(it->second);
  if (auto count = live_attempts_.find(event.attempt.trial); count != live_attempts_.end() && --count->second <= 0) {
    live_attempts_.erase(count);
    // A retry, exploit or paused trial may run now (an exploit once its copy is made).
    if (!exploits_in_flight_.count(event.attempt.trial)) lifecycle_.idle(event.attempt.trial);
  }
  live_.erase(it);
  attempts_ended_ += 1;
}

Verdict Driver::on_result(TrialState& trial, TrialEvent& event) {
  profile::Scope timed(profile::Part::kResult);
  const double now = clock_.now(), unix_now = clock_.unix_time();
  Json result = std::move(event.metrics);
  if (!result.is_object()) result = Json{{"value", result}};
  if (std::string bad = non_finite_metric(result); !bad.empty()) {
    fail(trial, "metric '" + bad + "' is not finite at iteration " + std::to_string(trial.iteration + 1));
    return Verdict::kStop;
  }
  trial.iteration += 1;
  result["training_iteration"] = trial.iteration;
  last_iteration_s_ = now - trial.last_report;
  result["time_this_iter_s"] = last_iteration_s_;
  result["time_total_s"] = trial.time_before_attempt + (now - trial.attempt_started);
  result["timestamp"] = unix_now;
  trial.last_report = now;
  trial.last_result = std::move(result);  // kept, not copied: the rest reads it there
  const Json& kept = trial.last_result;
  if (now - trial.row_saved_at >= TrialState::kRowRefreshS) {  // the trial's row too
    store_->add_result(trial.row, trial.iteration, trial.attempt, kept, unix_now);
    trial.unsaved_iteration = 0;
    trial.row_saved_at = now;
  } else {
    store_->append_result(trial.row, trial.iteration, trial.attempt, kept, unix_now);
    trial.unsaved_iteration = trial.iteration;
  }
  if (!event.checkpoint.empty()) record_checkpoint(trial, event.checkpoint);
  if (!event.message.empty()) {  // a checkpoint that did not arrive whole
    store_->add_event(experiment_.id, trial.row, "checkpoint_failed", {{"message", event.message}}, unix_now);
  }
  sweep_.searcher->on_result(trial.index, kept);
  note_plateaus(trial, kept);
  apply(trial, decide(trial, kept));
  if (!running(trial)) return Verdict::kStop;
  return next_result_runs_ahead(trial) ? Verdict::kRunAhead : Verdict::kContinue;
}

void Driver::record_checkpoint(TrialState& trial, const std::string& path) {
  const double now = clock_.unix_time();
  if (!std::filesystem::is_directory(path)) {
    store_->add_event(experiment_.id, trial.row, "checkpoint_missing", {{"path", path}}, now);
    return;
  }
  const SweepSpec& spec = sweep_.spec;
  const std::string attribute = spec.checkpoint.score_attribute.empty() ? spec.metric : spec.checkpoint.score_attribute;
  std::optional<double> score;
  if (!attribute.empty() && trial.last_result.contains(attribute) && trial.last_result[attribute].is_number()) {
    score = trial.last_result[attribute].get<double>();
  }
  store_->add_checkpoint(trial.row, trial.iteration, path, score, now);
  trial.checkpoint = Checkpoint{path, trial.iteration};
  sweep_.scheduler->on_checkpoint(trial.index, trial.iteration);
  prune(trial);
}

namespace {

// The population standard deviation (numpy's default, as Ray's stoppers use).
double population_std(const std::vector<double>& values) {
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return std::sqrt(squares / static_cast<double>(values.size()));
}

// A plateau stopper's metric and whether lower is better: its own, else the sweep's.
std::pair<const std::string&, bool> plateau_metric(const std::string& metric, const std::string& mode,
                                                   const SweepSpec& spec) {
  return {metric.empty() ? spec.metric : metric, (mode.empty() ? spec.mode : mode) == "min"};
}

}  // namespace

// The plateau stoppers take the result's value of their metric, if it has one.
// The sweep's stops (Ray's ExperimentPlateauStopper) once its `top` best values
// have been within `std` for more than `patience` results in a row.
void Driver::note_plateaus(TrialState& trial, const Json& result) {
  const StopCriteria& stop = sweep_.spec.stop;
  if (stop.plateau) {
    const auto [metric, minimize] = plateau_metric(stop.plateau->metric, stop.plateau->mode, sweep_.spec);
    if (auto it = result.find(metric); it != result.end() && it->is_number()) {
      auto& values = trial.plateau_values;
      if (static_cast<int64_t>(values.size()) >= stop.plateau->num_results) values.erase(values.begin());
      values.push_back(it->get<double>());
      trial.plateau_seen += 1;
    }
  }
  if (!stop.experiment_plateau || stopping_) return;
  const StopCriteria::ExperimentPlateau& p = *stop.experiment_plateau;
  const auto [metric, minimize] = plateau_metric(p.metric, p.mode, sweep_.spec);
  auto it = result.find(metric);
  if (it == result.end() || !it->is_number()) return;
  const double value = it->get<double>();
  const auto at = std::upper_bound(top_values_.begin(), top_values_.end(), value,
                                   [minimize = minimize](double a, double b) { return minimize ? a < b : a > b; });
  if (at - top_values_.begin() < p.top) {
    top_values_.insert(at, value);
    if (static_cast<int64_t>(top_values_.size()) > p.top) top_values_.pop_back();
  }
  const bool flat = static_cast<int64_t>(top_values_.size()) == p.top && population_std(top_values_) <= p.std;
  flat_results_ = flat ? flat_results_ + 1 : 0;
  if (flat && flat_results_ > p.patience) {
    stopping_ = true;  // running trials end at their next result
    store_->add_event(experiment_.id, trial.row, "experiment_plateau",
                      {{"metric", metric}, {"top", top_values_}, {"std", population_std(top_values_)}},
                      clock_.unix_time());
  }
}

bool Driver::stop_criteria_met(const TrialState& trial, const Json& result) const {
  const StopCriteria& stop = sweep_.spec.stop;
  if (stop.training_iteration && trial.iteration >= *stop.training_iteration) return true;
  if (const auto& p = stop.plateau) {  // Ray's TrialPlateauStopper
    const auto [metric, minimize] = plateau_metric(p->metric, p->mode, sweep_.spec);
    const auto& values = trial.plateau_values;
    if (result.contains(metric) && trial.plateau_seen >= p->grace_period &&
        static_cast<int64_t>(values.size()) == p->num_results &&
        (!p->metric_threshold || (minimize ? values.back() <= *p->metric_threshold
                                           : values.back() >= *p->metric_threshold)) &&
        population_std(values) < p->std)
      return true;
  }
  for (const auto& [key, threshold] : stop.metric_thresholds) {
    auto it = result.find(key);
    if (it == result.end() || !it->is_number()) continue;
    const double value = it->get<double>();
    // An objective's threshold follows its mode; any other key's is ">=" (Ray's rule).
    bool minimized = key == sweep_.spec.metric && sweep_.spec.mode == "min";
    for (const auto& objective : sweep_.spec.objectives)
      if (key == objective.metric) minimized = objective.mode == "min";
    if (minimized ? value <= threshold : value >= threshold) return true;
  }
  return false;
}

// Whether nothing can be decided on the trial's next result, whatever it
// holds: then the trial need not wait for its answer (Verdict::kRunAhead).
// A metric threshold may be crossed by any result; a custom scheduler may act
// on any (Scheduler::may_decide's default).
// Only while iterations are short (where the round trip counts): a stop
// nothing foresaw (the time budget, a non-finite metric) then comes at most
// one short iteration late.
bool Driver::next_result_runs_ahead(const TrialState& trial) const {
  constexpr double kLongestIterationS = 1.0;
  if (!run_.run_ahead || stopping_) return false;
  double iteration_s = last_iteration_s_;
  if (trial.last_result.is_object()) {
    const auto own = trial.last_result.find("time_this_iter_s");
    if (own != trial.last_result.end() && own->is_number()) iteration_s = own->get<double>();
  }
  if (!(iteration_s < kLongestIterationS)) return false;
  const StopCriteria& stop = sweep_.spec.stop;
  const int64_t next = trial.iteration + 1;
  if (!stop.metric_thresholds.empty() || stop.plateau || (stop.training_iteration && next >= *stop.training_iteration))
    return false;
  return !sweep_.scheduler->may_decide(trial.index, next);
}

// The sweep's own rules (ending, stop criteria) come before the scheduler's.
TrialDecision Driver::decide(const TrialState& trial, const Json& result) {
  if (stopping_ || stop_criteria_met(trial, result)) return TrialDecision::stop();
  return vetted(trial.index, sweep_.scheduler->on_result(trial.index, result));
}

// The lifecycle's rule: an exploit only from another trial with a checkpoint.
TrialDecision Driver::vetted(int64_t index, TrialDecision decision) const {
  return lifecycle_.vet(index, std::move(decision), [this](int64_t donor) { return has_checkpoint(donor); });
}

bool Driver::has_checkpoint(int64_t index) const { return donor_checkpoint(index).has_value(); }

// The checkpoint an exploit of `index` copies: its latest, or, while its own
// exploit's copy is being made, the one that copy is of (the scheduler
// already counts it as the donor's; the lineage follows it there).
std::optional<Checkpoint> Driver::donor_checkpoint(int64_t index) const {
  if (auto copying = exploits_in_flight_.find(index); copying != exploits_in_flight_.end())
    return Checkpoint{copying->second.source, copying->second.restored};
  auto it = trials_.find(index);
  if (it == trials_.end()) return std::nullopt;
  return it->second.checkpoint;
}

void Driver::apply(TrialState& trial, const TrialDecision& decision) {
  switch (decision.action) {
    case TrialAction::kContinue:
      return;
    case TrialAction::kStop:
      terminate(trial);
      return;
    case TrialAction::kPause:
      pause(trial);
      return;
    case TrialAction::kExploit:
      exploit(trial, decision);
      return;
  }
}

void Driver::set_status(TrialState& trial, const char* status, double unix_time, const std::string& error) {
  if (trial.unsaved_iteration == 0) {
    store_->set_trial_status(trial.row, status, unix_time, error);
    return;
  }
  store_->set_trial_status_and_result(trial.row, status, unix_time, error, trial.unsaved_iteration, trial.last_result);
  trial.unsaved_iteration = 0;
  trial.row_saved_at = clock_.now();
}

// The trial's running attempt is over for it (its process may still be
// stopping): its time so far is banked.
void Driver::leave_running(TrialState& trial) {
  if (!running(trial)) return;
  trial.time_before_attempt += clock_.now() - trial.attempt_started;
}

void Driver::terminate(TrialState& trial) {
  leave_running(trial);
  lifecycle_.terminate(trial.index);
  set_status(trial, kTerminated, clock_.unix_time());
  sweep_.searcher->on_complete({trial.index, trial.config, trial.last_result, false});
  sweep_.scheduler->on_trial_complete(trial.index, trial.last_result);
  settle(trial);
}

void Driver::pause(TrialState& trial) {
  leave_running(trial);
  state_changed_ = true;
  lifecycle_.pause(trial.index);
  set_status(trial, kPaused, clock_.unix_time());
}

// PBT: the trial continues from a copy of the donor's latest checkpoint with
// the explored config, and from the donor's iteration (as Ray does): its
// iteration count and its restored state agree whether the donor was ahead
// or behind. The copy is made off the loop (CheckpointCopier: a model's
// weights take a while, and every other trial's report() waits on the
// loop); meanwhile the trial is PENDING, first in line, and does not start.
// The exploit is recorded when the copy is whole (exploit_copied()): a
// driver that dies before that leaves the trial as it was, to resume from
// its own checkpoint.
void Driver::exploit(TrialState& trial, const TrialDecision& decision) {
  const TrialState& donor = trials_.at(decision.donor);
  const Checkpoint from = *donor_checkpoint(decision.donor);
  leave_running(trial);
  trial.exploits += 1;
  trial.plateau_values.clear();  // another config's values from here
  ExploitInFlight copy;
  copy.donor = decision.donor;
  copy.donor_row = donor.row;
  copy.restored = from.iteration;
  copy.source = from.path;
  copy.target = clone_target(experiment_dir_ / trial_folder_name(trial.index), copy.restored, decision.donor,
                             trial.exploits);
  copy.new_config = decision.new_config;
  copy.decided_at = clock_.unix_time();
  copying_from_[copy.source] += 1;
  copier_.submit(trial.index, copy.source, copy.target);
  exploits_in_flight_[trial.index] = std::move(copy);
  lifecycle_.retry(trial.index);  // first in line, once the copy is made
  set_status(trial, kPending, clock_.unix_time());
}

// An exploit's copy is made (or failed): the exploit is recorded, and the
// trial may start from the copy.
void Driver::exploit_copied(CheckpointCopier::Copy& done) {
  auto it = exploits_in_flight_.find(done.trial);
  if (it == exploits_in_flight_.end()) return;
  ExploitInFlight copy = std::move(it->second);
  exploits_in_flight_.erase(it);
  if (--copying_from_[copy.source] <= 0) {
    copying_from_.erase(copy.source);
    if (remove_after_copy_.erase(copy.source)) {  // pruned by its trial meanwhile
      std::error_code ec;
      std::filesystem::remove_all(copy.source, ec);
    }
  }
  TrialState& trial = trials_.at(done.trial);
  if (!live_attempts_.count(trial.index)) lifecycle_.idle(trial.index);
  waiting_ = {};  // next_trial()'s answer may change
  if (done.disk_full) throw DiskFullError(done.error);  // not the trial's fault: the sweep stops cleanly (Driver::run)
  if (!done.error.empty()) {
    // The trial failed, not the sweep: it is retried from its own checkpoint.
    fail(trial, "exploit of " + trial_folder_name(copy.donor) + ": " + done.error);
    return;
  }
  // Not a reason to save the scheduler's state now (PBT exploits in most
  // batches of a large population, and its state grows with it): the store
  // holds the new config, which a resume hands to the restored scheduler.
  const double now = clock_.unix_time();
  ExploitRecord record;
  record.trial_id = trial.row;
  record.donor_trial_id = copy.donor_row;
  record.iteration = trial.iteration;
  record.donor_iteration = copy.restored;
  record.checkpoint_path = copy.target.string();
  record.old_config = trial.config;
  record.new_config = copy.new_config;
  record.time = copy.decided_at;  // when the donor's checkpoint was chosen
  store_->add_exploit(record);
  store_->set_trial_config(trial.row, copy.new_config);
  store_->add_checkpoint(trial.row, copy.restored, copy.target.string(), std::nullopt, now);
  prune(trial);
  trial.config = std::move(copy.new_config);
  trial.iteration = copy.restored;
  trial.checkpoint = Checkpoint{copy.target.string(), copy.restored};
  sweep_.scheduler->on_checkpoint(trial.index, copy.restored);
}

// The trial's checkpoints beyond checkpoint.num_to_keep go; a folder an
// exploit is copying from stays until its copy is made.
void Driver::prune(const TrialState& trial) {
  prune_checkpoints(*store_, trial.row, sweep_.spec.checkpoint, sweep_.spec.mode, [this](const std::string& path) {
    if (!copying_from_.count(path)) return false;
    remove_after_copy_.insert(path);
    return true;
  });
}

// Interrupted, not finished: left PENDING so `tune resume` restarts it.
void Driver::requeue(TrialState& trial) {
  leave_running(trial);
  lifecycle_.requeue(trial.index);
  set_status(trial, kPending, clock_.unix_time());
}

void Driver::fail(TrialState& trial, const std::string& message, bool host_lost,
                  const std::vector<std::string>& lost_hosts, const std::vector<std::string>& suspects) {
  leave_running(trial);
  const double now = clock_.unix_time();
  // A trial whose host went away is retried elsewhere without spending its
  // max_failures (bounded: a trial that loses every host it touches errors).
  const bool free_retry = host_lost && trial.host_losses < kMaxHostLossesPerTrial;
  if (free_retry) {
    trial.host_losses += 1;
  } else {
    trial.failures += 1;
  }
  trial.error = message;
  const int max = sweep_.spec.failure.max_failures;
  const bool retry = !stopping_ && (free_retry || max < 0 || trial.failures <= max);
  store_->add_event(experiment_.id, trial.row, retry ? "trial_retry" : "trial_error",
                    {{"message", message}, {"attempt", trial.attempt}, {"host_lost", host_lost}, {"hosts", lost_hosts}, {"suspects", suspects},
                     {"restore_iteration", trial.checkpoint ? trial.checkpoint->iteration : 0}}, now);
  if (retry) {
    lifecycle_.retry(trial.index);  // first in line
    set_status(trial, kPending, now, message);
    return;
  }
  lifecycle_.fail(trial.index);
  set_status(trial, kError, now, message);
  sweep_.searcher->on_complete({trial.index, trial.config, trial.last_result, true});
  sweep_.scheduler->on_trial_error(trial.index);
  settle(trial);
  if (run_.verbose) std::cerr << "tune: " << trial_folder_name(trial.index) << " failed: " << message << "\n";
}

// A trial just became final: packed once enough others are kept unpacked.
void Driver::settle(TrialState& trial) {
  if (unpacked_final_ < env_.unpacked_final_trials) {
    ++unpacked_final_;
  } else {
    pack(trial, sweep_.spec.metric);
    ++packed_final_;
  }
}

void pack(TrialState& trial, const std::string& metric) {
  if (!trial.packed.empty()) return;
  if (const auto it = trial.last_result.find(metric); it != trial.last_result.end() && it->is_number())
    trial.packed_metric = it->get<double>();
  Json both = Json::array({std::move(trial.config), std::move(trial.last_result)});
  trial.packed = Json::to_cbor(both);
  trial.packed.shrink_to_fit();
  trial.config = Json();
  trial.last_result = Json();
}

TrialRecordView unpacked(const TrialState& trial) {
  if (trial.packed.empty()) return {trial.config, trial.last_result};
  Json both = Json::from_cbor(trial.packed);
  return {std::move(both[0]), std::move(both[1])};
}

}  // namespace tune::internal
