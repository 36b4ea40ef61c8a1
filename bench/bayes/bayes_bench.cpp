// bench/run bayes: drives tune's searchers directly (suggest / on_complete in
// a loop, evaluating a problem of the suite) so that many seeds fit in minutes.
//
//   bayes_bench regret --algorithm bayes --function branin --budget 50 --seeds 20 [--concurrency 4] [--params JSON]
//     -> one JSON line: {"algorithm", "function", "budget", "concurrency", "regrets": [...],
//        "best_values": [...], "minimum", "known", "dims", "type", "seconds"}
//   bayes_bench latency --observations 50,200,500 --repeats 3
//     -> one JSON line: suggestion latency (ms) of bayes in 6-D (Hartmann6 data)
//   bayes_bench list
//     -> one JSON line per problem: {"function", "dims", "budget", "type", "minimum", "known", "noise_sd"}
//   bayes_bench describe --function NAME
//     -> one JSON line: the problem as in `list` plus "space" (tune's sweep-file form)
//   bayes_bench serve --function NAME [--seed S]
//     the evaluator the Optuna peer uses for the problems it does not implement:
//     reads one JSON config per line on stdin and answers one line
//     {"value": observed, "true": noise-free value}; a line "seed S" restarts
//     the observation-noise stream at seed S (as `regret` does for each seed).
//
// Scoring (both sides): the searcher's pick is the evaluated config with the best
// OBSERVED value; its noise-free value minus the problem's minimum is the regret
// (for noise-free problems this is the usual simple regret). For the real tuning
// tasks the minimum is not known: `minimum` is the best value recorded so far
// (known = false) and report.py takes min(that, best value any run found).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#ifdef TUNE_BENCH_WITH_TORCH
#include <zlib.h>

#include <torch/torch.h>
#endif
#ifdef TUNE_BENCH_WITH_XGBOOST
#include <xgboost/c_api.h>
#endif

#include "search/searcher.h"
#include "trainer/test_functions.h"

