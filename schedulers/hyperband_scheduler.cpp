// HyperBand (Li et al. 2017) with synchronous successive halving in each
// bracket. Trials fill the brackets of hyperband_brackets(max_t, rf) in order
// (s = s_max first), then a new band starts. A trial runs to its bracket's
// current rung and pauses; when every trial of the bracket has reached the rung
// (or ended), the best floor(n/rf) are resumed from their checkpoints for the
// next rung and the others are stopped. At the last rung (max_t) trials stop.
// A bracket that can no longer fill (the searcher is done) halves what it has.
#include <algorithm>
#include <cmath>
#include <map>

#include "schedulers/params.h"
#include "schedulers/scheduler_factory.h"
#include "schedulers/successive_halving.h"

namespace tune {
namespace {

using internal::number_at;

struct Member {
  int64_t trial = 0;
  double score = 0;
  enum State { kRunning, kWaiting, kContinue, kStop, kDone } state = kRunning;
};

struct Bracket {
  std::vector<Rung> rungs;
  int64_t capacity = 0;
  size_t rung = 0;  // current rung index
  std::vector<Member> members;
};

class HyperBandScheduler : public Scheduler {
 public:
  HyperBandScheduler(const Json& params, const std::string& metric, const std::string& mode) {
    internal::SchedulerParams p("hyperband", params,
                                {"time_attr", "metric", "mode", "max_t", "reduction_factor", "stop_last_trials"});
    time_attr_ = p.string("time_attr", "training_iteration");
    metric_ = p.metric(metric);
    sign_ = p.mode(mode) == "max" ? 1.0 : -1.0;
    max_t_ = p.number("max_t", 81, Bound::above(0));
    rf_ = p.number("reduction_factor", 3, Bound::above(1));
    stop_last_ = p.boolean("stop_last_trials", true);
    band_ = hyperband_brackets(max_t_, rf_);
  }

  void on_trial_add(int64_t trial, const Json&) override {
    if (where_.count(trial)) return;
    if (brackets_.empty() || static_cast<int64_t>(brackets_.back().members.size()) >= brackets_.back().capacity) {
      const std::vector<Rung>& rungs = band_[brackets_.size() % band_.size()];
      brackets_.push_back({rungs, rungs.front().trials, 0, {}});
    }
    brackets_.back().members.push_back({trial});
    where_[trial] = brackets_.size() - 1;
  }

  TrialDecision on_result(int64_t trial, const Json& result) override {
    on_trial_add(trial, nullptr);
    double t = 0, value = 0;
    if (!number_at(result, time_attr_, &t) || !number_at(result, metric_, &value)) return TrialDecision::next();
    if (t >= max_t_ && stop_last_) {
      finish(trial);
      return TrialDecision::stop();
    }
    Bracket& b = brackets_[where_[trial]];
    Member& m = member(trial);
    if (m.state != Member::kRunning || t < b.rungs[b.rung].resource) return TrialDecision::next();
    m.score = sign_ * value;
    if (b.rung + 1 == b.rungs.size()) {
      m.state = Member::kDone;
      return TrialDecision::stop();
    }
    m.state = Member::kWaiting;
    halve_if_complete(b);
    return TrialDecision::pause();
  }

  std::optional<int64_t> choose_trial_to_run(const std::vector<int64_t>& paused) override {
    // Losers first (they are ended without a slot), then the next rung's trials, oldest bracket first.
    for (Member::State wanted : {Member::kStop, Member::kContinue}) {
      for (Bracket& b : brackets_) {
        for (Member& m : b.members) {
          if (m.state == wanted && std::find(paused.begin(), paused.end(), m.trial) != paused.end()) return m.trial;
        }
      }
    }
    return std::nullopt;
  }

  TrialDecision on_trial_resume(int64_t trial) override {
    Member& m = member(trial);
    if (m.state == Member::kStop) {
      m.state = Member::kDone;
      return TrialDecision::stop();
    }
    m.state = Member::kRunning;
    return TrialDecision::next();
  }

  void on_trial_complete(int64_t trial, const Json&) override { finish(trial); }
  void on_trial_error(int64_t trial) override { finish(trial); }

  void on_no_more_trials() override {
    no_more_ = true;
    for (Bracket& b : brackets_) halve_if_complete(b);
  }

  Json save_state() const override {
    Json brackets = Json::array();
    for (const Bracket& b : brackets_) {
      Json members = Json::array();
      for (const Member& m : b.members) members.push_back({m.trial, m.score, static_cast<int>(m.state)});
      brackets.push_back({{"capacity", b.capacity}, {"rung", b.rung}, {"members", members}});
    }
    return {{"brackets", brackets}, {"no_more", no_more_}};
  }

  void restore_state(const Json& state) override {
    brackets_.clear();
    where_.clear();
    for (const Json& jb : state.at("brackets")) {
      Bracket b{band_[brackets_.size() % band_.size()], json_integer<int64_t>(jb.at("capacity")),
                json_integer<size_t>(jb.at("rung")), {}};
      for (const Json& jm : jb.at("members")) {
        Member m{json_integer<int64_t>(jm.at(0)), jm.at(1).get<double>(), static_cast<Member::State>(json_integer<int>(jm.at(2)))};
        where_[m.trial] = brackets_.size();
        b.members.push_back(m);
      }
      brackets_.push_back(std::move(b));
    }
    no_more_ = state.value("no_more", false);
  }

 private:
  Member& member(int64_t trial) {
    Bracket& b = brackets_[where_.at(trial)];
    return *std::find_if(b.members.begin(), b.members.end(), [&](const Member& m) { return m.trial == trial; });
  }

  void finish(int64_t trial) {
    auto it = where_.find(trial);
    if (it == where_.end()) return;
    Member& m = member(trial);
    if (m.state == Member::kDone) return;
    m.state = Member::kDone;
    halve_if_complete(brackets_[it->second]);
  }

  // Every member of the bracket has reached the rung (or ended): the top
  // floor(n / rf) of those that reached it continue, the rest stop.
  void halve_if_complete(Bracket& b) {
    const bool full = static_cast<int64_t>(b.members.size()) >= b.capacity || no_more_;
    if (!full || b.rung + 1 >= b.rungs.size()) return;
    std::vector<Member*> waiting;
    for (Member& m : b.members) {
      if (m.state == Member::kRunning || m.state == Member::kContinue) return;  // the rung is not complete
      if (m.state == Member::kWaiting) waiting.push_back(&m);
    }
    if (waiting.empty()) return;
    std::stable_sort(waiting.begin(), waiting.end(), [](const Member* a, const Member* c) { return a->score > c->score; });
    const size_t reached = waiting.size();
    const auto keep = std::max<size_t>(1, static_cast<size_t>(std::floor(static_cast<double>(reached) / rf_ + 1e-9)));
    for (size_t i = 0; i < waiting.size(); ++i) waiting[i]->state = i < keep ? Member::kContinue : Member::kStop;
    b.rung += 1;
  }

  std::string time_attr_, metric_;
  double sign_ = -1, max_t_ = 81, rf_ = 3;
  bool stop_last_ = true, no_more_ = false;
  std::vector<std::vector<Rung>> band_;
  std::vector<Bracket> brackets_;
  std::map<int64_t, size_t> where_;
};

}  // namespace

std::unique_ptr<Scheduler> internal::make_hyperband(const Json& params, const std::string& metric, const std::string& mode) {
  return std::make_unique<HyperBandScheduler>(params, metric, mode);
}

}  // namespace tune
