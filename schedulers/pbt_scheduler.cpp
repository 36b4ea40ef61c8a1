// Population based training (Jaderberg et al. 2017; Ray's
// PopulationBasedTraining) and PB2 (Parker-Holder et al. 2020).
//
// Every perturbation_interval (of time_attr) after burn_in_period, a trial in
// the bottom quantile_fraction of the population (by its latest score) clones
// the latest checkpoint and config of a random trial of the top quantile
// (never one without a checkpoint) and explores:
// - PBT: each key of hyperparam_mutations is resampled from its domain with
//   resample_probability, else a number is multiplied by one of
//   perturbation_factors (clipped to the domain's bounds, integers rounded) and
//   a list value moves to a neighbouring list entry.
// - PB2: each key of hyperparam_bounds gets the value that maximises a GP-UCB
//   acquisition over the observed improvement per interval as a function of
//   (time, hyperparameters), fitted on the population's history.
// synch: every live trial pauses at the interval boundary; once all are there
// the quantiles are taken once and the losers exploit as they are resumed.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "schedulers/params.h"
#include "schedulers/scheduler_factory.h"
#include "search/domain.h"
#include "search/gp.h"
#include "search/search_space.h"
#include "tuner/error.h"

namespace tune {
namespace {

using internal::number_at;

// One mutable hyperparameter.
struct Mutation {
  std::string path;
  bool is_list = false;
  std::vector<Json> values;  // is_list
  Domain domain;             // otherwise
  double low = 0, high = 0;  // PB2 bounds
  bool integer = false;      // PB2: round
};

void flatten_mutations(const Json& node, const std::string& prefix, std::vector<std::pair<std::string, Json>>* out) {
  for (const auto& item : node.items()) {
    const std::string path = prefix.empty() ? item.key() : prefix + "." + item.key();
    const Json& v = item.value();
    // A nested mapping of mutations is recognised by having no domain name as its only key.
    if (v.is_object() && !(v.size() == 1 && std::find(domain_names().begin(), domain_names().end(), v.begin().key()) !=
                                                domain_names().end())) {
      flatten_mutations(v, path, out);
    } else {
      out->emplace_back(path, v);
    }
  }
}

struct Member {
  Json config;
  double score = NAN;   // latest, in max-form
  double last_perturb = 0;
  bool has_checkpoint = false;
  bool alive = true;
  bool waiting = false;               // synch: paused at the boundary
  std::optional<TrialDecision> plan;  // synch: what happens when it resumes
  // PB2 data: (time, score) at each result and the config in force.
  std::vector<std::pair<double, double>> history;
};

class PbtScheduler : public Scheduler {
 public:
  PbtScheduler(const Json& params, const std::string& metric, const std::string& mode, bool pb2) : pb2_(pb2) {
    const char* type = pb2 ? "pb2" : "pbt";
    std::vector<std::string> keys = {"time_attr", "metric", "mode", "perturbation_interval", "burn_in_period",
                                     "quantile_fraction", "synch", "seed"};
    if (pb2) {
      keys.push_back("hyperparam_bounds");
    } else {
      for (const char* k : {"hyperparam_mutations", "resample_probability", "perturbation_factors"}) keys.push_back(k);
    }
    internal::SchedulerParams p(type, params, keys);
    time_attr_ = p.string("time_attr", "time_total_s");
    metric_ = p.metric(metric);
    sign_ = p.mode(mode) == "max" ? 1.0 : -1.0;
    interval_ = p.number("perturbation_interval", 60, 0, false);
    burn_in_ = p.number("burn_in_period", 0, 0, true);
    quantile_ = p.number_in("quantile_fraction", 0.25, 0, 0.5);
    synch_ = p.boolean("synch", false);
    rng_.seed(static_cast<uint64_t>(p.integer("seed", 0, 0)));
    if (pb2) {
      parse_bounds(p);
    } else {
      resample_ = p.number_in("resample_probability", 0.25, 0, 1);
      if (p.has("perturbation_factors")) {
        const Json& f = p.raw("perturbation_factors");
        if (!f.is_array() || f.empty() || !std::all_of(f.begin(), f.end(), [](const Json& x) { return x.is_number() && x.get<double>() > 0; }))
          p.fail("perturbation_factors", "must be a non-empty list of positive numbers");
        factors_ = f.get<std::vector<double>>();
      }
      parse_mutations(p);
    }
  }