namespace {

using tune::Json;
using Vec = std::vector<double>;

// ---------------------------------------------------------------------------
// Synthetic functions (x in the problem's box).

double six_hump_camel(const Vec& x) {
  const double a = x[0], b = x[1];
  return (4 - 2.1 * a * a + a * a * a * a / 3) * a * a + a * b + (-4 + 4 * b * b) * b * b;
}

double hartmann3(const Vec& x) {
  static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
  static const double A[4][3] = {{3.0, 10, 30}, {0.1, 10, 35}, {3.0, 10, 30}, {0.1, 10, 35}};
  static const double P[4][3] = {{0.3689, 0.1170, 0.2673}, {0.4699, 0.4387, 0.7470}, {0.1091, 0.8732, 0.5547},
                                 {0.0381, 0.5743, 0.8828}};
  double s = 0;
  for (int i = 0; i < 4; ++i) {
    double inner = 0;
    for (int j = 0; j < 3; ++j) inner += A[i][j] * (x[static_cast<size_t>(j)] - P[i][j]) * (x[static_cast<size_t>(j)] - P[i][j]);
    s -= alpha[i] * std::exp(-inner);
  }
  return s;
}

double hartmann6(const Vec& x) {
  std::array<double, 6> a{};
  std::copy(x.begin(), x.end(), a.begin());
  return tune::test_functions::hartmann6(a);
}

double levy(const Vec& x) {
  const size_t d = x.size();
  auto w = [&](size_t i) { return 1 + (x[i] - 1) / 4; };
  double s = std::pow(std::sin(M_PI * w(0)), 2);
  for (size_t i = 0; i + 1 < d; ++i)
    s += std::pow(w(i) - 1, 2) * (1 + 10 * std::pow(std::sin(M_PI * w(i) + 1), 2));
  s += std::pow(w(d - 1) - 1, 2) * (1 + std::pow(std::sin(2 * M_PI * w(d - 1)), 2));
  return s;
}

// Ackley (a = 20, b = 0.2, c = 2 pi); minimum 0 at z = 0.
double ackley(const Vec& z) {
  const double d = static_cast<double>(z.size());
  double sq = 0, cs = 0;
  for (double v : z) {
    sq += v * v;
    cs += std::cos(2 * M_PI * v);
  }
  return -20 * std::exp(-0.2 * std::sqrt(sq / d)) - std::exp(cs / d) + 20 + M_E;
}

// Rastrigin; minimum 0 at z = 0.
double rastrigin(const Vec& z) {
  double s = 10 * static_cast<double>(z.size());
  for (double v : z) s += v * v - 10 * std::cos(2 * M_PI * v);
  return s;
}

// Rosenbrock; minimum 0 at (1, ..., 1).
double rosenbrock(const Vec& x) {
  double s = 0;
  for (size_t i = 0; i + 1 < x.size(); ++i) s += 100 * std::pow(x[i + 1] - x[i] * x[i], 2) + std::pow(1 - x[i], 2);
  return s;
}

// Styblinski-Tang; minimum -39.16616570377142 * d at x_i = -2.903534027771178.
double styblinski_tang(const Vec& x) {
  double s = 0;
  for (double v : x) s += v * v * v * v - 16 * v * v + 5 * v;
  return 0.5 * s;
}
constexpr double kStyblinskiArgmin = -2.903534027771178;
constexpr double kStyblinskiMinimumPerDim = -39.16616570377142;

Vec shifted(const Vec& x, const Vec& shift) {
  Vec z(x.size());
  for (size_t i = 0; i < x.size(); ++i) z[i] = x[i] - shift[i];
  return z;
}

// A fixed 8x8 rotation (Gram-Schmidt on a seeded Gaussian matrix: the same in
// every process, so `serve` and `regret` evaluate the same function).
const std::vector<Vec>& rotation8() {
  static const std::vector<Vec> q = [] {
    std::mt19937_64 rng(8);
    std::normal_distribution<double> n(0, 1);
    std::vector<Vec> m(8, Vec(8));
    for (auto& row : m)
      for (auto& v : row) v = n(rng);
    for (size_t i = 0; i < 8; ++i) {
      for (size_t k = 0; k < i; ++k) {
        double dot = 0;
        for (size_t j = 0; j < 8; ++j) dot += m[i][j] * m[k][j];
        for (size_t j = 0; j < 8; ++j) m[i][j] -= dot * m[k][j];
      }
      double norm = 0;
      for (double v : m[i]) norm += v * v;
      norm = std::sqrt(norm);
      for (auto& v : m[i]) v /= norm;
    }
    return m;
  }();
  return q;
}

const Vec kEllipsoidShift = {1.2, -0.8, 2.1, -1.9, 0.4, -2.6, 1.5, 0.7};

// Rotated ellipsoid, condition number 1e6: sum_i 10^(6 i / 7) z_i^2 with
// z = Q (x - s); minimum 0 at x = s.
double rotated_ellipsoid(const Vec& x) {
  const auto& q = rotation8();
  double s = 0;
  for (size_t i = 0; i < 8; ++i) {
    double z = 0;
    for (size_t j = 0; j < 8; ++j) z += q[i][j] * (x[j] - kEllipsoidShift[j]);
    s += std::pow(10.0, 6.0 * static_cast<double>(i) / 7.0) * z * z;
  }
  return s;
}

// Narrow basins on a flat plateau (issue 33, goal 4). Shekel-10 and De Jong's
// fifth (foxholes) are in trainer/test_functions.h.

// Gaussian wells on [0, 1]^d: f(x) = -sum_k depth_k exp(-|x - c_k|^2 / (2 w_k^2)),
// 0 (to rounding) between them. Well 0 is the deepest (depth 1) and the
// narrowest (width w_min); the others are 0.35-0.85 deep and w_min*1.3..w_max
// wide. Centres are drawn (fixed seed) in [0.1, 0.9]^d, kept 3 (w_i + w_j)
// apart so that no two wells add up below well 0. The minimum is found by
// gradient descent from c_0 at start-up (the wells are separated, so the
// descent stays in well 0).
struct Wells {
  std::vector<Vec> centre;
  Vec depth, width;
  Vec argmin;
  double minimum = 0;
  Wells(size_t dims, int count, uint64_t seed, double w_min, double w_max) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    while (static_cast<int>(centre.size()) < count) {
      const bool first = centre.empty();
      const double w = first ? w_min : w_min * 1.3 + u(rng) * (w_max - w_min * 1.3);
      const double h = first ? 1.0 : 0.35 + 0.5 * u(rng);
      Vec c(dims);
      for (auto& v : c) v = 0.1 + 0.8 * u(rng);
      bool apart = true;
      for (size_t k = 0; k < centre.size() && apart; ++k) {
        double d2 = 0;
        for (size_t j = 0; j < dims; ++j) d2 += (c[j] - centre[k][j]) * (c[j] - centre[k][j]);
        apart = std::sqrt(d2) >= 3 * (w + width[k]);
      }
      if (!apart) continue;
      centre.push_back(c), depth.push_back(h), width.push_back(w);
    }
    argmin = centre[0];
    for (int step = 0; step < 20000; ++step) {
      Vec g(dims, 0.0);
      for (size_t k = 0; k < centre.size(); ++k) {
        double d2 = 0;
        for (size_t j = 0; j < dims; ++j) d2 += (argmin[j] - centre[k][j]) * (argmin[j] - centre[k][j]);
        const double e = depth[k] * std::exp(-d2 / (2 * width[k] * width[k])) / (width[k] * width[k]);
        for (size_t j = 0; j < dims; ++j) g[j] += e * (argmin[j] - centre[k][j]);
      }
      for (size_t j = 0; j < dims; ++j) argmin[j] -= 0.2 * w_min * w_min * g[j];
    }
    minimum = (*this)(argmin);
  }
  double operator()(const Vec& x) const {
    double s = 0;
    for (size_t k = 0; k < centre.size(); ++k) {
      double d2 = 0;
      for (size_t j = 0; j < x.size(); ++j) d2 += (x[j] - centre[k][j]) * (x[j] - centre[k][j]);
      s -= depth[k] * std::exp(-d2 / (2 * width[k] * width[k]));
    }
    return s;
  }
};

