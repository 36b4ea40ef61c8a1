// The "bayes" searcher: Gaussian-process Bayesian optimization (docs/SEARCH.md).
//
// suggest(i) is a pure function of (seed, i, finished trials, pending trials):
// every random stream is derived from (seed, i) and the GP hyperparameters are
// fitted on a prefix of the finished trials sorted by trial index (refitted on
// a geometric schedule of data sizes, cached in between). That makes resume
// exact: a restored searcher fed the same observations suggests the same
// configs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include <nlopt.hpp>

#include "search/gp.h"
#include "search/model_searcher.h"
#include "search/sobol.h"
#include "search/trust_region.h"
#include "base/error.h"

namespace tune::internal {
namespace {

const std::vector<std::string> kBayesKeys = {
    "n_initial_points", "acquisition", "xi", "kappa", "parallel", "n_candidates", "n_refine", "refine_evaluations",
    "gp_restarts", "early_stopped", "min_pending_distance", "max_fit_points", "trust_region", "min_signal_variance"};

double log_normal_cdf(double z) {
  if (z > -5) return std::log(normal_cdf(z));
  return std::log(0.5 * erfcx(-z / std::sqrt(2.0))) - 0.5 * z * z;
}

// The fewest unit dimensions in which `trust_region: auto` (the default) uses
// the trust region.
constexpr int64_t kTrustRegionDimensions = 4;

// Data sizes at which the hyperparameters are refitted: every size up to 20,
// then sizes growing by 10% (22, 25, 28, 31, 35, ...).
int64_t refit_size(int64_t n) {
  if (n <= 20) return n;
  int64_t c = 20;
  for (;;) {
    int64_t next = static_cast<int64_t>(std::ceil(static_cast<double>(c) * 1.1));
    if (next > n) return c;
    c = next;
  }
}

struct Acquisition {
  std::string kind = "log-ei";
  double xi = 0.0, kappa = 2.0;