  void on_trial_add(int64_t trial, const Json& config) override {
    if (!members_.count(trial)) members_[trial].config = config;
  }
  void on_checkpoint(int64_t trial, int64_t) override { members_[trial].has_checkpoint = true; }
  void on_trial_complete(int64_t trial, const Json&) override { end(trial); }
  void on_trial_error(int64_t trial) override { end(trial); }

  TrialDecision on_result(int64_t trial, const Json& result) override {
    Member& m = members_[trial];
    double t = 0, value = 0;
    if (!number_at(result, time_attr_, &t) || !number_at(result, metric_, &value)) return TrialDecision::next();
    m.score = sign_ * value;
    m.history.emplace_back(t, m.score);
    if (t < burn_in_ || t - m.last_perturb < interval_) return TrialDecision::next();
    m.last_perturb = t;
    if (synch_) {
      m.waiting = true;
      plan_if_all_waiting();
      return TrialDecision::pause();
    }
    return decide(trial, t);
  }

  std::optional<int64_t> choose_trial_to_run(const std::vector<int64_t>& paused) override {
    for (int64_t trial : paused) {
      auto it = members_.find(trial);
      if (it != members_.end() && it->second.plan) return trial;
    }
    return std::nullopt;
  }

  TrialDecision on_trial_resume(int64_t trial) override {
    Member& m = members_[trial];
    TrialDecision d = m.plan ? *m.plan : TrialDecision::next();
    m.plan.reset();
    m.waiting = false;
    if (d.action == TrialAction::kExploit) m.config = d.new_config;
    return d;
  }

  // Synch: while trials wait at the boundary, new ones would join late.
  bool can_start_new_trial() const override { return true; }

  Json save_state() const override {
    Json members = Json::array();
    for (const auto& [trial, m] : members_) {
      Json plan = nullptr;
      if (m.plan) plan = {{"action", static_cast<int>(m.plan->action)}, {"donor", m.plan->donor}, {"config", m.plan->new_config}};
      members.push_back({{"trial", trial}, {"config", m.config}, {"score", std::isnan(m.score) ? Json() : Json(m.score)},
                         {"last_perturb", m.last_perturb}, {"has_checkpoint", m.has_checkpoint}, {"alive", m.alive},
                         {"waiting", m.waiting}, {"plan", plan}, {"history", m.history}});
    }
    std::ostringstream rng;
    rng << rng_;
    return {{"members", members}, {"rng", rng.str()}};
  }

  void restore_state(const Json& state) override {
    members_.clear();
    for (const Json& j : state.at("members")) {
      Member& m = members_[j.at("trial").get<int64_t>()];
      m.config = j.at("config");
      m.score = j.at("score").is_null() ? NAN : j.at("score").get<double>();
      m.last_perturb = j.at("last_perturb").get<double>();
      m.has_checkpoint = j.at("has_checkpoint").get<bool>();
      m.alive = j.at("alive").get<bool>();
      m.waiting = j.at("waiting").get<bool>();
      if (!j.at("plan").is_null())
        m.plan = TrialDecision{static_cast<TrialAction>(j["plan"]["action"].get<int>()), j["plan"]["donor"].get<int64_t>(),
                               j["plan"]["config"]};
      m.history = j.at("history").get<std::vector<std::pair<double, double>>>();
    }
    std::istringstream rng(state.at("rng").get<std::string>());
    rng >> rng_;
  }

 private:
  void parse_mutations(const internal::SchedulerParams& p) {
    if (!p.has("hyperparam_mutations") || !p.raw("hyperparam_mutations").is_object() || p.raw("hyperparam_mutations").empty())
      throw ConfigError("scheduler pbt needs hyperparam_mutations: a mapping of parameter -> domain or list of values");
    std::vector<std::pair<std::string, Json>> flat;
    flatten_mutations(p.raw("hyperparam_mutations"), "", &flat);
    for (const auto& [path, spec] : flat) {
      Mutation m;
      m.path = path;
      if (spec.is_array()) {
        if (spec.empty()) throw ConfigError("scheduler pbt: hyperparam_mutations." + path + " must not be an empty list");
        m.is_list = true;
        m.values = spec.get<std::vector<Json>>();
      } else if (spec.is_object() && spec.size() == 1) {
        try {
          m.domain = make_domain(spec.begin().key(), spec.begin().value());
        } catch (const ConfigError& e) {
          throw ConfigError("scheduler pbt: hyperparam_mutations." + path + ": " + e.what());
        }
        if (m.domain.kind == Domain::Kind::kGrid)
          throw ConfigError("scheduler pbt: hyperparam_mutations." + path + ": grid_search cannot be mutated; use a list");
      } else {
        throw ConfigError("scheduler pbt: hyperparam_mutations." + path +
                          " must be a domain (e.g. {loguniform: [1e-4, 1e-1]}) or a list of values, got " + spec.dump());
      }
      mutations_.push_back(std::move(m));
    }
  }