const Vec kAckleyShift = {7.3, -11.1, 3.9, 15.2, -4.4};
const Vec kRastriginShift = {1.3, -2.1, 0.7, 2.6};

// Mixed space: x0..x2 uniform(-5, 5), n0, n1 randint(-8, 9) (integers -8..8),
// c choice(a, b, c, d). Each category is a shifted, scaled bowl (non-separable
// in x0/x1, a cosine ripple in x2) over its own offset; the global minimum 0 is
// in category "b" at x = (1.7, -2.3, 0.6), n = (3, -5); the other categories
// bottom out at 0.5, 1.0 and 0.25.
struct MixedCategory {
  double offset, scale;
  std::array<double, 3> x;
  std::array<double, 2> n;
};
const std::map<std::string, MixedCategory>& mixed_categories() {
  static const std::map<std::string, MixedCategory> c = {
      {"a", {0.5, 1.0, {-3.1, 2.2, -1.4}, {-6, 2}}},
      {"b", {0.0, 1.0, {1.7, -2.3, 0.6}, {3, -5}}},
      {"c", {1.0, 0.5, {0.2, 4.1, 3.3}, {0, 7}}},
      {"d", {0.25, 2.0, {-4.0, -0.5, 2.2}, {6, 1}}},
  };
  return c;
}

double mixed(const Json& config) {
  const MixedCategory& c = mixed_categories().at(config.at("c").get<std::string>());
  const double d0 = config.at("x0").get<double>() - c.x[0], d1 = config.at("x1").get<double>() - c.x[1],
               d2 = config.at("x2").get<double>() - c.x[2];
  const double m0 = std::round(config.at("n0").get<double>()) - c.n[0],
               m1 = std::round(config.at("n1").get<double>()) - c.n[1];
  const double bowl = d0 * d0 + 0.5 * d0 * d1 + 2 * d1 * d1 + 0.5 * d2 * d2 + 2 * (1 - std::cos(2 * M_PI * d2)) +
                      0.3 * (m0 * m0 + m1 * m1);
  return c.offset + c.scale * bowl;
}

// ---------------------------------------------------------------------------
// Real tuning tasks.

#ifdef TUNE_BENCH_WITH_XGBOOST
// XGBoost: 1,000 training and 1,000 validation rows of a synthetic binary
// classification set (20 Gaussian features, a nonlinear logit, labels drawn
// from it; fixed seed), 50 boosting rounds, nthread 1, seed 0; the objective is
// the validation log-loss.
struct XgbData {
  static constexpr int kFeatures = 20, kTrain = 1000, kValid = 1000, kRounds = 50;
  std::vector<float> x;  // (kTrain + kValid) x kFeatures, row-major
  std::vector<float> y;
  XgbData() {
    std::mt19937_64 rng(20240613);
    std::normal_distribution<double> n(0, 1);
    std::uniform_real_distribution<double> u(0, 1);
    const int rows = kTrain + kValid;
    for (int r = 0; r < rows; ++r) {
      std::array<double, kFeatures> f{};
      for (auto& v : f) v = n(rng);
      double logit = 1.5 * f[0] * f[1] + 2 * std::sin(2 * f[2]) + f[3] * f[3] - 1 + 0.8 * f[4] - 0.6 * f[5] * f[6] +
                     (f[7] > 0.5 ? 1.2 : -0.3) + 0.4 * std::fabs(f[8]) * f[9];
      for (int j = 10; j < 15; ++j) logit += 0.15 * f[static_cast<size_t>(j)];  // weak; 15..19 pure noise
      x.insert(x.end(), f.begin(), f.end());
      y.push_back(u(rng) < 1 / (1 + std::exp(-2 * logit)) ? 1.0f : 0.0f);
    }
  }
};

void xgb_check(int code, const char* what) {
  if (code != 0) throw std::runtime_error(std::string("xgboost ") + what + ": " + XGBGetLastError());
}

const XgbData& xgb_data() {
  static const XgbData data;
  return data;
}

