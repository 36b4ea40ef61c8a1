// A fake executor and a fake clock for driving the Driver a step at a time:
// no threads, no processes, no sleeping.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "test_util.h"
#include "tuner/driver/driver_impl.h"
#include "tuner/exec/executor.h"

namespace tune::testing {

class FakeClock : public internal::Clock {
 public:
  double now() const override { return now_; }
  double unix_time() const override { return 1.7e9 + now_; }
  void advance(double seconds) { now_ += seconds; }

 private:
  double now_ = 1000;
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
  void crash(const internal::AttemptId& attempt, const std::string& message, bool lost = false) {
    internal::TrialEvent event;
    event.kind = internal::TrialEvent::Kind::kFailed;
    event.attempt = attempt;
    event.message = message;
    event.lost = lost;
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
};

}  // namespace tune::testing
