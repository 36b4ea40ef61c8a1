#include "schedulers/simulator.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <queue>
#include <set>

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



// The cluster: free workers, running steps ordered by finish time, and the
// driver's queues (exploited trials first, paused ones for the scheduler).
class Simulation {
 public:
  Simulation(Scheduler& scheduler, const SimulationOptions& o) : scheduler_(scheduler), o_(o), free_(o.workers) {
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
    for (int64_t t : paused_) terminate(t);  // never promoted, as the driver does
    return std::move(r_);
  }

 private:
  double step_time(int64_t t) const {
    return o_.step_time ? o_.step_time(t, r_.trials[t].config, r_.trials[t].iterations + 1) : 1.0;
  }

  void start(int64_t t) {
    r_.trials[t].status = "RUNNING";
    free_ -= 1;
    const double d = step_time(t);
    r_.busy += d;
    running_.push({now_ + d, t});
  }

  void terminate(int64_t t) {
    r_.trials[t].status = "TERMINATED";
    scheduler_.on_trial_complete(t, Json::object());
  }

  // The trial continues with the donor's state and the new config.
  void clone(int64_t t, int64_t donor, const Json& new_config) {
    SimulatedTrial& trial = r_.trials[t];
    r_.exploits.push_back({t, donor, trial.iterations, trial.config, new_config});
    if (donor != t) {  // the donor's state, and its iteration (as the driver does)
      trial.state = r_.trials[donor].state;
      trial.iterations = r_.trials[donor].iterations;
    }
    trial.config = new_config;
    trial.exploits += 1;
  }

  bool valid_donor(int64_t donor) const { return donor >= 0 && donor < static_cast<int64_t>(r_.trials.size()); }

  // Fills free workers the way the driver does: restarts, then the
  // scheduler's pick of the paused, then new trials.
  void launch() {
    while (free_ > 0) {
      if (!pending_.empty()) {
        const int64_t t = pending_.front();
        pending_.pop_front();
        start(t);
      } else if (!paused_.empty() && resume_paused()) {
      } else if (next_ < o_.num_trials && scheduler_.can_start_new_trial()) {
        add_trial();
      } else if (next_ >= o_.num_trials && !announced_) {
        announced_ = true;
        scheduler_.on_no_more_trials();
      } else {
        break;
      }
    }
  }

  // True when the scheduler picked a paused trial (resumed, exploited or ended).
  bool resume_paused() {
    std::optional<int64_t> chosen;
    const std::vector<int64_t> candidates(paused_.begin(), paused_.end());  // the driver's cost, not the scheduler's
    {
      Clock c(&r_);
      chosen = scheduler_.choose_trial_to_run(candidates);
    }
    if (!chosen || !paused_.erase(*chosen)) return false;
    TrialDecision d;
    {
      Clock c(&r_);
      d = scheduler_.on_trial_resume(*chosen);
    }
    if (d.action == TrialAction::kStop) {
      terminate(*chosen);
      return true;
    }
    if (d.action == TrialAction::kExploit && valid_donor(d.donor)) clone(*chosen, d.donor, d.new_config);
    start(*chosen);
    return true;
  }

  void add_trial() {
    SimulatedTrial trial;
    trial.config = o_.config_of ? o_.config_of(next_) : Json::object();
    if (o_.init) trial.state = o_.init(trial.config);
    r_.trials.push_back(std::move(trial));
    time_total_.push_back(0);
    scheduler_.on_trial_add(next_, r_.trials[next_].config);
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
    TrialDecision decision;
    {
      Clock c(&r_);
      decision = scheduler_.on_result(t, result);
    }
    apply(t, decision);
  }

  void apply(int64_t t, const TrialDecision& decision) {
    switch (decision.action) {
      case TrialAction::kContinue:
        free_ -= 1;
        r_.busy += step_time(t);
        running_.push({now_ + step_time(t), t});
        return;
      case TrialAction::kStop:
        terminate(t);
        return;
      case TrialAction::kPause:
        r_.trials[t].status = "PAUSED";
        r_.trials[t].pauses += 1;
        paused_.insert(t);
        return;
      case TrialAction::kExploit:
        if (!valid_donor(decision.donor)) {
          free_ -= 1;
          running_.push({now_ + step_time(t), t});
          return;
        }
        clone(t, decision.donor, decision.new_config);
        pending_.push_front(t);
        return;
    }
  }

  Scheduler& scheduler_;
  const SimulationOptions& o_;
  SimulationResult r_;
  std::vector<double> time_total_;  // per trial
  std::deque<int64_t> pending_;     // exploited trials, restarting first
  std::set<int64_t> paused_;
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> running_;
  double now_ = 0;
  int64_t next_ = 0;
  int free_ = 0;
  bool announced_ = false;
};

}  // namespace

SimulationResult simulate(Scheduler& scheduler, const SimulationOptions& o) { return Simulation(scheduler, o).run(); }

}  // namespace tune
