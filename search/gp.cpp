// Gaussian process: Eigen for the linear algebra, NLopt (bounded L-BFGS) for
// the hyperparameters. See gp.h.
#include "search/gp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <Eigen/Dense>
#include <nlopt.hpp>

#include "base/error.h"

namespace tune {
// Named, not anonymous: GaussianProcess::Impl (declared in gp.h, so not in an
// anonymous namespace) holds a Theta, and GCC warns (-Wsubobject-linkage) when
// a type with external linkage holds one with internal linkage.
namespace gp_internal {

constexpr double kSqrt5 = 2.2360679774997896964;
constexpr double kLog2Pi = 1.8378770664093454836;

// Matérn-5/2 as a function of r (without the signal variance), and the factor
// g(r) = 5/3 (1 + sqrt5 r) exp(-sqrt5 r) that appears in its derivatives:
// dk/d(log l_j) = s2 g(r) d_j^2 / l_j^2, dk/dx_j = -s2 g(r) d_j / l_j^2.
inline double matern(double r) { return (1.0 + kSqrt5 * r + 5.0 / 3.0 * r * r) * std::exp(-kSqrt5 * r); }
inline double matern_g(double r) { return 5.0 / 3.0 * (1.0 + kSqrt5 * r) * std::exp(-kSqrt5 * r); }

struct Theta {
  Eigen::VectorXd inv_l2;  // 1 / l_j^2
  double s2 = 1, n2 = 1e-3, c = 0;
};

Theta unpack(const std::vector<double>& theta, int d) {
  Theta t;
  t.inv_l2.resize(d);
  for (int j = 0; j < d; ++j) t.inv_l2[j] = std::exp(-2.0 * theta[static_cast<size_t>(j)]);
  t.s2 = std::exp(theta[static_cast<size_t>(d)]);
  t.n2 = std::exp(theta[static_cast<size_t>(d) + 1]);
  t.c = theta[static_cast<size_t>(d) + 2];
  return t;
}

std::vector<double> pack(const GpHyperparameters& h) {
  std::vector<double> theta;
  for (double l : h.lengthscales) theta.push_back(std::log(l));
  theta.push_back(std::log(h.signal_variance));
  theta.push_back(std::log(h.noise_variance));
  theta.push_back(h.mean);
  return theta;
}

GpHyperparameters to_hyper(const std::vector<double>& theta, int d) {
  GpHyperparameters h;
  for (int j = 0; j < d; ++j) h.lengthscales.push_back(std::exp(theta[static_cast<size_t>(j)]));
  h.signal_variance = std::exp(theta[static_cast<size_t>(d)]);
  h.noise_variance = std::exp(theta[static_cast<size_t>(d) + 1]);
  h.mean = theta[static_cast<size_t>(d) + 2];
  return h;
}

// Cholesky of K + n2 I with growing jitter; false when it cannot be factored.
bool factor(const Eigen::MatrixXd& Ks, double n2, Eigen::MatrixXd* work, Eigen::LLT<Eigen::MatrixXd>* llt) {
  double jitter = 0;
  for (int attempt = 0; attempt < 6; ++attempt) {
    *work = Ks;
    work->diagonal().array() += n2 + jitter;
    llt->compute(*work);
    if (llt->info() == Eigen::Success) return true;
    jitter = jitter == 0 ? 1e-10 * std::max(1.0, Ks.diagonal().maxCoeff()) : jitter * 100;
  }
  return false;
}

}  // namespace gp_internal
using namespace gp_internal;

struct GaussianProcess::Impl {
  Eigen::MatrixXd X;  // n x d
  Eigen::VectorXd y;  // standardized
  double y_mean = 0, y_scale = 1;
  GpHyperparameters hyper;
  Theta t;
  // Lower Cholesky factor of K + (n2 + jitter) I in the top-left
  // n_factored x n_factored corner of Lbuf (which has spare capacity: rows
  // are appended in place). Always built row by row (append_row), so a
  // factor extended over many calls is bit-identical to one built at once.
  Eigen::MatrixXd Lbuf;
  Eigen::Index n_factored = 0;
  double jitter = 0;
  // Leading rows of X that the last set() left unchanged (their factor rows
  // stay valid while the kernel's hyperparameters do).
  Eigen::Index unchanged_rows = 0;
  Eigen::VectorXd alpha;
  double lml = 0;
  bool fitted = false;
  int d = 0;
  // Squared differences per dimension, D2[j](p, q) = (x_pj - x_qj)^2, and
  // buffers reused across likelihood evaluations (no n x n allocations per
  // evaluation of a fit).
  mutable std::vector<Eigen::MatrixXd> D2;
  mutable Eigen::MatrixXd ws_R, ws_Ks, ws_K, ws_W;
  mutable Eigen::LLT<Eigen::MatrixXd> ws_llt;