// The two matrices, built once per process (the booster only reads them).
struct XgbMatrices {
  DMatrixHandle train = nullptr, valid = nullptr;
  XgbMatrices() {
    const XgbData& data = xgb_data();
    const int f = XgbData::kFeatures;
    xgb_check(XGDMatrixCreateFromMat(data.x.data(), XgbData::kTrain, f, std::nanf(""), &train), "train matrix");
    xgb_check(XGDMatrixSetFloatInfo(train, "label", data.y.data(), XgbData::kTrain), "labels");
    xgb_check(XGDMatrixCreateFromMat(data.x.data() + static_cast<size_t>(XgbData::kTrain) * f, XgbData::kValid, f,
                                     std::nanf(""), &valid),
              "valid matrix");
  }
  ~XgbMatrices() {
    XGDMatrixFree(train);
    XGDMatrixFree(valid);
  }
};

double xgboost_task(const Json& config) {
  const XgbData& data = xgb_data();
  static const XgbMatrices m;
  struct Booster {
    BoosterHandle h = nullptr;
    ~Booster() {
      if (h) XGBoosterFree(h);
    }
  } booster;
  DMatrixHandle train = m.train;
  xgb_check(XGBoosterCreate(&train, 1, &booster.h), "booster");
  auto set = [&](const char* key, const std::string& value) {
    xgb_check(XGBoosterSetParam(booster.h, key, value.c_str()), key);
  };
  auto num = [&](const char* key) {
    std::ostringstream s;
    s.precision(17);
    s << config.at(key).get<double>();
    return s.str();
  };
  set("objective", "binary:logistic");
  set("tree_method", "hist");
  set("nthread", "1");
  set("seed", "0");
  set("verbosity", "0");
  set("eta", num("eta"));
  set("max_depth", std::to_string(static_cast<int>(std::lround(config.at("max_depth").get<double>()))));
  set("min_child_weight", num("min_child_weight"));
  set("subsample", num("subsample"));
  set("colsample_bytree", num("colsample_bytree"));
  set("lambda", num("lambda"));
  for (int r = 0; r < XgbData::kRounds; ++r) xgb_check(XGBoosterUpdateOneIter(booster.h, r, train), "boosting");
  bst_ulong length = 0;
  const float* p = nullptr;
  xgb_check(XGBoosterPredict(booster.h, m.valid, 0, 0, 0, &length, &p), "predict");
  double loss = 0;
  for (bst_ulong i = 0; i < length; ++i) {
    const double q = std::clamp(static_cast<double>(p[i]), 1e-15, 1 - 1e-15);
    const double y = data.y[static_cast<size_t>(XgbData::kTrain) + i];
    loss -= y * std::log(q) + (1 - y) * std::log(1 - q);
  }
  return loss / static_cast<double>(length);
}
#endif

#ifdef TUNE_BENCH_WITH_TORCH
// MLP on Fashion-MNIST: the first 1,000 training images train a
// 784-h-10 ReLU MLP with dropout (Adam, L2 weight decay, batch 50, 2 epochs,
// torch seed 0, one thread); the objective is the cross-entropy on the first
// 1,000 test images (a non-finite loss counts as 10).
struct FashionSubset {
  static constexpr int kTrain = 1000, kValid = 1000;
  torch::Tensor xtr, ytr, xva, yva;

  static torch::Tensor read(const std::string& path, int header, int64_t count, int64_t item) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw std::runtime_error("cannot open " + path + " (dataset-fashion-mnist; TUNE_FASHION_MNIST_DIR)");
    std::vector<unsigned char> head(static_cast<size_t>(header));
    auto out = torch::empty({count * item}, torch::kUInt8);
    const bool ok = gzread(f, head.data(), static_cast<unsigned>(header)) == header &&
                    gzread(f, out.data_ptr<uint8_t>(), static_cast<unsigned>(count * item)) == count * item;
    gzclose(f);
    if (!ok) throw std::runtime_error("truncated " + path);
    return out;
  }
  FashionSubset() {
    const char* env = std::getenv("TUNE_FASHION_MNIST_DIR");
    const std::string dir = env && *env ? env : "/usr/share/datasets/fashion-mnist";
    auto images = [&](const std::string& split, int64_t n) {
      return (read(dir + "/" + split + "-images-idx3-ubyte.gz", 16, n, 784).view({n, 784}).to(torch::kFloat32) / 255.0 -
              0.2860) /
             0.3530;
    };
    auto labels = [&](const std::string& split, int64_t n) {
      return read(dir + "/" + split + "-labels-idx1-ubyte.gz", 8, n, 1).to(torch::kInt64);
    };
    xtr = images("train", kTrain);
    ytr = labels("train", kTrain);
    xva = images("t10k", kValid);
    yva = labels("t10k", kValid);
  }
};

