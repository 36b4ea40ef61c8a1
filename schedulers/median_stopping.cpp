// Median stopping rule (Golovin et al. 2017, Google Vizier; Ray's
// MedianStoppingRule): after grace_period, a trial is stopped when its best
// result so far is worse than the median of the other trials' running means
// (the mean of each one's results up to the same time), once at least
// min_samples_required other trials have results by then.
#include <algorithm>
#include <cmath>
#include <map>

#include "schedulers/params.h"
#include "schedulers/scheduler_factory.h"

namespace tune {
namespace {

using internal::number_at;

class MedianStoppingRule : public Scheduler {
 public:
  MedianStoppingRule(const Json& params, const std::string& metric, const std::string& mode) {
    internal::SchedulerParams p("median_stopping", params,
                                {"time_attr", "metric", "mode", "grace_period", "min_samples_required",
                                 "min_time_slice", "hard_stop"});
    time_attr_ = p.string("time_attr", "time_total_s");
    metric_ = p.metric(metric);
    sign_ = p.mode(mode) == "max" ? 1.0 : -1.0;
    grace_ = p.number("grace_period", 60, Bound::at_least(0));
    min_samples_ = p.whole_number("min_samples_required", 3, 1);
    min_slice_ = p.number("min_time_slice", 0, Bound::at_least(0));
    if (!p.boolean("hard_stop", true))
      p.fail("hard_stop", "must be true (pausing instead of stopping is not supported: a paused trial would only be judged again)");
  }

  TrialDecision on_result(int64_t trial, const Json& result) override {
    double t = 0, value = 0;
    if (!number_at(result, time_attr_, &t) || !number_at(result, metric_, &value)) return TrialDecision::next();
    History& h = history_[trial];
    h.points.emplace_back(t, sign_ * value);
    h.best = std::max(h.best, sign_ * value);
    if (t < grace_ || t - h.last_check < min_slice_) return TrialDecision::next();
    h.last_check = t;
    std::vector<double> means;
    for (const auto& [other, oh] : history_) {
      if (other == trial) continue;
      double sum = 0;
      int n = 0;
      for (const auto& [ot, score] : oh.points) {
        if (ot > t) break;
        sum += score;
        ++n;
      }
      if (n > 0) means.push_back(sum / n);
    }
    if (static_cast<int64_t>(means.size()) < min_samples_) return TrialDecision::next();
    std::sort(means.begin(), means.end());
    const double median = internal::percentile_of_sorted(means, 50);
    return h.best < median ? TrialDecision::stop() : TrialDecision::next();
  }

  // With iterations as the time attribute: only from the grace period on,
  // every min_time_slice.
  bool may_decide(int64_t trial, int64_t training_iteration) const override {
    if (time_attr_ != "training_iteration") return true;
    const auto t = static_cast<double>(training_iteration);
    const auto h = history_.find(trial);
    const double last_check = h == history_.end() ? -1e300 : h->second.last_check;
    return !(t < grace_ || t - last_check < min_slice_);
  }

  Json save_state() const override {
    Json state = Json::array();
    for (const auto& [trial, h] : history_) state.push_back({trial, h.points, h.last_check});
    return state;
  }

  void restore_state(const Json& state) override {
    for (const Json& item : state) {
      History& h = history_[json_integer<int64_t>(item.at(0))];
      h.points = item[1].get<std::vector<std::pair<double, double>>>();
      h.last_check = item[2].get<double>();
      for (const auto& p : h.points) h.best = std::max(h.best, p.second);
    }
  }

 private:
  struct History {
    std::vector<std::pair<double, double>> points;  // (time, score), time increasing
    double best = -INFINITY;
    double last_check = -1e300;
  };
  std::string time_attr_, metric_;
  double sign_ = -1, grace_ = 60, min_slice_ = 0;
  int64_t min_samples_ = 3;
  std::map<int64_t, History> history_;
};

}  // namespace

std::unique_ptr<Scheduler> internal::make_median_stopping(const Json& params, const std::string& metric,
                                                          const std::string& mode) {
  return std::make_unique<MedianStoppingRule>(params, metric, mode);
}

}  // namespace tune