  // Signal kernel matrix into `Ks`; leaves the scaled distances r in ws_R.
  void signal(const Theta& th, Eigen::MatrixXd* Ks) const {
    const Eigen::Index n = X.rows();
    if (D2.empty()) {
      for (int j = 0; j < d; ++j) {
        const Eigen::VectorXd col = X.col(j);
        Eigen::MatrixXd diff = col.replicate(1, n) - col.transpose().replicate(n, 1);
        D2.push_back(diff.array().square().matrix());
      }
    }
    ws_R.setZero(n, n);
    for (int j = 0; j < d; ++j) ws_R.noalias() += th.inv_l2[j] * D2[static_cast<size_t>(j)];
    ws_R = ws_R.cwiseSqrt();
    *Ks = ws_R.unaryExpr([&](double r) { return th.s2 * matern(r); });
  }


  void set(const std::vector<std::vector<double>>& x, const std::vector<double>& yy) {
    if (x.empty()) throw Error("GaussianProcess: no data points");
    if (x.size() != yy.size())
      throw Error("GaussianProcess: " + std::to_string(x.size()) + " inputs but " + std::to_string(yy.size()) +
                  " targets");
    const int d_old = d;
    d = static_cast<int>(x[0].size());
    if (d < 1) throw Error("GaussianProcess: inputs must have at least one dimension");
    unchanged_rows = 0;
    if (d == d_old) {
      const Eigen::Index shared = std::min<Eigen::Index>(X.rows(), static_cast<Eigen::Index>(x.size()));
      while (unchanged_rows < shared && static_cast<int>(x[static_cast<size_t>(unchanged_rows)].size()) == d &&
             std::equal(x[static_cast<size_t>(unchanged_rows)].begin(), x[static_cast<size_t>(unchanged_rows)].end(),
                        X.row(unchanged_rows).begin()))
        ++unchanged_rows;
    }
    X.conservativeResize(static_cast<Eigen::Index>(x.size()), d);
    y.resize(static_cast<Eigen::Index>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      if (static_cast<int>(x[i].size()) != d)
        throw Error("GaussianProcess: input " + std::to_string(i) + " has " + std::to_string(x[i].size()) +
                    " values, expected " + std::to_string(d));
      for (int j = 0; j < d; ++j) {
        if (!std::isfinite(x[i][static_cast<size_t>(j)])) throw Error("GaussianProcess: non-finite input");
        X(static_cast<Eigen::Index>(i), j) = x[i][static_cast<size_t>(j)];
      }
      if (!std::isfinite(yy[i])) throw Error("GaussianProcess: non-finite target");
      y[static_cast<Eigen::Index>(i)] = yy[i];
    }
    D2.clear();  // computed on the first likelihood evaluation
    y_mean = y.mean();
    double var = (y.array() - y_mean).square().mean();
    y_scale = var > 1e-24 ? std::sqrt(var) : 1.0;
    y = (y.array() - y_mean) / y_scale;
  }

