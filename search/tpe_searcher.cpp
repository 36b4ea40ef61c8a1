// The "tpe" searcher: Tree-structured Parzen Estimator with the semantics of
// Optuna 3.1's TPESampler (docs/SEARCH.md): startup trials sampled at random,
// observations split at gamma, Parzen estimators with a prior component,
// magic clip, Optuna's ramp weights, n_ei_candidates samples from l(x) ranked
// by log l(x) - log g(x); univariate by default, multivariate (Scott's rule
// bandwidths, BOHB) by option; constant liar for running trials.
//
// Like Optuna, early-stopped trials rank after the trials that reached the
// largest budget (later budgets first, then by value). Unlike Optuna, failed
// trials are not ignored: they join the "above" group (as running trials do
// under constant_liar) so the sampler steers away from regions that fail.
//
// With several objectives it is Optuna 3.1's MOTPE (Ozaki et al. 2020): the
// "below" group is filled by whole non-dominated fronts, the front that does
// not fit is cut by greedy hypervolume subset selection, and below points are
// weighted by their hypervolume contribution (search/motpe.cpp). As in
// Optuna, only trials with every objective finite count (failed ones are
// ignored), and there is no constant liar (Optuna's multi-objective TPE skips
// running trials).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "search/gp.h"
#include "search/model_searcher.h"
#include "base/error.h"

