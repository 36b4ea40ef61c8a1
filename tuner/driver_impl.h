// Internal: the Driver class behind run_experiment (tuner/driver.h). Its
// methods live in driver.cpp (setup, launching, the event loop) and
// trial_events.cpp (what each trial event does to the trial and the store).
#pragma once

#include <cmath>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "schedulers/scheduler.h"
#include "search/searcher.h"
#include "storage/store.h"
#include "tuner/driver.h"
#include "tuner/events.h"
#include "tuner/in_process_executor.h"
#include "tuner/worker_group.h"

namespace tune::internal {

namespace fs = std::filesystem;


inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// The first non-finite metric in a result, if any.
inline std::string non_finite_metric(const Json& metrics) {
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
  bool state_changed_ = false;  // a pause/exploit in this batch: save scheduler state now
  bool stopping_ = false, interrupted_ = false;
  double started_ = 0, last_progress_ = 0, last_state_save_ = 0;
};

}  // namespace tune::internal