  // Log marginal likelihood and its gradient (may be null) at theta.
  double evaluate(const std::vector<double>& theta, std::vector<double>* grad) const {
    const Theta th = unpack(theta, d);
    const Eigen::Index n = X.rows();
    signal(th, &ws_Ks);
    if (!factor(ws_Ks, th.n2, &ws_K, &ws_llt)) {
      if (grad) std::fill(grad->begin(), grad->end(), 0.0);
      return -1e30;
    }
    Eigen::VectorXd r = y.array() - th.c;
    Eigen::VectorXd a = ws_llt.solve(r);
    const Eigen::MatrixXd& L = ws_llt.matrixLLT();
    double logdet = 2.0 * L.diagonal().array().log().sum();
    double value = -0.5 * r.dot(a) - 0.5 * logdet - 0.5 * static_cast<double>(n) * kLog2Pi;
    if (grad) {
      grad->assign(static_cast<size_t>(d) + 3, 0.0);
      // W = a a^T - K^-1; dLML/dtheta = 1/2 sum(W o dK/dtheta).
      ws_W.setIdentity(n, n);
      ws_llt.solveInPlace(ws_W);
      ws_W = -ws_W;
      ws_W.noalias() += a * a.transpose();
      (*grad)[static_cast<size_t>(d)] = 0.5 * (ws_W.array() * ws_Ks.array()).sum();
      (*grad)[static_cast<size_t>(d) + 1] = 0.5 * th.n2 * ws_W.trace();
      (*grad)[static_cast<size_t>(d) + 2] = a.sum();
      // dK/d(log l_j) = s2 g(r) D2_j / l_j^2; ws_K is free again: reuse it
      // for W o s2 g(r).
      ws_K = ws_W.cwiseProduct(ws_R.unaryExpr([&](double rr) { return th.s2 * matern_g(rr); }));
      for (int j = 0; j < d; ++j)
        (*grad)[static_cast<size_t>(j)] =
            0.5 * th.inv_l2[j] * (ws_K.array() * D2[static_cast<size_t>(j)].array()).sum();
    }
    return value;
  }

  // The factor's n x n corner (n = X.rows() once posterior() has run).
  auto L() const { return Lbuf.topLeftCorner(X.rows(), X.rows()); }
  // x = L^-T b.
  Eigen::VectorXd solve_transposed(const Eigen::VectorXd& b) const {
    const auto lower = L();
    return lower.triangularView<Eigen::Lower>().transpose().solve(b);
  }

  // Row i of the factor from rows 0..i-1: l = L_{<i}^-1 k_i, L_ii = sqrt(k_ii + n2 + jitter - l.l).
  // False when the pivot is not positive.
  bool append_row(Eigen::Index i) {
    Eigen::VectorXd k(i);
    for (Eigen::Index j = 0; j < i; ++j) {
      double r2 = 0;
      for (int c = 0; c < d; ++c) {
        const double diff = X(i, c) - X(j, c);
        r2 += diff * diff * t.inv_l2[c];
      }
      k[j] = t.s2 * matern(std::sqrt(r2));
    }
    if (i > 0) Lbuf.topLeftCorner(i, i).triangularView<Eigen::Lower>().solveInPlace(k);
    const double pivot = t.s2 + t.n2 + jitter - k.squaredNorm();
    if (!(pivot > 0) || !std::isfinite(pivot)) return false;
    Lbuf.row(i).head(i) = k.transpose();
    Lbuf(i, i) = std::sqrt(pivot);
    return true;
  }

  // Factors rows keep..n-1 (rows below keep are valid); on a non-positive
  // pivot, starts over with growing jitter, as a fresh factorization would.
  bool extend_factor(Eigen::Index keep) {
    const Eigen::Index n = X.rows();
    if (Lbuf.rows() < n) {
      // Room for the points and the pending ones of the next few
      // suggestions (growing copies the factor).
      const Eigen::Index capacity = n + std::max<Eigen::Index>(32, n / 4);
      Eigen::MatrixXd grown(capacity, capacity);
      grown.topLeftCorner(keep, keep) = Lbuf.topLeftCorner(keep, keep);
      Lbuf.swap(grown);
    }
    if (keep == 0) jitter = 0;
    for (int attempt = 0; attempt < 7; ++attempt) {
      Eigen::Index i = keep;
      while (i < n && append_row(i)) ++i;
      if (i == n) {
        n_factored = n;
        return true;
      }
      keep = 0;
      jitter = jitter == 0 ? 1e-10 * std::max(1.0, t.s2) : jitter * 100;
    }
    n_factored = 0;
    return false;
  }

  // The posterior at hyperparameters h. The factor rows of the leading rows
  // of X that set() left unchanged are reused when the kernel (lengthscales,
  // signal and noise variance) is the same and no jitter was needed; the
  // result is bit-identical either way.
  void posterior(const GpHyperparameters& h) {
    const Theta nt = unpack(pack(h), d);
    const bool same_kernel = fitted && jitter == 0 && nt.s2 == t.s2 && nt.n2 == t.n2 &&
                             nt.inv_l2.size() == t.inv_l2.size() && nt.inv_l2 == t.inv_l2;
    const Eigen::Index keep = same_kernel ? std::min(unchanged_rows, n_factored) : 0;
    hyper = h;
    t = nt;
    fitted = false;
    if (!extend_factor(keep)) throw Error("GaussianProcess: kernel matrix is not positive definite");
    const Eigen::VectorXd r = (y.array() - t.c).matrix();
    const Eigen::VectorXd z = L().triangularView<Eigen::Lower>().solve(r);
    alpha = solve_transposed(z);
    lml = -0.5 * r.dot(alpha) - L().diagonal().array().log().sum() - 0.5 * static_cast<double>(X.rows()) * kLog2Pi;
    fitted = true;
  }

