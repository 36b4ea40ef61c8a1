// A fake executor and a fake clock for driving the Driver a step at a time:
// no threads, no processes, no sleeping.
#pragma once

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "test_util.h"
#include "tuner/driver/driver_impl.h"
#include "tuner/driver/prepare.h"
#include "tuner/exec/executor.h"
#include "tuner/exec/transport.h"

namespace tune::testing {

class FakeClock : public internal::Clock {
 public:
  double now() const override { return now_; }
  double unix_time() const override { return 1.7e9 + now_ + wall_offset_; }
  void advance(double seconds) { now_ += seconds; }
  // The wall clock alone set back (NTP, a VM restored from a snapshot).
  void set_wall_back(double seconds) { wall_offset_ -= seconds; }

 private:
  double now_ = 1000, wall_offset_ = 0;
};

// Records what the driver asks; the test plays the trials' part.
class FakeExecutor : public internal::TrialExecutor {
 public:
  struct Started {
    internal::AttemptId attempt;
    internal::TrialStart trial;
    internal::Placement placement;
  };

  explicit FakeExecutor(internal::EventSink& sink) : sink_(sink) {}

  void start(const internal::AttemptId& attempt, internal::TrialStart trial,
             const internal::Placement& placement) override {
    started.push_back({attempt, std::move(trial), placement});
    live_.insert(attempt);
  }
  void cancel(const internal::AttemptId& attempt, const std::string&) override { cancelled.push_back(attempt); }
  int live() const override { return static_cast<int>(live_.size()); }
  void shutdown() override { shut_down = true; }

  // A result of `attempt`; the verdict lands in verdicts[attempt] once the
  // driver has committed it.
  void report(const internal::AttemptId& attempt, Json metrics, std::string checkpoint = "") {
    internal::TrialEvent event;
    event.kind = internal::TrialEvent::Kind::kResult;
    event.attempt = attempt;
    event.metrics = std::move(metrics);
    event.checkpoint = std::move(checkpoint);
    event.reply = [this, attempt](internal::Verdict v) { verdicts[attempt].push_back(v); };
    sink_.push(std::move(event));
  }
  void end(const internal::AttemptId& attempt, bool stopped) {
    internal::TrialEvent event;
    event.kind = internal::TrialEvent::Kind::kEnded;
    event.attempt = attempt;
    event.stopped = stopped;
    live_.erase(attempt);
    sink_.push(std::move(event));
  }
  void crash(const internal::AttemptId& attempt, const std::string& message, bool lost = false,
             std::vector<std::string> lost_hosts = {}, bool uncertain = false) {
    internal::TrialEvent event;
    event.kind = internal::TrialEvent::Kind::kFailed;
    event.attempt = attempt;
    event.message = message;
    event.lost = lost;
    event.lost_hosts = std::move(lost_hosts);
    event.blame_uncertain = uncertain;
    live_.erase(attempt);
    sink_.push(std::move(event));
  }
  // The attempt could not start: this process had no descriptor left.
  void out_of_descriptors(const internal::AttemptId& attempt) {
    internal::TrialEvent event;
    event.kind = internal::TrialEvent::Kind::kFailed;
    event.attempt = attempt;
    event.message = "cannot create pipes for the trial's program: Too many open files";
    event.out_of_descriptors = true;
    live_.erase(attempt);
    sink_.push(std::move(event));
  }
  // Ends every attempt still live (the trials "crash"), so a driver left
  // mid-sweep can be destroyed at once.
  void end_all() {
    const std::set<internal::AttemptId> live = live_;
    for (const auto& attempt : live) crash(attempt, "the test ended", true);
  }
  const std::set<internal::AttemptId>& live_attempts() const { return live_; }

  // Host checks: recorded, and answered at once by `answer` (default: the
  // host passes) unless `hold_checks`, when the test answers with answer_check.
  bool checks_hosts() const override { return checking; }
  void check_host(const internal::HostCheckRequest& request) override {
    checks.push_back(request);
    if (hold_checks) return;
    internal::HostCheckResult result = answer ? answer(request) : internal::HostCheckResult{request.host, true, "", false};
    result.clean = !request.clean_experiment.empty();
    answers_.push_back(std::move(result));
  }
  std::vector<internal::HostCheckResult> take_host_checks() override {
    std::vector<internal::HostCheckResult> out;
    out.swap(answers_);
    return out;
  }
  void answer_check(const std::string& host, bool ok, const std::string& problem = "") {
    answers_.push_back({host, ok, problem, false});
  }
  bool checking = false, hold_checks = false;
  std::function<internal::HostCheckResult(const internal::HostCheckRequest&)> answer;
  std::vector<internal::HostCheckRequest> checks;