double mlp_task(const Json& config) {
  static const FashionSubset data;
  torch::set_num_threads(1);
  torch::manual_seed(0);
  const int64_t hidden = std::lround(config.at("hidden").get<double>());
  const double lr = config.at("lr").get<double>(), wd = config.at("weight_decay").get<double>(),
               dropout = config.at("dropout").get<double>();
  torch::nn::Sequential net(torch::nn::Linear(784, hidden), torch::nn::ReLU(), torch::nn::Dropout(dropout),
                            torch::nn::Linear(hidden, 10));
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(lr).weight_decay(wd));
  const int64_t batch = 50;
  net->train();
  for (int epoch = 0; epoch < 2; ++epoch) {
    const auto perm = torch::randperm(FashionSubset::kTrain, torch::kInt64);
    for (int64_t b = 0; b < FashionSubset::kTrain; b += batch) {
      const auto idx = perm.slice(0, b, b + batch);
      opt.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net->forward(data.xtr.index_select(0, idx)),
                                                       data.ytr.index_select(0, idx));
      loss.backward();
      opt.step();
    }
  }
  net->eval();
  torch::NoGradGuard no_grad;
  const double loss = torch::nn::functional::cross_entropy(net->forward(data.xva), data.yva).item<double>();
  return std::isfinite(loss) ? std::min(loss, 10.0) : 10.0;
}
#endif

// ---------------------------------------------------------------------------
// The suite.

struct Problem {
  std::string type;  // "synthetic" (with a description), "noisy", "mixed", "real"
  int budget = 0;
  tune::SearchSpace space;
  std::function<double(const Json&)> f;  // noise-free value
  double minimum = 0;                    // known minimum, or the best value recorded (known = false)
  bool known = true;
  double noise_sd = 0;  // Gaussian observation noise
  Json argmin;          // a config at the minimum (checked at start-up), null if none
  std::string about;
};

tune::SearchSpace box(const std::vector<std::pair<double, double>>& bounds) {
  tune::SearchSpace space;
  for (size_t j = 0; j < bounds.size(); ++j) space.add("x" + std::to_string(j), tune::uniform(bounds[j].first, bounds[j].second));
  return space;
}

Vec point_of(const Json& config, size_t dims) {
  Vec x;
  for (size_t j = 0; j < dims; ++j) x.push_back(config.at("x" + std::to_string(j)).get<double>());
  return x;
}

Json config_of(const Vec& x) {
  Json c = Json::object();
  for (size_t j = 0; j < x.size(); ++j) c["x" + std::to_string(j)] = x[j];
  return c;
}

Problem continuous(const std::string& type, int budget, const std::vector<std::pair<double, double>>& bounds,
                   double minimum, std::function<double(const Vec&)> f, const Vec& argmin, const std::string& about,
                   double noise_sd = 0) {
  Problem p;
  p.type = type;
  p.budget = budget;
  p.space = box(bounds);
  const size_t dims = bounds.size();
  p.f = [f, dims](const Json& c) { return f(point_of(c, dims)); };
  p.minimum = minimum;
  p.noise_sd = noise_sd;
  p.argmin = config_of(argmin);
  p.about = about;
  return p;
}

using Bounds = std::vector<std::pair<double, double>>;

// Best validation values recorded for the real tasks: the best any sampler and
// seed found in the suite's first full run (bench/bayes/README.md, "Suite").
constexpr double kXgboostBest = 0.399096639697248;
constexpr double kMlpBest = 0.5822991728782654;