  Eigen::VectorXd kstar(const Eigen::VectorXd& x) const {
    const Eigen::Index n = X.rows();
    Eigen::VectorXd k(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      double r2 = ((X.row(i).transpose() - x).array().square() * t.inv_l2.array()).sum();
      k[i] = t.s2 * matern(std::sqrt(r2));
    }
    return k;
  }
};

GaussianProcess::GaussianProcess(GpOptions options) : options_(options), impl_(std::make_unique<Impl>()) {}
GaussianProcess::~GaussianProcess() = default;
GaussianProcess::GaussianProcess(const GaussianProcess& other)
    : options_(other.options_), impl_(std::make_unique<Impl>(*other.impl_)) {}
GaussianProcess& GaussianProcess::operator=(const GaussianProcess& other) {
  if (this != &other) {
    options_ = other.options_;
    impl_ = std::make_unique<Impl>(*other.impl_);
  }
  return *this;
}
GaussianProcess::GaussianProcess(GaussianProcess&&) noexcept = default;
GaussianProcess& GaussianProcess::operator=(GaussianProcess&&) noexcept = default;

namespace {

// The box the hyperparameters (log lengthscales, log signal variance, log
// noise variance, mean) are fitted in.
struct Box {
  std::vector<double> lb, ub;
  std::vector<double> clamp(std::vector<double> v) const {
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::clamp(v[i], lb[i], ub[i]);
    return v;
  }
};

Box hyper_box(const GpOptions& o, int d) {
  const size_t p = static_cast<size_t>(d) + 3, di = static_cast<size_t>(d);
  Box box{std::vector<double>(p), std::vector<double>(p)};
  for (size_t j = 0; j < di; ++j) {
    box.lb[j] = std::log(o.min_lengthscale);
    box.ub[j] = std::log(o.max_lengthscale);
  }
  box.lb[di] = std::log(o.min_signal_variance);
  box.ub[di] = std::log(o.max_signal_variance);
  if (o.fixed_noise_variance > 0) {
    box.lb[di + 1] = box.ub[di + 1] = std::log(o.fixed_noise_variance);
  } else {
    box.lb[di + 1] = std::log(o.min_noise_variance);
    box.ub[di + 1] = std::log(o.max_noise_variance);
  }
  box.lb[di + 2] = -5;
  box.ub[di + 2] = 5;
  return box;
}

// A default start, the previous fit (warm start), and random restarts.
std::vector<std::vector<double>> start_points(const GpOptions& o, int d, const Box& box,
                                              const std::vector<double>& previous, uint64_t seed) {
  const size_t p = static_cast<size_t>(d) + 3, di = static_cast<size_t>(d);
  std::vector<std::vector<double>> starts;
  std::vector<double> start0(p);
  for (size_t j = 0; j < di; ++j) start0[j] = std::log(0.5);
  start0[di] = 0.0;
  start0[di + 1] = std::log(1e-3);
  start0[di + 2] = 0.0;
  starts.push_back(box.clamp(start0));
  if (o.warm_start && !previous.empty()) starts.push_back(box.clamp(previous));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int r = 0; r < o.restarts; ++r) {
    std::vector<double> s(p);
    for (size_t j = 0; j < di; ++j) s[j] = std::log(0.05) + u(rng) * (std::log(4.0) - std::log(0.05));
    s[di] = std::log(0.2) + u(rng) * (std::log(5.0) - std::log(0.2));
    s[di + 1] = std::log(1e-6) + u(rng) * (std::log(0.1) - std::log(1e-6));
    s[di + 2] = -1.0 + 2.0 * u(rng);
    starts.push_back(box.clamp(s));
  }
  return starts;
}

// The log marginal likelihood plus the log priors (Hvarfner et al. 2024, as
// in BoTorch: log l ~ N(sqrt2 + log(d)/2, 3); log n2 ~ N(-8, 3^2), a quiet
// default for mostly deterministic metrics), keeping the best point seen.
struct Posterior {
  const GaussianProcess::Impl* impl = nullptr;
  int d = 0;
  bool priors = true;
  double best_value = -std::numeric_limits<double>::infinity();
  std::vector<double> best_theta;