namespace tune::internal {
namespace {

const std::vector<std::string> kTpeKeys = {"n_startup_trials", "n_ei_candidates", "gamma", "gamma_max",
                                           "multivariate", "constant_liar", "prior_weight", "consider_magic_clip",
                                           "consider_endpoints", "early_stopped", "exact_pdf"};

double logsumexp(const std::vector<double>& v) {
  double m = -std::numeric_limits<double>::infinity();
  for (double x : v) m = std::max(m, x);
  if (!std::isfinite(m)) return m;
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}

// Optuna's default_weights: uniform up to 25 observations, then a linear
// ramp from 1/n for the oldest ones and 1 for the latest 25.
std::vector<double> default_weights(size_t n) {
  std::vector<double> w(n, 1.0);
  if (n < 25) return w;
  const size_t ramp = n - 25;
  for (size_t k = 0; k < ramp; ++k) {
    const double start = 1.0 / static_cast<double>(n);
    w[k] = ramp == 1 ? start : start + (1.0 - start) * static_cast<double>(k) / static_cast<double>(ramp - 1);
  }
  return w;
}

struct TpeParams {
  double prior_weight = 1.0;
  bool magic_clip = true, endpoints = false, multivariate = false;
  bool exact_pdf = false;
};

// One Parzen estimator over a set of variables (all of them when
// multivariate, one at a time otherwise).
class Parzen {
 public:
  // obs[k][j]: internal value of variable vars[j] in observation k.
  // `weights`: one per observation (several objectives' below group), or
  // null for Optuna's ramp.
  Parzen(const ModelSpace& space, std::vector<size_t> vars, const std::vector<std::vector<double>>& obs,
         const TpeParams& p, const std::vector<double>* weights = nullptr)
      : space_(space), vars_(std::move(vars)), exact_pdf_(p.exact_pdf) {
    const size_t n = obs.size();
    std::vector<double> w = weights ? *weights : default_weights(n);
    w.push_back(p.prior_weight);  // consider_prior (always on, as Optuna's default)
    double total = 0;
    for (double x : w) total += x;
    for (double& x : w) x /= total;
    log_weights_.resize(w.size());
    for (size_t k = 0; k < w.size(); ++k) log_weights_[k] = std::log(w[k]);
    const size_t m = n + 1;
    const double sigma0 = 0.2 * std::pow(static_cast<double>(std::max<size_t>(n, 1)), -1.0 / (static_cast<double>(vars_.size()) + 4));
    for (size_t j = 0; j < vars_.size(); ++j) {
      const ModelVariable& v = space_.variables()[vars_[j]];
      Dim dim;
      dim.low = v.low;
      dim.high = v.high;
      dim.categorical = v.type == ModelVariable::Type::kCategorical;
      dim.q = (v.type == ModelVariable::Type::kDiscrete && !v.log) ? v.q : 0.0;
      if (dim.categorical) {
        const size_t c = v.choices.size();
        dim.log_probs.assign(m, std::vector<double>(c, 0.0));
        for (size_t k = 0; k < m; ++k) {
          std::vector<double> row(c, p.prior_weight / static_cast<double>(m));
          if (k < n) row[static_cast<size_t>(obs[k][j])] += 1.0;
          double s = 0;
          for (double x : row) s += x;
          for (size_t a = 0; a < c; ++a) dim.log_probs[k][a] = std::log(row[a] / s);
        }
      } else {
        const double range = dim.high - dim.low;
        dim.mus.resize(m);
        dim.sigmas.resize(m);
        for (size_t k = 0; k < n; ++k) dim.mus[k] = obs[k][j];
        dim.mus[n] = 0.5 * (dim.low + dim.high);
        if (p.multivariate) {
          for (size_t k = 0; k < m; ++k) dim.sigmas[k] = sigma0 * range;
        } else {
          // Distance to the farther neighbour among the sorted means (with the
          // bounds as outer neighbours); ends use their inner gap.
          std::vector<size_t> idx(m);
          for (size_t k = 0; k < m; ++k) idx[k] = k;
          std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return dim.mus[a] < dim.mus[b]; });
          std::vector<double> s(m + 2);
          s[0] = dim.low;
          for (size_t k = 0; k < m; ++k) s[k + 1] = dim.mus[idx[k]];
          s[m + 1] = dim.high;
          std::vector<double> sorted_sigma(m);
          for (size_t k = 0; k < m; ++k) sorted_sigma[k] = std::max(s[k + 1] - s[k], s[k + 2] - s[k + 1]);
          if (!p.endpoints && s.size() >= 4) {
            sorted_sigma[0] = s[2] - s[1];
            sorted_sigma[m - 1] = s[m] - s[m - 1];
          }
          for (size_t k = 0; k < m; ++k) dim.sigmas[idx[k]] = sorted_sigma[k];
        }
        const double maxsigma = range;
        const double minsigma = p.magic_clip ? range / std::min(100.0, 1.0 + static_cast<double>(m)) : 1e-12;
        for (auto& sg : dim.sigmas) sg = std::clamp(sg, minsigma, maxsigma);
        dim.sigmas[n] = range;  // prior
        // Each component's mass inside the bounds, once rather than per point.
        dim.log_mass.resize(m);
        for (size_t k = 0; k < m; ++k) {
          const double mu = dim.mus[k], sg = dim.sigmas[k];
          const double z_norm = normal_cdf((dim.high - mu) / sg) - normal_cdf((dim.low - mu) / sg);
          dim.log_mass[k] = std::log(std::max(z_norm, 1e-300));
        }
      }
      dims_.push_back(std::move(dim));
    }
  }

  // Draws `count` points (internal values per variable, snapped).
  std::vector<std::vector<double>> sample(std::mt19937_64& rng, int count) const {
    std::vector<double> w(log_weights_.size());
    for (size_t k = 0; k < w.size(); ++k) w[k] = std::exp(log_weights_[k]);
    std::discrete_distribution<size_t> pick(w.begin(), w.end());
    std::vector<std::vector<double>> out;
    for (int s = 0; s < count; ++s) {
      const size_t k = pick(rng);
      std::vector<double> point(dims_.size());
      for (size_t j = 0; j < dims_.size(); ++j) {
        const Dim& d = dims_[j];
        if (d.categorical) {
          std::vector<double> probs(d.log_probs[k].size());
          for (size_t a = 0; a < probs.size(); ++a) probs[a] = std::exp(d.log_probs[k][a]);
          point[j] = static_cast<double>(std::discrete_distribution<size_t>(probs.begin(), probs.end())(rng));
          continue;
        }
        std::normal_distribution<double> normal(d.mus[k], d.sigmas[k]);
        double x = d.mus[k];
        for (int tries = 0; tries < 100; ++tries) {
          double t = normal(rng);
          if (t >= d.low && t <= d.high) {
            x = t;
            break;
          }
        }
        point[j] = space_.snap(vars_[j], std::clamp(x, d.low, d.high));
      }
      out.push_back(std::move(point));
    }
    return out;
  }