  // The last verdict the driver sent for `attempt`.
  std::optional<internal::Verdict> verdict(const internal::AttemptId& attempt) const {
    auto it = verdicts.find(attempt);
    if (it == verdicts.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  }
  // The start of trial `index`'s latest attempt.
  const Started* latest(int64_t index) const {
    for (auto it = started.rbegin(); it != started.rend(); ++it)
      if (it->attempt.trial == index) return &*it;
    return nullptr;
  }

  std::vector<Started> started;
  std::vector<internal::AttemptId> cancelled;
  std::map<internal::AttemptId, std::vector<internal::Verdict>> verdicts;
  bool shut_down = false;

 private:
  internal::EventSink& sink_;
  std::set<internal::AttemptId> live_;
  std::vector<internal::HostCheckResult> answers_;
};

// The driver over a fake executor and clock, a step at a time.
class Harness {
 public:
  explicit Harness(const std::string& storage = "") : storage_(storage.empty() ? dir_.path() : storage) {}
  ~Harness() {
    if (fake) fake->end_all();
  }

  // `hosts`: several hosts (loopback addresses, so that the driver finds
  // its own address toward them), each `slots` slots; none: this machine.
  void open(SweepSpec spec, int slots, std::unique_ptr<Scheduler> scheduler, bool resume = false,
            bool run_ahead = true, const std::vector<std::string>& hosts = {}) {
    RunConfig run;
    run.storage_path = storage_;
    run.slots = slots;
    run.verbose = verbose;
    run.progress_interval_s = 1e9;  // verbose: the table at the end only
    run.run_ahead = run_ahead;
    auto sweep = internal::prepare_sweep(std::move(spec), run, [](Session&) {}, std::move(scheduler), nullptr, resume);
    if (!hosts.empty()) {
      sweep.hosts.clear();
      for (const auto& name : hosts) sweep.hosts.push_back({name, slots, 0, false});
      sweep.slots = slots * static_cast<int>(hosts.size());
      run.secret_file = dir_.file("cluster.key");
      if (!std::filesystem::exists(run.secret_file)) internal::write_cluster_key(run.secret_file);
    }
    internal::DriverEnvironment env;
    env.clock = &clock;
    env.interrupt = &interrupt;
    env.unpacked_final_trials = unpacked_final_trials;
    env.starts_per_turn = starts_per_turn;
    env.copy_checkpoint = copy_checkpoint;
    env.make_executor = [this, checks = !hosts.empty()](const internal::ExecutorContext& context) {
      auto executor = std::make_unique<FakeExecutor>(context.events);
      executor->checking = checks;
      executor->answer = answer;
      fake = executor.get();
      return executor;
    };
    driver = std::make_unique<internal::Driver>(std::move(sweep), run, resume, env);
    driver->open();
  }
  bool step() { return driver->step(std::chrono::microseconds(0)); }
  // Steps until `done` (a PBT exploit's copy is made on a thread of its own,
  // which wakes the step's wait): false if it is not done within 10 s.
  bool step_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      driver->step(std::chrono::milliseconds(100));
    }
    return true;
  }
  // Driver::finish() destroys the executor: `fake` is gone with it.
  void finish() {
    fake = nullptr;  // also when finish() throws (NoHostsLeft): the executor is gone by then
    driver->finish();
  }

  TrialRecord trial(int64_t index) { return *driver->store().trial(driver->experiment_id(), index); }
  std::string status(int64_t index) { return trial(index).status; }
  // A checkpoint directory holding one file.
  std::string checkpoint(const std::string& name, const std::string& content) {
    const std::string path = dir_.file(name);
    std::filesystem::create_directories(path);
    std::ofstream(path + "/state") << content;
    return path;
  }

  FakeClock clock;
  std::atomic<int> interrupt{0};
  size_t unpacked_final_trials = 4096;  // DriverEnvironment's, set before open()
  int starts_per_turn = 64;              // DriverEnvironment's, set before open()
  // DriverEnvironment's, set before open(): how an exploit copies a checkpoint.
  std::function<void(const std::string&, const std::filesystem::path&)> copy_checkpoint;
  bool verbose = false;                  // RunConfig's: the progress table at finish()
  // How the fake executor answers host checks (default: every host passes).
  std::function<internal::HostCheckResult(const internal::HostCheckRequest&)> answer;
  FakeExecutor* fake = nullptr;
  std::unique_ptr<internal::Driver> driver;

 private:
  TempDir dir_;
  std::string storage_;
};



}  // namespace tune::testing