  static double negative(const std::vector<double>& theta, std::vector<double>& grad, void* data) {
    auto* self = static_cast<Posterior*>(data);
    const double l_mu = std::sqrt(2.0) + 0.5 * std::log(static_cast<double>(self->d)), l_var = 3.0;
    const double n_mu = -8.0, n_var = 9.0;
    std::vector<double> g;
    double v = self->impl->evaluate(theta, grad.empty() ? nullptr : &g);
    if (self->priors) {
      for (size_t j = 0; j < static_cast<size_t>(self->d); ++j) {
        const double z = theta[j] - l_mu;
        v -= 0.5 * z * z / l_var;
        if (!g.empty()) g[j] -= z / l_var;
      }
      const size_t noise = static_cast<size_t>(self->d) + 1;
      const double z = theta[noise] - n_mu;
      v -= 0.5 * z * z / n_var;
      if (!g.empty()) g[noise] -= z / n_var;
    }
    if (!std::isfinite(v)) v = -1e30;
    if (v > self->best_value) {
      self->best_value = v;
      self->best_theta = theta;
    }
    if (!grad.empty())
      for (size_t i = 0; i < grad.size(); ++i) grad[i] = std::isfinite(g[i]) ? -g[i] : 0.0;
    return -v;  // NLopt minimizes
  }

  // L-BFGS from each start; the best point seen over all of them.
  std::vector<double> maximize(const GaussianProcess::Impl* data, const std::vector<std::vector<double>>& from,
                               const Box& box, int max_evaluations) {
    impl = data;
    best_value = -std::numeric_limits<double>::infinity();
    best_theta.clear();
    for (auto s : from) {
      nlopt::opt opt(nlopt::LD_LBFGS, static_cast<unsigned>(s.size()));
      opt.set_lower_bounds(box.lb);
      opt.set_upper_bounds(box.ub);
      opt.set_min_objective(&Posterior::negative, this);
      opt.set_maxeval(std::max(1, max_evaluations));
      opt.set_ftol_rel(1e-7);
      opt.set_xtol_rel(1e-6);
      double f = 0;
      try {
        opt.optimize(s, f);
      } catch (const std::exception&) {
        // roundoff-limited or similar: the best point seen is kept.
      }
    }
    return best_theta.empty() ? from[0] : best_theta;
  }
};

}  // namespace

void GaussianProcess::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y, uint64_t seed) {
  std::vector<double> previous;
  if (impl_->fitted && static_cast<int>(impl_->hyper.lengthscales.size()) == static_cast<int>(x.empty() ? 0 : x[0].size()))
    previous = pack(impl_->hyper);
  impl_->set(x, y);
  const int d = impl_->d;
  const GpOptions& o = options_;
  const Box box = hyper_box(o, d);
  const std::vector<std::vector<double>> starts = start_points(o, d, box, previous, seed);
  Posterior posterior;
  posterior.d = d;
  posterior.priors = o.use_priors;
  std::vector<double> theta;
  const auto n = static_cast<int>(impl_->X.rows());
  if (o.max_restart_points > 0 && n > o.max_restart_points && starts.size() > 1) {
    // Multi-start on the latest points only, then polish the winner on all.
    Impl subset;
    std::vector<std::vector<double>> xs(x.end() - o.max_restart_points, x.end());
    std::vector<double> ys(y.end() - o.max_restart_points, y.end());
    subset.set(xs, ys);
    const std::vector<double> winner = posterior.maximize(&subset, starts, box, o.max_evaluations);
    theta = posterior.maximize(impl_.get(), {winner}, box, o.max_evaluations);
  } else {
    theta = posterior.maximize(impl_.get(), starts, box, o.max_evaluations);
  }
  impl_->posterior(to_hyper(theta, d));
}