  // Value (larger is better) and, when dmu/dsd are non-null, its derivatives
  // with respect to the posterior mean and standard deviation.
  double operator()(double mu, double sd, double best, double* dmu, double* dsd) const {
    sd = std::max(sd, 1e-12);
    if (kind == "ucb") {  // lower confidence bound for minimization
      if (dmu) *dmu = -1, *dsd = kappa;
      return -mu + kappa * sd;
    }
    const double target = best - xi;
    const double z = (target - mu) / sd;
    if (kind == "ei") {
      if (dmu) *dmu = -normal_cdf(z), *dsd = normal_pdf(z);
      return sd * (z * normal_cdf(z) + normal_pdf(z));
    }
    if (kind == "pi") {
      const double lc = log_normal_cdf(z);
      if (dmu) {
        const double r = std::exp(-0.5 * z * z - 0.5 * std::log(2 * M_PI) - lc);  // phi / Phi
        *dmu = -r / sd;
        *dsd = -r * z / sd;
      }
      return lc;
    }
    const double lh = log_h(z);  // log-ei
    if (dmu) {
      const double r = std::exp(log_normal_cdf(z) - lh);  // Phi / h
      *dmu = -r / sd;
      *dsd = 1.0 / sd - r * z / sd;
    }
    return std::log(sd) + lh;
  }
};

// The best value of the acquisition, by bounded L-BFGS over the continuous
// coordinates `free` from `start`; returns (value, point).
std::pair<double, std::vector<double>> refine_acquisition(const GaussianProcess& gp, const Acquisition& acq,
                                                          const std::vector<double>& start,
                                                          const std::vector<size_t>& free, double best,
                                                          int64_t evaluations, const std::vector<double>& lower,
                                                          const std::vector<double>& upper) {
  struct Ctx {
    const GaussianProcess* gp;
    const Acquisition* acq;
    const std::vector<size_t>* free;
    std::vector<double> base;
    double best;
    double best_value = -std::numeric_limits<double>::infinity();
    std::vector<double> best_point;
  } ctx{&gp, &acq, &free, start, best, -std::numeric_limits<double>::infinity(), start};
  auto objective = [](const std::vector<double>& z, std::vector<double>& grad, void* data) -> double {
    auto* c = static_cast<Ctx*>(data);
    std::vector<double> u = c->base;
    for (size_t k = 0; k < c->free->size(); ++k) u[(*c->free)[k]] = z[k];
    double mu = 0, var = 0;
    std::vector<double> gm, gv;
    c->gp->predict_with_gradient(u, &mu, &var, grad.empty() ? nullptr : &gm, grad.empty() ? nullptr : &gv);
    const double sd = std::sqrt(var);
    double dmu = 0, dsd = 0;
    double v = (*c->acq)(mu, sd, c->best, grad.empty() ? nullptr : &dmu, grad.empty() ? nullptr : &dsd);
    if (!std::isfinite(v)) v = -1e300;
    if (v > c->best_value) {
      c->best_value = v;
      c->best_point = u;
    }
    for (size_t k = 0; k < grad.size(); ++k) {
      const size_t j = (*c->free)[k];
      double g = dmu * gm[j] + dsd * gv[j] / (2.0 * std::max(sd, 1e-300));
      grad[k] = std::isfinite(g) ? -g : 0.0;
    }
    return -v;
  };
  nlopt::opt opt(nlopt::LD_LBFGS, static_cast<unsigned>(free.size()));
  std::vector<double> lb, ub;
  for (size_t j : free) lb.push_back(lower[j]), ub.push_back(upper[j]);
  opt.set_lower_bounds(lb);
  opt.set_upper_bounds(ub);
  opt.set_min_objective(objective, &ctx);
  opt.set_maxeval(static_cast<int>(evaluations));
  opt.set_xtol_rel(1e-6);
  std::vector<double> z;
  for (size_t j : free) z.push_back(std::clamp(start[j], lower[j], upper[j]));
  double f = 0;
  try {
    opt.optimize(z, f);
  } catch (const std::exception&) {
    // keep the best point seen
  }
  return {ctx.best_value, ctx.best_point};
}

class BayesSearcher : public ModelSearcher {
 public:
  BayesSearcher(const SearchOptions& options, uint64_t seed, const SearchSpace& space, std::vector<Json> points,
                int64_t total)
      : ModelSearcher(options, seed, space, std::move(points), total, "bayes") {
    const OptionReader p = search_option_reader(options.params, kBayesKeys, "bayes");
    const int64_t d = space_.unit_dims();
    n_initial_ = p.integer_in("n_initial_points", std::clamp<int64_t>(2 * (d + 1), 5, 20), 1, 1000000);
    acq_.kind = p.string("acquisition", "log-ei", {"log-ei", "ei", "ucb", "pi"});
    acq_.xi = p.number_in("xi", 0.0, 0.0, 1e300);
    acq_.kappa = p.number_in("kappa", 2.0, 0.0, 1e300);
    parallel_ = p.string("parallel", "kriging_believer", {"kriging_believer", "cl_min", "cl_mean", "cl_max"});
    n_candidates_ = p.integer_in("n_candidates", 512, 1, 1000000);
    n_refine_ = p.integer_in("n_refine", 4, 0, 1000);
    refine_evaluations_ = p.integer_in("refine_evaluations", 30, 1, 100000);
    gp_options_.restarts = static_cast<int>(p.integer_in("gp_restarts", 3, 0, 1000));
    gp_options_.warm_start = false;  // fits must not depend on history (exact resume)
    gp_options_.max_restart_points = 64;
    // The signal variance is at least the data's own (targets are
    // standardized): a fit free to shrink it explains many points in one
    // basin on a flat plateau as a flat function with one dip, and then
    // predicts too little variance elsewhere for any exploration to pay
    // (docs/SEARCH.md, "Narrow basins").
    gp_options_.min_signal_variance = p.number_in("min_signal_variance", 1.0, 1e-3, gp_options_.max_signal_variance);
    early_stopped_ = p.string("early_stopped", "rank_below", {"rank_below", "as_is"});
    min_pending_distance_ = p.number_in("min_pending_distance", 0.01, 0.0, 1.0);
    max_fit_points_ = p.integer_in("max_fit_points", 300, 10, 100000);
    // The trust region pays where a global GP would spend its budget on the
    // boundary: from 4 dimensions on. Below, the global acquisition finds the
    // other basins that a region shrunk onto the first would keep it from
    // (docs/SEARCH.md, "Trust region"). true / false force it either way.
    const bool automatic = d >= kTrustRegionDimensions;
    if (!p.has("trust_region"))
      trust_region_ = automatic;
    else if (p.raw("trust_region").is_boolean())
      trust_region_ = p.raw("trust_region").get<bool>();
    else if (p.raw("trust_region") == Json("auto"))
      trust_region_ = automatic;
    else
      p.fail("trust_region", "must be true, false or auto");
  }