// The suite in table order (the first five are issue 5's functions).
const std::vector<std::pair<std::string, Problem>>& problems() {
  static const std::vector<std::pair<std::string, Problem>> all = [] {
    std::vector<std::pair<std::string, Problem>> v;
    v.emplace_back("branin", continuous("smooth", 50, {{-5, 10}, {0, 15}}, tune::test_functions::kBraninMinimum,
                                        [](const Vec& x) { return tune::test_functions::branin(x[0], x[1]); },
                                        {M_PI, 2.275}, "Branin"));
    v.emplace_back("hartmann6",
                   continuous("smooth", 100, Bounds(6, {0.0, 1.0}), tune::test_functions::kHartmann6Minimum, hartmann6,
                              {0.20168952, 0.15001069, 0.47687398, 0.27533243, 0.31165162, 0.65730054}, "Hartmann6"));
    // Six-hump camel on [-3, 3] x [-2, 2]; minimum -1.0316284535 at (0.0898, -0.7126).
    v.emplace_back("camel", continuous("smooth", 50, {{-3, 3}, {-2, 2}}, -1.0316284534898774, six_hump_camel,
                                       {0.08984201368301331, -0.7126564032704135}, "six-hump camel"));
    // Hartmann3 on [0, 1]^3; minimum -3.86278 (-3.8627797873 with the published
    // 4-digit P) at (0.114589, 0.555649, 0.852547).
    v.emplace_back("hartmann3", continuous("smooth", 50, Bounds(3, {0.0, 1.0}), -3.862779787332663, hartmann3,
                                           {0.114588853515625, 0.5556488950958252, 0.852546984741211}, "Hartmann3"));
    // Levy in 4-D on [-10, 10]^4; minimum 0 at (1, 1, 1, 1).
    v.emplace_back("levy4", continuous("multimodal", 100, Bounds(4, {-10.0, 10.0}), 0.0, levy, {1, 1, 1, 1}, "Levy"));
    // Issue 13's additions.
    v.emplace_back("ackley5", continuous("multimodal", 100, Bounds(5, {-32.768, 32.768}), 0.0,
                                         [](const Vec& x) { return ackley(shifted(x, kAckleyShift)); }, kAckleyShift,
                                         "Ackley, optimum shifted off the centre"));
    v.emplace_back("rastrigin4", continuous("multimodal", 100, Bounds(4, {-5.12, 5.12}), 0.0,
                                            [](const Vec& x) { return rastrigin(shifted(x, kRastriginShift)); },
                                            kRastriginShift, "Rastrigin, optimum shifted off the centre"));
    v.emplace_back("styblinski10", continuous("multimodal", 150, Bounds(10, {-5.0, 5.0}), 10 * kStyblinskiMinimumPerDim,
                                              styblinski_tang, Vec(10, kStyblinskiArgmin), "Styblinski-Tang"));
    // Issue 33's narrow basins on a flat plateau.
    // Shekel m = 10 on [0, 10]^4: holes 0.3-0.8 wide on a plateau near -0.3.
    v.emplace_back("shekel10", continuous("narrow-basin", 100, Bounds(4, {0.0, 10.0}),
                                          tune::test_functions::kShekel10Minimum,
                                          [](const Vec& x) { return tune::test_functions::shekel10({x[0], x[1], x[2], x[3]}); },
                                          Vec(tune::test_functions::kShekel10Argmin.begin(),
                                              tune::test_functions::kShekel10Argmin.end()),
                                          "Shekel m = 10"));
    v.emplace_back("foxholes", continuous("narrow-basin", 100, Bounds(2, {-65.536, 65.536}),
                                          tune::test_functions::kFoxholesMinimum,
                                          [](const Vec& x) { return tune::test_functions::foxholes(x[0], x[1]); },
                                          {-31.97833, -31.97833}, "De Jong's fifth (Shekel's foxholes)"));
    for (const auto& [name, dims, count, seed, w_min, w_max, budget] :
         std::vector<std::tuple<std::string, size_t, int, uint64_t, double, double, int>>{
             {"wells3", 3, 8, 3, 0.05, 0.10, 100}, {"wells5", 5, 12, 5, 0.08, 0.14, 150}}) {
      auto wells = std::make_shared<Wells>(dims, count, seed, w_min, w_max);
      v.emplace_back(name, continuous("narrow-basin", budget, Bounds(dims, {0.0, 1.0}), wells->minimum,
                                      [wells](const Vec& x) { return (*wells)(x); }, wells->argmin,
                                      "Gaussian wells, " + std::to_string(count) + " on a flat plateau"));
    }
    v.emplace_back("rosenbrock6", continuous("ill-conditioned", 100, Bounds(6, {-2.048, 2.048}), 0.0, rosenbrock,
                                             Vec(6, 1.0), "Rosenbrock"));
    v.emplace_back("ellipsoid8", continuous("ill-conditioned", 150, Bounds(8, {-5.0, 5.0}), 0.0, rotated_ellipsoid,
                                            kEllipsoidShift, "rotated ellipsoid, condition 1e6"));
    v.emplace_back("hartmann6-noisy",
                   continuous("noisy", 100, Bounds(6, {0.0, 1.0}), tune::test_functions::kHartmann6Minimum, hartmann6,
                              {0.20168952, 0.15001069, 0.47687398, 0.27533243, 0.31165162, 0.65730054},
                              "Hartmann6 + N(0, 0.1^2) observation noise", 0.1));
    {
      Problem p;
      p.type = "mixed";
      p.budget = 100;
      p.space.add("x0", tune::uniform(-5, 5))
          .add("x1", tune::uniform(-5, 5))
          .add("x2", tune::uniform(-5, 5))
          .add("n0", tune::randint(-8, 9))
          .add("n1", tune::randint(-8, 9))
          .add("c", tune::choice({"a", "b", "c", "d"}));
      p.f = mixed;
      p.minimum = 0;
      p.argmin = Json{{"x0", 1.7}, {"x1", -2.3}, {"x2", 0.6}, {"n0", 3}, {"n1", -5}, {"c", "b"}};
      p.about = "3 floats, 2 integers, a 4-way category (offset + scale + shift)";
      v.emplace_back("mixed6", std::move(p));
    }
#ifdef TUNE_BENCH_WITH_XGBOOST
    {
      Problem p;
      p.type = "real";
      p.budget = 60;
      p.space.add("eta", tune::loguniform(0.01, 1.0))
          .add("max_depth", tune::randint(1, 11))
          .add("min_child_weight", tune::loguniform(0.1, 50.0))
          .add("subsample", tune::uniform(0.5, 1.0))
          .add("colsample_bytree", tune::uniform(0.2, 1.0))
          .add("lambda", tune::loguniform(1e-3, 100.0));
      p.f = xgboost_task;
      p.known = false;
      p.about = "XGBoost, 50 rounds, validation log-loss (synthetic 1k/1k rows, 20 features)";
      v.emplace_back("xgboost", std::move(p));
    }
#endif
#ifdef TUNE_BENCH_WITH_TORCH
    {
      Problem p;
      p.type = "real";
      p.budget = 50;
      p.space.add("lr", tune::loguniform(1e-5, 1e-1))
          .add("hidden", tune::lograndint(16, 513))
          .add("weight_decay", tune::loguniform(1e-6, 1e-1))
          .add("dropout", tune::uniform(0.0, 0.8));
      p.f = mlp_task;
      p.known = false;
      p.about = "Fashion-MNIST MLP, 1k train / 1k validation images, 2 epochs, validation cross-entropy";
      v.emplace_back("fashion-mlp", std::move(p));
    }
#endif
    // The real tasks' recorded best values; report.py uses min(this, the best
    // any run of the suite found).
    for (auto& [name, p] : v) {
      if (name == "xgboost") p.minimum = kXgboostBest;
      if (name == "fashion-mlp") p.minimum = kMlpBest;
    }
    return v;
  }();
  return all;
}

