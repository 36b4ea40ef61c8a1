// PB2 (Parker-Holder et al. 2020, "Provably Efficient Online Hyperparameter
// Optimization with Population-Based Bandits"): PBT whose explore step gives
// each key of hyperparam_bounds the value that maximises a GP-UCB acquisition
// over the observed improvement per interval as a function of (time,
// hyperparameters), fitted on the population's history.
#include <cmath>

#include "base/error.h"
#include "schedulers/pbt_scheduler.h"
#include "schedulers/scheduler_factory.h"
#include "search/gp.h"
#include "search/search_space.h"

namespace tune::internal {
namespace {

std::vector<std::string> pb2_keys() {
  std::vector<std::string> keys = {"time_attr", "metric", "mode", "perturbation_interval", "burn_in_period",
                                   "quantile_fraction", "synch", "seed", "hyperparam_bounds"};
  return keys;
}

class Pb2Scheduler : public PbtScheduler {
 public:
  Pb2Scheduler(const Json& params, const std::string& metric, const std::string& mode)
      : PbtScheduler("pb2", params, pb2_keys(), metric, mode) {
    const SchedulerParams p("pb2", params, pb2_keys());
    if (!p.has("hyperparam_bounds") || !p.raw("hyperparam_bounds").is_object() || p.raw("hyperparam_bounds").empty())
      throw ConfigError("scheduler pb2 needs hyperparam_bounds: a mapping of parameter -> [low, high]");
    for (const auto& [path, b] : flatten_hyperparams(p.raw("hyperparam_bounds"))) {
      if (!b.is_array() || b.size() != 2 || !b[0].is_number() || !b[1].is_number() ||
          !(b[0].get<double>() < b[1].get<double>()))
        throw ConfigError("scheduler pb2: hyperparam_bounds." + path + " must be [low, high] with low < high, got " +
                          b.dump());
      bounds_.push_back({path, b[0].get<double>(), b[1].get<double>(), b[0].is_number_integer() && b[1].is_number_integer()});
    }
  }

 protected:
  bool keeps_history() const override { return true; }
  // Data: (t, x) -> improvement of the score over the last step, for every
  // trial's recent history; the new x maximises UCB at time t.
  Json explore(const Json& donor_config, double t) override {
    std::vector<std::vector<double>> xs;
    std::vector<double> ys;
    const double t_max = history(t, &xs, &ys);
    std::uniform_real_distribution<double> unit(0, 1);
    const size_t d = bounds_.size();
    std::vector<double> best(d);
    for (auto& b : best) b = unit(rng());
    if (xs.size() >= 2) {
      GaussianProcess gp;
      gp.fit(xs, ys, rng()());
      const double beta = 2.0;  // UCB exploration weight (PB2's default kappa region)
      double best_ucb = -INFINITY;
      for (int c = 0; c < 256; ++c) {
        std::vector<double> x(d + 1);
        x[0] = t_max > 0 ? t / t_max : 0;
        for (size_t i = 0; i < d; ++i) x[i + 1] = unit(rng());
        double mean = 0, var = 0;
        gp.predict(x, &mean, &var);
        const double ucb = mean + std::sqrt(beta * std::max(var, 0.0));
        if (ucb > best_ucb) {
          best_ucb = ucb;
          best.assign(x.begin() + 1, x.end());
        }
      }
    }
    Json config = donor_config;
    for (size_t i = 0; i < d; ++i) {
      const Bounds& b = bounds_[i];
      const double value = b.low + best[i] * (b.high - b.low);
      if (b.integer) {
        set_path(config, b.path, static_cast<int64_t>(std::llround(value)));
      } else {
        set_path(config, b.path, value);
      }
    }
    return config;
  }

 private:
  struct Bounds {
    std::string path;
    double low = 0, high = 0;
    bool integer = false;  // both bounds integers: values are rounded
  };

  // The GP's data from the members' recent history; returns the latest time.
  double history(double t, std::vector<std::vector<double>>* xs, std::vector<double>* ys) const {
    const size_t d = bounds_.size();
    double t_max = t;
    for (const auto& [trial, m] : members()) t_max = std::max(t_max, m.history_t_max);
    for (const auto& [trial, m] : members()) {
      std::vector<double> x(d + 1);
      for (size_t i = 0; i < d; ++i) {
        const Json* v = find_path(m.config, bounds_[i].path);
        x[i + 1] = v && v->is_number() ? (v->get<double>() - bounds_[i].low) / (bounds_[i].high - bounds_[i].low) : 0.5;
      }
      // The config in force is the member's current one; older steps may have
      // used another (before an exploit); the recent window matters most.
      const size_t window = std::min<size_t>(m.history.size(), kHistory);
      for (size_t k = m.history.size() - window + (window > 0 ? 1 : 0); k < m.history.size(); ++k) {
        const double dt = m.history[k].first - m.history[k - 1].first;
        if (dt <= 0) continue;
        x[0] = t_max > 0 ? m.history[k].first / t_max : 0;
        xs->push_back(x);
        ys->push_back((m.history[k].second - m.history[k - 1].second) / dt);
      }
    }
    return t_max;
  }

  std::vector<Bounds> bounds_;
};

}  // namespace

std::unique_ptr<Scheduler> make_pb2(const Json& params, const std::string& metric, const std::string& mode) {
  return std::make_unique<Pb2Scheduler>(params, metric, mode);
}

}  // namespace tune::internal