 private:
  // The model's data: ok trials (stopped ones ranked below full-budget
  // ones), then failed ones at the worst value seen; in trial order.
  struct Data {
    std::vector<int64_t> indices;
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    int n_ok = 0;
    double best = std::numeric_limits<double>::infinity();
  };

  Json propose(int64_t i) override {
    const int d = space_.unit_dims();
    if (d == 0) return space_.decode({});
    Data data = model_data();
    std::vector<std::vector<double>> taken = data.x;  // points that must not be suggested again
    std::vector<std::vector<double>> pending;
    for (const auto& [index, config] : running(i)) {
      if (auto u = space_.encode(*config)) {
        pending.push_back(*u);
        taken.push_back(*u);
      }
    }
    pending_now_ = pending;
    const int64_t n_points = static_cast<int64_t>(points().size());
    const SobolSequence design(d, seed_ ^ 0x5eed5eedULL);
    const uint64_t design_index = static_cast<uint64_t>(i - n_points);
    if (i - n_points < n_initial_ || data.n_ok < 2) return fresh_design_point(design, design_index, taken);
    refit(data);
    model_.set_data(data.x, data.y, hyper_);  // the region's centre is read from the model without pending points
    const size_t n_design = static_cast<size_t>(n_initial_ + n_points);
    const UnitBox region = trust_region_ ? trust_region(space_, data.x, data.y, n_design, model_, hyper_)
                                         : UnitBox{std::vector<double>(d, 0.0), std::vector<double>(d, 1.0)};
    condition(model_, data, pending);
    Json config = maximize_acquisition(model_, data, taken, i, region);
    return config.is_null() ? fresh_design_point(design, design_index, taken) : config;
  }

  Data model_data() const {
    std::vector<ScoredTrial> scored = score_trials(finished(), metric_, mode_);
    double worst = -std::numeric_limits<double>::infinity(), worst_full = worst;
    for (const auto& t : scored)
      if (t.ok) {
        worst = std::max(worst, t.loss);
        if (!t.below_full_budget) worst_full = std::max(worst_full, t.loss);
      }
    Data data;
    for (const auto& t : scored) {
      auto u = space_.encode(t.config);
      if (!u) continue;
      double value;
      if (t.ok) {
        value = t.loss;
        if (t.below_full_budget && early_stopped_ == "rank_below") value = std::max(value, worst_full);
        ++data.n_ok;
        data.best = std::min(data.best, value);
      } else if (std::isfinite(worst)) {
        value = worst;
      } else {
        continue;
      }
      data.indices.push_back(t.index);
      data.x.push_back(std::move(*u));
      data.y.push_back(value);
    }
    return data;
  }