const Problem* find_problem(const std::string& name) {
  for (const auto& [n, p] : problems())
    if (n == name) return &p;
  return nullptr;
}

std::string arg(const std::vector<std::string>& args, const std::string& name, const std::string& fallback) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--" + name) return args[i + 1];
  return fallback;
}

Json describe(const std::string& name, const Problem& p) {
  return Json{{"function", name},
              {"dims", p.space.parameters().size()},
              {"budget", p.budget},
              {"type", p.type},
              {"about", p.about},
              {"minimum", std::isfinite(p.minimum) ? Json(p.minimum) : Json()},
              {"known", p.known},
              {"noise_sd", p.noise_sd}};
}

// f(argmin) == minimum for the problems with a known minimizer.
bool check(const std::string& name, const Problem& p) {
  if (p.argmin.is_null()) return true;
  const double at = p.f(p.argmin);
  if (std::fabs(at - p.minimum) > 1e-6) {
    std::cerr << name << ": f(argmin) = " << at << " but the minimum is " << p.minimum << "\n";
    return false;
  }
  return true;
}

// Observation noise: one N(0, sd^2) draw per evaluation, in order, from a
// stream seeded by the run's seed (the same stream in `regret` and `serve`).
struct Noise {
  std::mt19937_64 rng;
  std::normal_distribution<double> n{0, 1};
  explicit Noise(uint64_t seed) : rng(seed * 7919 + 17) {}
  double operator()(double sd) { return sd > 0 ? sd * n(rng) : 0.0; }
};

int regret(const std::vector<std::string>& args) {
  const std::string algorithm = arg(args, "algorithm", "bayes");
  const std::string name = arg(args, "function", "branin");
  const Problem* problem = find_problem(name);
  if (!problem) {
    std::cerr << "unknown function " << name << "\n";
    return 2;
  }
  const Problem& p = *problem;
  const int budget = std::stoi(arg(args, "budget", std::to_string(p.budget)));
  const int seeds = std::stoi(arg(args, "seeds", "20"));
  const int concurrency = std::stoi(arg(args, "concurrency", "1"));
  const Json params = Json::parse(arg(args, "params", "{}"));
  if (!check(name, p)) return 1;
  std::vector<double> regrets, best_values;
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < seeds; ++s) {
    tune::SearchOptions options;
    options.algorithm = algorithm;
    options.seed = static_cast<uint64_t>(1000 + s);
    options.params = params;
    options.metric = "loss";
    options.mode = "min";
    auto searcher = tune::make_searcher(options, p.space, budget, {});
    Noise noise(static_cast<uint64_t>(1000 + s));
    std::deque<std::pair<int64_t, Json>> pending;
    int64_t next = 0;
    double best_observed = std::numeric_limits<double>::infinity(), best_true = best_observed;
    while (next < budget || !pending.empty()) {
      while (next < budget && static_cast<int>(pending.size()) < concurrency) {
        auto config = searcher->suggest(next);
        pending.emplace_back(next++, *config);
      }
      auto [index, config] = pending.front();
      pending.pop_front();
      const double truth = p.f(config);
      const double y = truth + noise(p.noise_sd);
      if (y < best_observed) {
        best_observed = y;
        best_true = truth;
      }
      searcher->on_complete({index, config, Json{{"loss", y}, {"training_iteration", 1}}, false});
    }
    best_values.push_back(best_true);
    regrets.push_back(best_true - p.minimum);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Json out = describe(name, p);
  out.update(Json{{"algorithm", algorithm}, {"budget", budget}, {"concurrency", concurrency}, {"params", params},
                  {"regrets", regrets}, {"best_values", best_values}, {"seconds", seconds}});
  std::cout << out.dump() << "\n";
  return 0;
}