  double log_pdf(const std::vector<double>& point) const {
    std::vector<double> terms(log_weights_);
    for (size_t j = 0; j < dims_.size(); ++j) {
      const Dim& d = dims_[j];
      for (size_t k = 0; k < terms.size(); ++k) {
        if (d.categorical) {
          terms[k] += d.log_probs[k][static_cast<size_t>(point[j])];
          continue;
        }
        const double mu = d.mus[k], sg = d.sigmas[k];
        double lp;
        if (d.q > 0) {
          const double lo = std::max(point[j] - 0.5 * d.q, d.low), hi = std::min(point[j] + 0.5 * d.q, d.high);
          double mass = normal_cdf((hi - mu) / sg) - normal_cdf((lo - mu) / sg);
          lp = mass > 1e-300 ? std::log(mass)
                             : std::log(d.q) - 0.5 * std::pow((point[j] - mu) / sg, 2) - std::log(sg * std::sqrt(2 * M_PI));
        } else {
          // Optuna 3.1's truncnorm.logpdf omits the -log(sigma) of the
          // density (standardized units); kept for identical behaviour
          // unless exact_pdf.
          lp = -0.5 * std::pow((point[j] - mu) / sg, 2) - 0.5 * std::log(2 * M_PI) - (exact_pdf_ ? std::log(sg) : 0.0);
        }
        terms[k] += lp - d.log_mass[k];
      }
    }
    return logsumexp(terms);
  }

 private:
  struct Dim {
    bool categorical = false;
    double low = 0, high = 1, q = 0;
    std::vector<double> mus, sigmas;
    std::vector<double> log_mass;  // log of each component's mass inside [low, high]
    std::vector<std::vector<double>> log_probs;
  };
  const ModelSpace& space_;
  std::vector<size_t> vars_;
  bool exact_pdf_ = false;
  std::vector<double> log_weights_;
  std::vector<Dim> dims_;
};

class TpeSearcher : public ModelSearcher {
 public:
  TpeSearcher(const SearchOptions& options, uint64_t seed, const SearchSpace& space, std::vector<Json> points,
              int64_t total)
      : ModelSearcher(options, seed, space, std::move(points), total, "tpe"), objectives_(options.objectives) {
    const OptionReader p = search_option_reader(options.params, kTpeKeys, "tpe");
    n_startup_ = p.integer_in("n_startup_trials", 10, 0, 1000000);
    n_ei_candidates_ = static_cast<int>(p.integer_in("n_ei_candidates", 24, 1, 1000000));
    gamma_ = p.number_in("gamma", 0.1, 1e-9, 1.0);
    gamma_max_ = p.integer_in("gamma_max", 25, 1, 1000000);
    params_.multivariate = p.boolean("multivariate", false);
    constant_liar_ = p.boolean("constant_liar", false);
    params_.prior_weight = p.number_in("prior_weight", 1.0, 1e-12, 1e12);
    params_.magic_clip = p.boolean("consider_magic_clip", true);
    params_.endpoints = p.boolean("consider_endpoints", false);
    early_stopped_ = p.string("early_stopped", "rank_below", {"rank_below", "as_is"});
    params_.exact_pdf = p.boolean("exact_pdf", false);
    if (constant_liar_ && !objectives_.empty())
      throw ConfigError::at("search.constant_liar",
                            "search.constant_liar is not supported with several metrics (Optuna 3.1's "
                            "multi-objective TPE ignores running trials)");
    // Early-stopped trials exist only under a scheduler, and a sweep with
    // several metrics has none: the option would silently do nothing.
    if (p.has("early_stopped") && !objectives_.empty())
      throw ConfigError::at("search.early_stopped",
                            "search.early_stopped does not apply with several metrics (they run with scheduler fifo)");
  }

 private:
  struct Entry {
    int64_t index;
    double step_key;  // -inf: full budget; -budget: stopped early; +inf: failed or running
    double value;
    const Json* config;
    double weight = 1;  // several objectives: the below group's weight
  };
  // The groups l(x) and g(x) are built from, each in trial order.
  struct Split {
    std::vector<Entry> below, above;
    bool weighted = false;  // below's weights are Entry::weight, not the ramp
  };