  void parse_bounds(const internal::SchedulerParams& p) {
    if (!p.has("hyperparam_bounds") || !p.raw("hyperparam_bounds").is_object() || p.raw("hyperparam_bounds").empty())
      throw ConfigError("scheduler pb2 needs hyperparam_bounds: a mapping of parameter -> [low, high]");
    std::vector<std::pair<std::string, Json>> flat;
    flatten_mutations(p.raw("hyperparam_bounds"), "", &flat);
    for (const auto& [path, b] : flat) {
      if (!b.is_array() || b.size() != 2 || !b[0].is_number() || !b[1].is_number() || !(b[0].get<double>() < b[1].get<double>()))
        throw ConfigError("scheduler pb2: hyperparam_bounds." + path + " must be [low, high] with low < high, got " + b.dump());
      Mutation m;
      m.path = path;
      m.low = b[0].get<double>();
      m.high = b[1].get<double>();
      m.integer = b[0].is_number_integer() && b[1].is_number_integer();
      mutations_.push_back(std::move(m));
    }
  }

  void end(int64_t trial) {
    Member& m = members_[trial];
    m.alive = false;
    m.waiting = false;
    if (synch_) plan_if_all_waiting();
  }

  // Bottom and top quantiles of the live trials with a score (Ray's rule:
  // ceil(n * fraction) each, at most half of them).
  void quantiles(std::vector<int64_t>* lower, std::vector<int64_t>* upper) const {
    std::vector<std::pair<double, int64_t>> ranked;
    for (const auto& [trial, m] : members_) {
      if (m.alive && !std::isnan(m.score)) ranked.emplace_back(m.score, trial);
    }
    std::sort(ranked.begin(), ranked.end());
    if (ranked.size() <= 1) return;
    auto n = static_cast<size_t>(std::ceil(static_cast<double>(ranked.size()) * quantile_));
    n = std::min(n, ranked.size() / 2);
    for (size_t i = 0; i < n; ++i) lower->push_back(ranked[i].second);
    for (size_t i = ranked.size() - n; i < ranked.size(); ++i) upper->push_back(ranked[i].second);
  }

  TrialDecision decide(int64_t trial, double t) {
    std::vector<int64_t> lower, upper;
    quantiles(&lower, &upper);
    if (std::find(lower.begin(), lower.end(), trial) == lower.end()) return TrialDecision::next();
    std::vector<int64_t> donors;
    for (int64_t u : upper) {
      if (members_[u].has_checkpoint && u != trial) donors.push_back(u);
    }
    if (donors.empty()) return TrialDecision::next();
    const int64_t donor = donors[std::uniform_int_distribution<size_t>(0, donors.size() - 1)(rng_)];
    Json config = pb2_ ? pb2_explore(members_[donor].config, t) : explore(members_[donor].config);
    members_[trial].config = config;
    members_[trial].score = members_[donor].score;  // it now continues from the donor's state
    return TrialDecision::exploit(donor, std::move(config));
  }

  void plan_if_all_waiting() {
    bool any = false;
    for (const auto& [trial, m] : members_) {
      if (m.alive && !m.waiting) return;
      any = any || m.waiting;
    }
    if (!any) return;
    std::vector<int64_t> waiting;
    for (const auto& [trial, m] : members_) {
      if (m.waiting) waiting.push_back(trial);
    }
    for (int64_t trial : waiting) {
      Member& m = members_[trial];
      m.plan = decide(trial, m.last_perturb);
      if (m.plan->action == TrialAction::kExploit) m.config = members_[trial].config;
    }
  }

