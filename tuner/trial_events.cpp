// What each trial event (result, done, error, group exit) does to the trial,
// the searcher, the scheduler and the store. Runs inside the driver's batch
// transaction; decisions reach workers only after it commits.
#include <iostream>

#include "tuner/checkpoints.h"
#include "tuner/driver_impl.h"

namespace tune::internal {

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
    state_changed_ = true;
    trial.status = kPaused;
    store_->set_trial_status(trial.row, kPaused, now);
    paused_.insert(trial.index);
    return;
  }
  if (after == TrialAction::kExploit && !stopping_) {
    state_changed_ = true;
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

}  // namespace tune::internal