  // The below group's size for n counted trials (Optuna's default_gamma).
  size_t below_size(size_t n) const {
    return std::min<size_t>(static_cast<size_t>(std::ceil(gamma_ * static_cast<double>(n))),
                            static_cast<size_t>(gamma_max_));
  }

  // One metric: nullopt while fewer than n_startup_trials trials succeeded.
  std::optional<Split> split_one_metric(int64_t i) const {
    std::vector<ScoredTrial> scored = score_trials(finished(), metric_, mode_);
    std::vector<Entry> entries;
    int64_t n_done = 0;
    const double inf = std::numeric_limits<double>::infinity();
    for (const auto& t : scored) {
      if (t.ok) {
        ++n_done;
        const bool stopped = t.below_full_budget && early_stopped_ == "rank_below";
        entries.push_back({t.index, stopped ? -t.budget : -inf, t.loss, &finished_at(t.index).config});
      } else {
        entries.push_back({t.index, inf, 0.0, &finished_at(t.index).config});
      }
    }
    if (n_done < n_startup_) return std::nullopt;
    if (constant_liar_)
      for (const auto& [index, config] : running(i)) entries.push_back({index, inf, 0.0, config});

    // gamma counts finished trials only (Optuna ignores running ones there).
    size_t n_scored = 0;
    for (const auto& e : entries) n_scored += e.step_key < inf;
    const size_t n = entries.size();
    const size_t n_below = below_size(n_scored);
    std::vector<Entry> ranked = entries;
    std::stable_sort(ranked.begin(), ranked.end(), [](const Entry& a, const Entry& b) {
      if (a.step_key != b.step_key) return a.step_key < b.step_key;
      if (a.value != b.value) return a.value < b.value;
      return a.index < b.index;
    });
    Split split;
    split.below.assign(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(std::min(n_below, n)));
    split.above.assign(ranked.begin() + static_cast<std::ptrdiff_t>(std::min(n_below, n)), ranked.end());
    auto by_index = [](const Entry& a, const Entry& b) { return a.index < b.index; };
    std::sort(split.below.begin(), split.below.end(), by_index);
    std::sort(split.above.begin(), split.above.end(), by_index);
    return split;
  }

  // Several objectives: the trials with every objective finite (their last
  // values, whatever their budget: Optuna's multi-objective TPE ignores the
  // step, and such sweeps run without early-stopping schedulers); nullopt
  // while fewer than n_startup_trials of them.
  std::optional<Split> split_objectives() const {
    std::vector<Entry> feasible;
    std::vector<std::vector<double>> losses;
    for (const Observation& o : finished()) {
      std::vector<double> loss;
      for (const Objective& objective : objectives_)
        if (auto x = observed_loss(o, objective.metric, objective.mode)) loss.push_back(*x);
      if (loss.size() < objectives_.size()) continue;
      feasible.push_back({o.trial_index, -std::numeric_limits<double>::infinity(), 0.0,
                          &finished_at(o.trial_index).config});
      losses.push_back(std::move(loss));
    }
    if (static_cast<int64_t>(feasible.size()) < n_startup_) return std::nullopt;
    const std::vector<size_t> chosen = tpe_multi_objective_below(losses, below_size(feasible.size()));
    std::vector<std::vector<double>> below_losses;
    for (size_t k : chosen) below_losses.push_back(losses[k]);
    const std::vector<double> weights = tpe_multi_objective_weights(below_losses);
    Split split;
    split.weighted = true;
    std::vector<bool> is_below(feasible.size(), false);
    for (size_t c = 0; c < chosen.size(); ++c) {
      is_below[chosen[c]] = true;
      split.below.push_back(feasible[chosen[c]]);
      split.below.back().weight = weights[c];
    }
    for (size_t k = 0; k < feasible.size(); ++k)
      if (!is_below[k]) split.above.push_back(feasible[k]);
    return split;
  }

