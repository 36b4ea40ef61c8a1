#include "schedulers/simulator.h"

#include <algorithm>
#include <chrono>
#include <queue>

#include "schedulers/trial_state_machine.h"

namespace tune {

double SimulationResult::utilization() const {
  return makespan > 0 && !trials.empty() ? busy / (makespan * workers_) : 0;
}

namespace {

struct Running {
  double finish = 0;
  int64_t trial = 0;
  bool operator>(const Running& o) const { return finish != o.finish ? finish > o.finish : trial > o.trial; }
};

// The scheduler as the simulation sees it: every call forwarded, the
// decisions (on_result, choose_trial_to_run, on_trial_resume) counted and
// timed.
class TimedScheduler : public Scheduler {
 public:
  TimedScheduler(Scheduler& s, SimulationResult* r) : s_(s), r_(r) {}
  void on_trial_add(int64_t t, const Json& config) override { s_.on_trial_add(t, config); }
  TrialDecision on_result(int64_t t, const Json& result) override {
    Clock c(r_);
    return s_.on_result(t, result);
  }
  void on_checkpoint(int64_t t, int64_t iteration) override { s_.on_checkpoint(t, iteration); }
  void on_trial_complete(int64_t t, const Json& last) override { s_.on_trial_complete(t, last); }
  void on_trial_error(int64_t t) override { s_.on_trial_error(t); }
  std::optional<int64_t> choose_trial_to_run(const std::vector<int64_t>& paused) override {
    Clock c(r_);
    return s_.choose_trial_to_run(paused);
  }
  TrialDecision on_trial_resume(int64_t t) override {
    Clock c(r_);
    return s_.on_trial_resume(t);
  }
  void on_no_more_trials() override { s_.on_no_more_trials(); }
  bool can_start_new_trial() const override { return s_.can_start_new_trial(); }
  bool may_decide(int64_t t, int64_t iteration) const override { return s_.may_decide(t, iteration); }
  Json save_state() const override { return s_.save_state(); }
  void restore_state(const Json& state) override { s_.restore_state(state); }

 private:
  class Clock {
   public:
    explicit Clock(SimulationResult* r) : r_(r), start_(std::chrono::steady_clock::now()) {}
    ~Clock() {
      r_->decisions += 1;
      r_->decision_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }

   private:
    SimulationResult* r_;
    std::chrono::steady_clock::time_point start_;
  };

  Scheduler& s_;
  SimulationResult* r_;
};

// The cluster: free workers and running steps ordered by finish time; the
// trials' statuses and queues are the driver's own TrialStateMachine.
class Simulation {
 public:
  Simulation(Scheduler& scheduler, const SimulationOptions& o)
      : scheduler_(scheduler, &r_), o_(o), free_(o.workers) {
    r_.workers_ = o.workers;
  }

  SimulationResult run() {
    launch();
    while (!running_.empty()) {
      const Running done = running_.top();
      running_.pop();
      if (next_ < o_.num_trials) {
        r_.idle_with_trials_left += free_ * (done.finish - now_);
        r_.time_with_trials_left = done.finish;
      }
      now_ = done.finish;
      free_ += 1;
      finish_step(done.trial);
      r_.makespan = now_;
      launch();
    }
    // Never promoted, as the driver does at the end.
    const std::vector<int64_t> paused(machine_.paused().begin(), machine_.paused().end());
    for (int64_t t : paused) terminate(t);
    for (size_t t = 0; t < r_.trials.size(); ++t) r_.trials[t].status = status_name(machine_.status(static_cast<int64_t>(t)));
    return std::move(r_);
  }

 private:
  double step_time(int64_t t) const {
    return o_.step_time ? o_.step_time(t, r_.trials[t].config, r_.trials[t].iterations + 1) : 1.0;
  }

  // Every step checkpoints: a trial has one once it has taken a step.
  bool has_checkpoint(int64_t t) const { return r_.trials[static_cast<size_t>(t)].iterations > 0; }