  Json explore(const Json& donor_config) {
    Json config = donor_config;
    std::uniform_real_distribution<double> unit(0, 1);
    for (const Mutation& m : mutations_) {
      const Json* current = find_path(config, m.path);
      const bool resample = unit(rng_) < resample_;
      if (m.is_list) {
        auto it = current ? std::find(m.values.begin(), m.values.end(), *current) : m.values.end();
        if (resample || it == m.values.end()) {
          set_path(config, m.path, m.values[std::uniform_int_distribution<size_t>(0, m.values.size() - 1)(rng_)]);
        } else {
          auto index = static_cast<int64_t>(it - m.values.begin()) + (unit(rng_) < 0.5 ? -1 : 1);
          index = std::clamp<int64_t>(index, 0, static_cast<int64_t>(m.values.size()) - 1);
          set_path(config, m.path, m.values[static_cast<size_t>(index)]);
        }
        continue;
      }
      const bool numeric_domain = m.domain.kind == Domain::Kind::kFloat || m.domain.kind == Domain::Kind::kInt ||
                                  m.domain.kind == Domain::Kind::kNormal;
      if (resample || !current || !current->is_number() || !numeric_domain) {
        set_path(config, m.path, m.domain.sample(rng_));
        continue;
      }
      double value = current->get<double>() * factors_[std::uniform_int_distribution<size_t>(0, factors_.size() - 1)(rng_)];
      if (m.domain.kind != Domain::Kind::kNormal) {
        const double high = m.domain.kind == Domain::Kind::kInt && !m.domain.upper_inclusive ? m.domain.high - 1 : m.domain.high;
        value = std::clamp(value, m.domain.low, high);
      }
      if (m.domain.kind == Domain::Kind::kInt) {
        set_path(config, m.path, static_cast<int64_t>(std::llround(value)));
      } else {
        set_path(config, m.path, value);
      }
    }
    return config;
  }

  // PB2: data = (t, x) -> improvement of the score over the last step, for
  // every live trial's history; new x maximises UCB at time t.
  Json pb2_explore(const Json& donor_config, double t) {
    Json config = donor_config;
    const size_t d = mutations_.size();
    std::vector<std::vector<double>> xs;
    std::vector<double> ys;
    double t_max = t;
    for (const auto& [trial, m] : members_) {
      for (const auto& h : m.history) t_max = std::max(t_max, h.first);
    }
    for (const auto& [trial, m] : members_) {
      std::vector<double> x(d + 1);
      for (size_t i = 0; i < d; ++i) {
        const Json* v = find_path(m.config, mutations_[i].path);
        x[i + 1] = v && v->is_number() ? (v->get<double>() - mutations_[i].low) / (mutations_[i].high - mutations_[i].low) : 0.5;
      }
      // The config in force is the member's current one; older steps may have
      // used another (before an exploit); the recent window matters most.
      const size_t window = std::min<size_t>(m.history.size(), 8);
      for (size_t k = m.history.size() - window + (window > 0 ? 1 : 0); k < m.history.size(); ++k) {
        const double dt = m.history[k].first - m.history[k - 1].first;
        if (dt <= 0) continue;
        x[0] = t_max > 0 ? m.history[k].first / t_max : 0;
        xs.push_back(x);
        ys.push_back((m.history[k].second - m.history[k - 1].second) / dt);
      }
    }
    std::uniform_real_distribution<double> unit(0, 1);
    std::vector<double> best(d);
    for (auto& b : best) b = unit(rng_);
    if (xs.size() >= 2) {
      GaussianProcess gp;
      gp.fit(xs, ys, rng_());
      const double beta = 2.0;  // UCB exploration weight (PB2's default kappa region)
      double best_ucb = -INFINITY;
      for (int c = 0; c < 256; ++c) {
        std::vector<double> x(d + 1);
        x[0] = t_max > 0 ? t / t_max : 0;
        for (size_t i = 0; i < d; ++i) x[i + 1] = unit(rng_);
        double mean = 0, var = 0;
        gp.predict(x, &mean, &var);
        const double ucb = mean + std::sqrt(beta * std::max(var, 0.0));
        if (ucb > best_ucb) {
          best_ucb = ucb;
          best.assign(x.begin() + 1, x.end());
        }
      }
    }
    for (size_t i = 0; i < d; ++i) {
      const Mutation& m = mutations_[i];
      const double value = m.low + best[i] * (m.high - m.low);
      if (m.integer) {
        set_path(config, m.path, static_cast<int64_t>(std::llround(value)));
      } else {
        set_path(config, m.path, value);
      }
    }
    return config;
  }

  bool pb2_ = false;
  std::string time_attr_, metric_;
  double sign_ = -1, interval_ = 60, burn_in_ = 0, quantile_ = 0.25, resample_ = 0.25;
  std::vector<double> factors_ = {1.2, 0.8};
  bool synch_ = false;
  std::vector<Mutation> mutations_;
  std::map<int64_t, Member> members_;
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<Scheduler> internal::make_pbt(const Json& params, const std::string& metric, const std::string& mode,
                                              bool pb2) {
  return std::make_unique<PbtScheduler>(params, metric, mode, pb2);
}

}  // namespace tune