  Json propose(int64_t i) override {
    auto rng = make_rng(seed_, 4, static_cast<uint64_t>(i));
    const std::optional<Split> split = objectives_.empty() ? split_one_metric(i) : split_objectives();
    if (!split || space_.variables().empty()) return space_.space().resolve(0, rng);
    const std::vector<Entry>& below = split->below;
    const std::vector<Entry>& above = split->above;

    // The estimators' observations: entries whose config has a valid value
    // for every variable in `vars`, with their weights.
    auto observations = [&](const std::vector<Entry>& group, const std::vector<size_t>& vars,
                            std::vector<double>* weights) {
      std::vector<std::vector<double>> out;
      for (const auto& e : group) {
        std::vector<double> row(vars.size());
        bool complete = true;
        for (size_t j = 0; j < vars.size() && complete; ++j) {
          auto x = space_.internal(vars[j], *e.config);
          complete = x.has_value();
          if (complete) row[j] = space_.snap(vars[j], *x);
        }
        if (!complete) continue;
        out.push_back(std::move(row));
        weights->push_back(e.weight);
      }
      return out;
    };
    auto choose = [&](const std::vector<size_t>& vars) {
      std::vector<double> below_weights, above_weights;
      const auto below_obs = observations(below, vars, &below_weights);
      const auto above_obs = observations(above, vars, &above_weights);
      Parzen l(space_, vars, below_obs, params_, split->weighted ? &below_weights : nullptr);
      Parzen g(space_, vars, above_obs, params_);
      return best_candidate(l, g, rng);
    };
    const size_t nv = space_.variables().size();
    std::vector<double> chosen(nv, 0.0);
    if (params_.multivariate) {
      std::vector<size_t> all(nv);
      for (size_t v = 0; v < nv; ++v) all[v] = v;
      chosen = choose(all);
    } else {
      for (size_t v = 0; v < nv; ++v) chosen[v] = choose({v})[0];
    }
    return space_.config_from_internal(chosen);
  }

  std::vector<double> best_candidate(const Parzen& l, const Parzen& g, std::mt19937_64& rng) const {
    auto samples = l.sample(rng, n_ei_candidates_);
    size_t best = 0;
    double best_score = -std::numeric_limits<double>::infinity();
    for (size_t s = 0; s < samples.size(); ++s) {
      const double score = l.log_pdf(samples[s]) - g.log_pdf(samples[s]);
      if (score > best_score) {
        best_score = score;
        best = s;
      }
    }
    return samples[best];
  }

  int64_t n_startup_ = 10, gamma_max_ = 25;
  int n_ei_candidates_ = 24;
  double gamma_ = 0.1;
  bool constant_liar_ = false;
  TpeParams params_;
  std::string early_stopped_;
  std::vector<Objective> objectives_;  // empty with one metric
};

}  // namespace

std::vector<double> tpe_parzen_log_pdf(const SearchSpace& space, const std::vector<Json>& observed,
                                       const std::vector<Json>& at, bool multivariate, bool exact_pdf) {
  ModelSpace model(space, "tpe");
  const size_t nv = model.variables().size();
  auto rows = [&](const std::vector<Json>& configs) {
    std::vector<std::vector<double>> out;
    for (const auto& c : configs) {
      std::vector<double> row(nv);
      for (size_t v = 0; v < nv; ++v) row[v] = model.snap(v, model.internal(v, c).value());
      out.push_back(row);
    }
    return out;
  };
  TpeParams params;
  params.multivariate = multivariate;
  params.exact_pdf = exact_pdf;
  std::vector<size_t> all(nv);
  for (size_t v = 0; v < nv; ++v) all[v] = v;
  Parzen estimator(model, all, rows(observed), params);
  std::vector<double> out;
  for (const auto& row : rows(at)) out.push_back(estimator.log_pdf(row));
  return out;
}

std::unique_ptr<Searcher> make_tpe_searcher(const SearchOptions& options, uint64_t seed, const SearchSpace& space,
                                            const std::vector<Json>& points_to_evaluate, int64_t total) {
  return std::make_unique<TpeSearcher>(options, seed, space, points_to_evaluate, total);
}

}  // namespace tune::internal
