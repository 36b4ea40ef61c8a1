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

}  // namespace

SimulationResult simulate(Scheduler& scheduler, const SimulationOptions& o) {
  SimulationResult r;
  r.workers_ = o.workers;
  std::vector<double> time_total;  // per trial
  std::deque<int64_t> pending;     // exploited trials, restarting first
  std::set<int64_t> paused;
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> running;
  double now = 0;
  int64_t next = 0;
  int free = o.workers;
  bool announced = false;
  auto step_time = [&](int64_t t) {
    return o.step_time ? o.step_time(t, r.trials[t].config, r.trials[t].iterations + 1) : 1.0;
  };
  auto start = [&](int64_t t) {
    r.trials[t].status = "RUNNING";
    free -= 1;
    const double d = step_time(t);
    r.busy += d;
    running.push({now + d, t});
  };
  auto terminate = [&](int64_t t) {
    r.trials[t].status = "TERMINATED";
    scheduler.on_trial_complete(t, Json::object());
  };
  auto launch = [&]() {
    while (free > 0) {
      if (!pending.empty()) {
        int64_t t = pending.front();
        pending.pop_front();
        start(t);
        continue;
      }
      if (pending.empty() && !paused.empty()) {
        std::optional<int64_t> chosen;
        const std::vector<int64_t> candidates(paused.begin(), paused.end());  // the driver's cost, not the scheduler's
        {
          Clock c(&r);
          chosen = scheduler.choose_trial_to_run(candidates);
        }
        if (chosen && paused.erase(*chosen)) {
          TrialDecision d;
          {
            Clock c(&r);
            d = scheduler.on_trial_resume(*chosen);
          }
          if (d.action == TrialAction::kStop) {
            terminate(*chosen);
            continue;
          }
          if (d.action == TrialAction::kExploit && d.donor >= 0 && d.donor < static_cast<int64_t>(r.trials.size())) {
            SimulatedTrial& trial = r.trials[*chosen];
            r.exploits.push_back({*chosen, d.donor, trial.iterations, trial.config, d.new_config});
            if (d.donor != *chosen) trial.state = r.trials[d.donor].state;
            trial.config = d.new_config;
            trial.exploits += 1;
          }
          start(*chosen);
          continue;
        }
      }
      if (next < o.num_trials && scheduler.can_start_new_trial()) {
        SimulatedTrial trial;
        trial.config = o.config_of ? o.config_of(next) : Json::object();
        if (o.init) trial.state = o.init(trial.config);
        r.trials.push_back(std::move(trial));
        time_total.push_back(0);
        scheduler.on_trial_add(next, r.trials[next].config);
        start(next++);
        continue;
      }
      if (next >= o.num_trials && !announced) {
        announced = true;
        scheduler.on_no_more_trials();
        continue;
      }
      break;
    }
  };

  launch();
  while (!running.empty()) {
    const Running done = running.top();
    running.pop();
    if (next < o.num_trials) {
      r.idle_with_trials_left += free * (done.finish - now);
      r.time_with_trials_left = done.finish;
    }
    now = done.finish;
    const int64_t t = done.trial;
    SimulatedTrial& trial = r.trials[t];
    free += 1;
    const double d = step_time(t);
    time_total[t] += d;
    trial.iterations += 1;
    const double metric = o.step(trial.config, trial.state, trial.iterations);
    trial.metrics.push_back(metric);
    scheduler.on_checkpoint(t, trial.iterations);
    Json result = {{o.metric, metric},
                   {"training_iteration", trial.iterations},
                   {"time_total_s", time_total[t]},
                   {"time_this_iter_s", d}};
    if (o.max_iterations > 0 && trial.iterations >= o.max_iterations) {
      terminate(t);
    } else {
      TrialDecision decision;
      {
        Clock c(&r);
        decision = scheduler.on_result(t, result);
      }
      switch (decision.action) {
        case TrialAction::kContinue:
          free -= 1;
          r.busy += step_time(t);
          running.push({now + step_time(t), t});
          break;
        case TrialAction::kStop:
          terminate(t);
          break;
        case TrialAction::kPause:
          trial.status = "PAUSED";
          trial.pauses += 1;
          paused.insert(t);
          break;
        case TrialAction::kExploit: {
          const int64_t donor = decision.donor;
          if (donor < 0 || donor >= static_cast<int64_t>(r.trials.size())) {
            free -= 1;
            running.push({now + step_time(t), t});
            break;
          }
          r.exploits.push_back({t, donor, trial.iterations, trial.config, decision.new_config});
          if (donor != t) trial.state = r.trials[donor].state;
          trial.config = decision.new_config;
          trial.exploits += 1;
          pending.push_front(t);
          break;
        }
      }
    }
    r.makespan = now;
    launch();
  }
  for (int64_t t : paused) terminate(t);  // never promoted, as the driver does
  return r;
}

}  // namespace tune