int serve(const std::vector<std::string>& args) {
  const std::string name = arg(args, "function", "branin");
  const Problem* problem = find_problem(name);
  if (!problem) {
    std::cerr << "unknown function " << name << "\n";
    return 2;
  }
  if (!check(name, *problem)) return 1;
  Noise noise(std::stoull(arg(args, "seed", "1000")));
  for (std::string line; std::getline(std::cin, line);) {
    if (line.empty()) continue;
    if (line.rfind("seed ", 0) == 0) {
      noise = Noise(std::stoull(line.substr(5)));
      continue;
    }
    const double truth = problem->f(Json::parse(line));
    const double y = truth + noise(problem->noise_sd);
    std::cout << Json{{"value", y}, {"true", truth}}.dump() << std::endl;
  }
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

int latency(const std::vector<std::string>& args) {
  std::vector<int> sizes;
  std::stringstream list(arg(args, "observations", "50,200,500"));
  for (std::string item; std::getline(list, item, ',');) sizes.push_back(std::stoi(item));
  const int repeats = std::stoi(arg(args, "repeats", "3"));
  const Json params = Json::parse(arg(args, "params", "{}"));
  const Problem& fn = *find_problem("hartmann6");
  Json out = Json::object();
  for (int n : sizes) {
    std::vector<double> refit_ms, cached_ms, amortized_ms;
    for (int r = 0; r < repeats; ++r) {
      tune::SearchOptions options;
      options.algorithm = "bayes";
      options.params = params;
      options.seed = static_cast<uint64_t>(r + 1);
      options.metric = "loss";
      options.mode = "min";
      auto searcher = tune::make_searcher(options, fn.space, n + 30, {});
      std::mt19937_64 rng(static_cast<uint64_t>(r));
      std::uniform_real_distribution<double> u(0, 1);
      for (int i = 0; i < n; ++i) {
        Json config = Json::object();
        for (int j = 0; j < 6; ++j) config["x" + std::to_string(j)] = u(rng);
        searcher->on_complete({i, config, Json{{"loss", fn.f(config)}}, false});
      }
      // First model suggestion at n observations: fits the hyperparameters.
      auto t0 = std::chrono::steady_clock::now();
      Json c = *searcher->suggest(n);
      auto t1 = std::chrono::steady_clock::now();
      searcher->on_complete({n, c, Json{{"loss", fn.f(c)}}, false});
      // Next one at n + 1: hyperparameters cached (no refit between scheduled sizes).
      auto t2 = std::chrono::steady_clock::now();
      (void)searcher->suggest(n + 1);
      auto t3 = std::chrono::steady_clock::now();
      refit_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      cached_ms.push_back(std::chrono::duration<double, std::milli>(t3 - t2).count());
      // Amortized: 20 more suggest/complete rounds, refits included where the
      // schedule (every 10% more data) puts them.
      const Json centre{{"x0", 0.5}, {"x1", 0.5}, {"x2", 0.5}, {"x3", 0.5}, {"x4", 0.5}, {"x5", 0.5}};
      searcher->on_complete({n + 1, centre, Json{{"loss", fn.f(centre)}}, false});
      double total = 0;
      for (int k = n + 2; k < n + 22; ++k) {
        auto a = std::chrono::steady_clock::now();
        Json next = *searcher->suggest(k);
        total += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
        searcher->on_complete({k, next, Json{{"loss", fn.f(next)}}, false});
      }
      amortized_ms.push_back(total / 20);
    }
    out[std::to_string(n)] = {{"with_refit_ms", median(refit_ms)}, {"cached_ms", median(cached_ms)},
                              {"amortized_ms", median(amortized_ms)}};
  }
  std::cout << Json{{"latency", out}, {"dims", 6}, {"repeats", repeats}, {"params", params}}.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << "usage: bayes_bench regret|latency|list|describe|serve [options]\n";
    return 2;
  }
  try {
    if (args[0] == "regret") return regret(args);
    if (args[0] == "latency") return latency(args);
    if (args[0] == "serve") return serve(args);
    if (args[0] == "list") {
      for (const auto& [name, p] : problems()) std::cout << describe(name, p).dump() << "\n";
      return 0;
    }
    if (args[0] == "describe") {
      const std::string name = arg(args, "function", "");
      const Problem* p = find_problem(name);
      if (!p) {
        std::cerr << "unknown function " << name << "\n";
        return 2;
      }
      Json out = describe(name, *p);
      out["space"] = p->space.to_json();
      std::cout << out.dump() << "\n";
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "bayes_bench: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "unknown mode " << args[0] << "\n";
  return 2;
}