void GaussianProcess::set_data(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                               const GpHyperparameters& hyperparameters) {
  impl_->set(x, y);
  if (static_cast<int>(hyperparameters.lengthscales.size()) != impl_->d)
    throw Error("GaussianProcess: " + std::to_string(hyperparameters.lengthscales.size()) +
                " lengthscales for " + std::to_string(impl_->d) + " dimensions");
  impl_->posterior(hyperparameters);
}

void GaussianProcess::predict(const std::vector<double>& x, double* mean, double* variance) const {
  predict_with_gradient(x, mean, variance, nullptr, nullptr);
}

void GaussianProcess::predict_with_gradient(const std::vector<double>& x, double* mean, double* variance,
                                            std::vector<double>* mean_gradient,
                                            std::vector<double>* variance_gradient) const {
  const Impl& m = *impl_;
  if (!m.fitted) throw Error("GaussianProcess: predict before fit");
  if (static_cast<int>(x.size()) != m.d)
    throw Error("GaussianProcess: predict at a point of " + std::to_string(x.size()) + " values, expected " +
                std::to_string(m.d));
  Eigen::VectorXd xv = Eigen::Map<const Eigen::VectorXd>(x.data(), m.d);
  Eigen::VectorXd k = m.kstar(xv);
  double mu = m.t.c + k.dot(m.alpha);
  Eigen::VectorXd v = m.L().triangularView<Eigen::Lower>().solve(k);
  double var = std::max(m.t.s2 - v.squaredNorm(), 1e-12 * m.t.s2);
  if (mean) *mean = m.y_mean + m.y_scale * mu;
  if (variance) *variance = var * m.y_scale * m.y_scale;
  if (mean_gradient || variance_gradient) {
    const Eigen::Index n = m.X.rows();
    Eigen::MatrixXd dk(n, m.d);  // dk_i / dx_j
    for (Eigen::Index i = 0; i < n; ++i) {
      Eigen::ArrayXd diff = xv.array() - m.X.row(i).transpose().array();
      double r = std::sqrt((diff.square() * m.t.inv_l2.array()).sum());
      double g = m.t.s2 * matern_g(r);
      dk.row(i) = (-g * diff * m.t.inv_l2.array()).matrix().transpose();
    }
    if (mean_gradient) {
      Eigen::VectorXd gm = dk.transpose() * m.alpha * m.y_scale;
      mean_gradient->assign(gm.data(), gm.data() + m.d);
    }
    if (variance_gradient) {
      Eigen::VectorXd kinv_k = m.solve_transposed(v);
      Eigen::VectorXd gv = -2.0 * dk.transpose() * kinv_k * m.y_scale * m.y_scale;
      if (var <= 1e-12 * m.t.s2) gv.setZero();
      variance_gradient->assign(gv.data(), gv.data() + m.d);
    }
  }
}

void GaussianProcess::predict_batch(const std::vector<std::vector<double>>& x, std::vector<double>* means,
                                    std::vector<double>* variances) const {
  const Impl& m = *impl_;
  if (!m.fitted) throw Error("GaussianProcess: predict before fit");
  const Eigen::Index count = static_cast<Eigen::Index>(x.size());
  // k(X, x) for every x at once: with inputs scaled by 1/l, r^2 = |a|^2 +
  // |b|^2 - 2 a.b, the cross terms in one matrix product.
  const Eigen::VectorXd scale = m.t.inv_l2.cwiseSqrt();
  Eigen::MatrixXd C(count, m.d);
  for (Eigen::Index c = 0; c < count; ++c) {
    const auto& row = x[static_cast<size_t>(c)];
    if (static_cast<int>(row.size()) != m.d) throw Error("GaussianProcess: predict_batch row of wrong size");
    C.row(c) = Eigen::Map<const Eigen::RowVectorXd>(row.data(), m.d).cwiseProduct(scale.transpose());
  }
  const Eigen::MatrixXd Xs = m.X * scale.asDiagonal();
  Eigen::MatrixXd Kt = -2.0 * Xs * C.transpose();
  Kt.colwise() += Xs.rowwise().squaredNorm();
  Kt.rowwise() += C.rowwise().squaredNorm().transpose();
  Kt = Kt.unaryExpr([&](double r2) { return m.t.s2 * matern(std::sqrt(std::max(r2, 0.0))); });
  Eigen::VectorXd mu = (Kt.transpose() * m.alpha).array() + m.t.c;
  if (means) {
    means->resize(static_cast<size_t>(count));
    for (Eigen::Index c = 0; c < count; ++c) (*means)[static_cast<size_t>(c)] = m.y_mean + m.y_scale * mu[c];
  }
  if (variances) {  // the O(n^2) triangular solve per point only when asked for
    m.L().triangularView<Eigen::Lower>().solveInPlace(Kt);
    Eigen::VectorXd var = (m.t.s2 - Kt.colwise().squaredNorm().array()).max(1e-12 * m.t.s2).matrix();
    variances->resize(static_cast<size_t>(count));
    for (Eigen::Index c = 0; c < count; ++c) (*variances)[static_cast<size_t>(c)] = var[c] * m.y_scale * m.y_scale;
  }
}