  // Hyperparameters: fitted on the first refit_size(n) data points, cached.
  void refit(const Data& data) {
    const int64_t n_fit = refit_size(static_cast<int64_t>(data.x.size()));
    std::vector<std::pair<int64_t, double>> key;
    for (int64_t k = 0; k < n_fit; ++k)
      key.emplace_back(data.indices[static_cast<size_t>(k)], data.y[static_cast<size_t>(k)]);
    if (key == fit_key_) return;
    // At most max_fit_points (the latest of the prefix) enter the fit: its
    // cost grows as n^3 per likelihood evaluation.
    const int64_t first = std::max<int64_t>(0, n_fit - max_fit_points_);
    GaussianProcess fit_gp(gp_options_);
    fit_gp.fit(std::vector<std::vector<double>>(data.x.begin() + first, data.x.begin() + n_fit),
               std::vector<double>(data.y.begin() + first, data.y.begin() + n_fit),
               seed_ ^ (static_cast<uint64_t>(n_fit) * 0x9e3779b97f4a7c15ULL));
    hyper_ = fit_gp.hyperparameters();
    fit_key_ = key;
  }

  // The GP on the data plus the pending points at fantasy values (kriging
  // believer: the model's own mean; constant liar: min/mean/max of y).
  // `gp` is the previous suggestion's model: the factor rows of the points
  // it already had (in the same order, with the same hyperparameters) are
  // reused, the new ones appended (O(n^2) each instead of O(n^3) in all);
  // the result is the same to the bit as a fresh model's.
  // The caller has set `gp` to the data with hyper_ (propose(), which reads
  // the trust region's centre from it first).
  void condition(GaussianProcess& gp, Data& data, const std::vector<std::vector<double>>& pending) const {
    if (pending.empty()) return;
    std::vector<double> fantasy;
    const auto& y = data.y;
    if (parallel_ == "kriging_believer") {
      gp.predict_batch(pending, &fantasy, nullptr);
    } else {
      double v = parallel_ == "cl_min" ? *std::min_element(y.begin(), y.end())
                 : parallel_ == "cl_max" ? *std::max_element(y.begin(), y.end())
                                         : std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(y.size());
      fantasy.assign(pending.size(), v);
    }
    auto xa = data.x;
    auto ya = y;
    xa.insert(xa.end(), pending.begin(), pending.end());
    ya.insert(ya.end(), fantasy.begin(), fantasy.end());
    gp.set_data(xa, ya, hyper_);
    // The fantasies count as observed: a believed value below the best
    // must not leave improvement to chase around its own point.
    for (double v : fantasy) data.best = std::min(data.best, v);
  }

  // The design point, moved along the sequence while it repeats a taken point
  // (discrete spaces).
  Json fresh_design_point(const SobolSequence& design, uint64_t index, const std::vector<std::vector<double>>& taken) {
    std::vector<double> first;
    for (uint64_t k = 0; k < 64; ++k) {
      std::vector<double> u = space_.snap_unit(design.point(index + k * static_cast<uint64_t>(total_ + 1)));
      if (k == 0) first = u;
      if (!is_taken(u, taken)) return space_.decode(u);
    }
    return space_.decode(first);
  }

  // True when u repeats a known point, or lies within min_pending_distance
  // of a pending one (concurrent suggestions must differ).
  bool is_taken(const std::vector<double>& u, const std::vector<std::vector<double>>& taken) const {
    for (const auto& t : taken) {
      bool same = true;
      for (size_t j = 0; j < u.size() && same; ++j) same = std::fabs(u[j] - t[j]) <= 1e-12;
      if (same) return true;
    }
    for (const auto& t : pending_now_) {
      double d2 = 0;
      for (size_t j = 0; j < u.size(); ++j) d2 += (u[j] - t[j]) * (u[j] - t[j]);
      if (d2 < min_pending_distance_ * min_pending_distance_) return true;
    }
    return false;
  }