  void run_step(int64_t t) {
    free_ -= 1;
    const double d = step_time(t);
    r_.busy += d;
    running_.push({now_ + d, t});
  }

  void start(int64_t t) {
    machine_.start(t);
    run_step(t);
  }

  void terminate(int64_t t) {
    machine_.terminate(t);
    scheduler_.on_trial_complete(t, Json::object());
  }

  // The trial continues with the donor's state, iteration and the new config
  // (as the driver does), first in line.
  void exploit(int64_t t, const TrialDecision& d) {
    SimulatedTrial& trial = r_.trials[t];
    r_.exploits.push_back({t, d.donor, trial.iterations, trial.config, d.new_config});
    trial.state = r_.trials[d.donor].state;
    trial.iterations = r_.trials[d.donor].iterations;
    trial.config = d.new_config;
    trial.exploits += 1;
    machine_.retry(t);
  }

  void apply(int64_t t, const TrialDecision& decision) {
    switch (decision.action) {
      case TrialAction::kContinue:
        run_step(t);
        return;
      case TrialAction::kStop:
        terminate(t);
        return;
      case TrialAction::kPause:
        r_.trials[t].pauses += 1;
        machine_.pause(t);
        return;
      case TrialAction::kExploit:
        exploit(t, decision);
        return;
    }
  }

  // Fills free workers the way the driver does (TrialStateMachine::next):
  // restarts, then the scheduler's pick of the paused, then new trials.
  void launch() {
    auto busy = [](int64_t) { return false; };  // an ended step frees its trial at once
    auto checkpointed = [this](int64_t t) { return has_checkpoint(t); };
    auto resolve = [this](int64_t t, const TrialDecision& d) { apply(t, d); };
    while (free_ > 0) {
      const TrialStateMachine::Next next = machine_.next(scheduler_, busy, resolve, checkpointed);
      if (next.kind == TrialStateMachine::Next::kStart) {
        start(next.trial);
      } else if (next.kind == TrialStateMachine::Next::kNew && next_ < o_.num_trials) {
        add_trial();
      } else if (next.kind == TrialStateMachine::Next::kNew) {
        machine_.no_more_trials(scheduler_);
      } else {
        break;
      }
    }
  }

  void add_trial() {
    SimulatedTrial trial;
    trial.config = o_.config_of ? o_.config_of(next_) : Json::object();
    if (o_.init) trial.state = o_.init(trial.config);
    r_.trials.push_back(std::move(trial));
    time_total_.push_back(0);
    scheduler_.on_trial_add(next_, r_.trials[next_].config);
    machine_.add(next_);
    start(next_++);
  }

  // A step of trial t finished: its result, then the scheduler's decision.
  void finish_step(int64_t t) {
    SimulatedTrial& trial = r_.trials[t];
    const double d = step_time(t);
    time_total_[t] += d;
    trial.iterations += 1;
    const double metric = o_.step(trial.config, trial.state, trial.iterations);
    trial.metrics.push_back(metric);
    trial.times.push_back(now_);
    scheduler_.on_checkpoint(t, trial.iterations);
    if (o_.max_iterations > 0 && trial.iterations >= o_.max_iterations) {
      terminate(t);
      return;
    }
    const Json result = {{o_.metric, metric},
                         {"training_iteration", trial.iterations},
                         {"time_total_s", time_total_[t]},
                         {"time_this_iter_s", d},
                         {"timestamp", now_}};
    const TrialDecision decision = scheduler_.on_result(t, result);
    apply(t, machine_.vet(t, decision, [this](int64_t donor) { return has_checkpoint(donor); }));
  }

  SimulationResult r_;  // before scheduler_, which counts into it
  TimedScheduler scheduler_;
  const SimulationOptions& o_;
  std::vector<double> time_total_;  // per trial
  TrialStateMachine machine_;
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> running_;
  double now_ = 0;
  int64_t next_ = 0;
  int free_ = 0;
};

}  // namespace

SimulationResult simulate(Scheduler& scheduler, const SimulationOptions& o) { return Simulation(scheduler, o).run(); }

}  // namespace tune