double GaussianProcess::log_marginal_likelihood() const {
  if (!impl_->fitted) throw Error("GaussianProcess: log_marginal_likelihood before fit");
  return impl_->lml;
}
const GpHyperparameters& GaussianProcess::hyperparameters() const { return impl_->hyper; }
double GaussianProcess::y_mean() const { return impl_->y_mean; }
double GaussianProcess::y_scale() const { return impl_->y_scale; }
int GaussianProcess::dimensions() const { return impl_->d; }
int GaussianProcess::size() const { return static_cast<int>(impl_->X.rows()); }
bool GaussianProcess::fitted() const { return impl_->fitted; }
const GpOptions& GaussianProcess::options() const { return options_; }

double GaussianProcess::kernel(const std::vector<double>& a, const std::vector<double>& b,
                               const GpHyperparameters& h) {
  if (a.size() != b.size() || a.size() != h.lengthscales.size()) throw Error("GaussianProcess::kernel: size mismatch");
  double r2 = 0;
  for (size_t j = 0; j < a.size(); ++j) r2 += (a[j] - b[j]) * (a[j] - b[j]) / (h.lengthscales[j] * h.lengthscales[j]);
  return h.signal_variance * matern(std::sqrt(r2));
}

double GaussianProcess::log_marginal_likelihood_at(const std::vector<double>& theta,
                                                   std::vector<double>* gradient) const {
  if (impl_->X.rows() == 0) throw Error("GaussianProcess: no data");
  if (static_cast<int>(theta.size()) != impl_->d + 3) throw Error("GaussianProcess: theta has the wrong size");
  return impl_->evaluate(theta, gradient);
}

// ---- normal helpers and expected improvement ----

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double erfcx(double x) {
  if (x < 25.0) return std::exp(x * x) * std::erfc(x);
  // Asymptotic series: 1/(x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6) + 105/(16x^8)).
  double inv2 = 1.0 / (x * x);
  double series = 1.0 - 0.5 * inv2 + 0.75 * inv2 * inv2 - 1.875 * inv2 * inv2 * inv2 + 6.5625 * inv2 * inv2 * inv2 * inv2;
  return series / (x * std::sqrt(M_PI));
}

double expected_improvement(double mean, double sd, double best) {
  if (!(sd > 0)) return std::max(best - mean, 0.0);
  double z = (best - mean) / sd;
  return sd * (z * normal_cdf(z) + normal_pdf(z));
}

double log_h(double z) {
  // h(z) = z Phi(z) + phi(z). Direct for z > -1; below, with
  // Phi(z)/phi(z) = sqrt(pi/2) erfcx(-z/sqrt2):
  //   h(z) = phi(z) (1 - |z| sqrt(pi/2) erfcx(|z|/sqrt2)),
  // and the bracket is computed as -expm1(log(|z| sqrt(pi/2) erfcx(.))).
  if (z > -1.0) return std::log(z * normal_cdf(z) + normal_pdf(z));
  const double c1 = 0.5 * kLog2Pi;
  const double c2 = 0.5 * std::log(M_PI / 2.0);
  double a = -z;
  if (a > 1e6) return -0.5 * z * z - c1 - 2.0 * std::log(a);  // h ~ phi(z) / z^2
  double u = std::log(erfcx(a / std::sqrt(2.0)) * a) + c2;  // < 0
  return -0.5 * z * z - c1 + std::log(-std::expm1(u));
}

double log_expected_improvement(double mean, double sd, double best) {
  if (!(sd > 0)) throw Error("log_expected_improvement: sd must be positive");
  return std::log(sd) + log_h((best - mean) / sd);
}

}  // namespace tune