  // Candidates: a scrambled Sobol set in the region plus perturbations of
  // the best points (clamped to it).
  std::vector<std::vector<double>> candidate_points(const Data& data, const UnitBox& region,
                                                    std::mt19937_64& rng) const {
    const int d = space_.unit_dims();
    std::vector<std::vector<double>> candidates;
    const SobolSequence sobol(d, rng());
    for (auto u : sobol.points(0, static_cast<size_t>(n_candidates_))) {
      for (size_t j = 0; j < u.size(); ++j) u[j] = region.lower[j] + u[j] * (region.upper[j] - region.lower[j]);
      candidates.push_back(space_.snap_unit(u));
    }
    const auto& y = data.y;
    std::vector<size_t> order(y.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return y[a] < y[b] || (y[a] == y[b] && a < b); });
    std::normal_distribution<double> step(0.0, 0.1);
    for (size_t r = 0; r < std::min<size_t>(5, order.size()); ++r) {
      for (int k = 0; k < 20; ++k) {
        std::vector<double> u = data.x[order[r]];
        const double scale = k < 10 ? 1.0 : 0.1;
        for (int j = 0; j < d; ++j)
          u[static_cast<size_t>(j)] = std::clamp(u[static_cast<size_t>(j)] + scale * step(rng),
                                                 region.lower[static_cast<size_t>(j)],
                                                 region.upper[static_cast<size_t>(j)]);
        // Snapping rounds discrete values and restores a one-hot block (whose
        // argmax the noise may have moved).
        candidates.push_back(space_.snap_unit(u));
      }
    }
    return candidates;
  }

  // The best untaken point by the acquisition: candidates scored in one
  // batch, the best few refined by L-BFGS on their continuous coordinates.
  // Null when every candidate is taken.
  Json maximize_acquisition(const GaussianProcess& gp, const Data& data, const std::vector<std::vector<double>>& taken,
                            int64_t i, const UnitBox& region) {
    auto rng = make_rng(seed_, 2, static_cast<uint64_t>(i));
    const std::vector<std::vector<double>> candidates = candidate_points(data, region, rng);
    std::vector<double> means, variances;
    gp.predict_batch(candidates, &means, &variances);
    std::vector<double> values(candidates.size());
    for (size_t c = 0; c < candidates.size(); ++c) {
      double v = acq_(means[c], std::sqrt(variances[c]), data.best, nullptr, nullptr);
      values[c] = std::isfinite(v) ? v : -std::numeric_limits<double>::infinity();
    }
    std::vector<size_t> ranked(candidates.size());
    std::iota(ranked.begin(), ranked.end(), 0);
    std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) { return values[a] > values[b]; });

    std::vector<size_t> free;
    const auto& mask = space_.continuous_mask();
    for (size_t j = 0; j < mask.size(); ++j)
      if (mask[j]) free.push_back(j);
    std::vector<std::pair<double, std::vector<double>>> finals;
    int refined = 0;
    for (size_t r = 0; r < ranked.size() && refined < n_refine_ && !free.empty(); ++r) {
      const auto& start = candidates[ranked[r]];
      if (is_taken(start, taken)) continue;
      ++refined;
      auto [value, point] = refine_acquisition(gp, acq_, start, free, data.best, refine_evaluations_, region.lower,
                                                 region.upper);
      finals.emplace_back(value, space_.snap_unit(point));
    }
    for (size_t r : ranked) finals.emplace_back(values[r], candidates[r]);
    std::stable_sort(finals.begin(), finals.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [value, u] : finals)
      if (std::isfinite(value) && !is_taken(u, taken)) return space_.decode(u);
    return nullptr;
  }

  int64_t n_initial_ = 10;
  Acquisition acq_;
  std::string parallel_, early_stopped_;
  int64_t n_candidates_ = 512, n_refine_ = 4, refine_evaluations_ = 30;
  GpOptions gp_options_;
  double min_pending_distance_ = 0.01;
  int64_t max_fit_points_ = 300;
  bool trust_region_ = true;
  std::vector<std::vector<double>> pending_now_;  // during propose(): pending points (unit cube)
  std::vector<std::pair<int64_t, double>> fit_key_;
  GpHyperparameters hyper_;
  GaussianProcess model_;  // the last suggestion's model (a cache, see condition())
};

}  // namespace

std::unique_ptr<Searcher> make_bayes_searcher(const SearchOptions& options, uint64_t seed, const SearchSpace& space,
                                              const std::vector<Json>& points_to_evaluate, int64_t total) {
  return std::make_unique<BayesSearcher>(options, seed, space, points_to_evaluate, total);
}

}  // namespace tune::internal
