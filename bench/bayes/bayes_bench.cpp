// bench/run bayes: drives tune's searchers directly (suggest / on_complete in
// a loop, evaluating a test function) so that 20 seeds fit in minutes.
//
//   bayes_bench regret --algorithm bayes --function branin --budget 50 --seeds 20 [--concurrency 4] [--params JSON]
//     -> one JSON line: {"algorithm", "function", "budget", "concurrency", "regrets": [...], "seconds": s}
//   bayes_bench latency --observations 50,200,500 --repeats 3
//     -> one JSON line: suggestion latency (ms) of bayes in 6-D (Hartmann6 data)
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/searcher.h"
#include "trainer/test_functions.h"

namespace {

using tune::Json;

struct Function {
  int dims;
  std::vector<std::pair<double, double>> bounds;
  double minimum;
  std::function<double(const std::vector<double>&)> f;
  std::vector<double> argmin;  // one global minimizer (sanity check)
};

double six_hump_camel(const std::vector<double>& x) {
  const double a = x[0], b = x[1];
  return (4 - 2.1 * a * a + a * a * a * a / 3) * a * a + a * b + (-4 + 4 * b * b) * b * b;
}

double hartmann3(const std::vector<double>& x) {
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

double levy(const std::vector<double>& x) {
  const size_t d = x.size();
  auto w = [&](size_t i) { return 1 + (x[i] - 1) / 4; };
  double s = std::pow(std::sin(M_PI * w(0)), 2);
  for (size_t i = 0; i + 1 < d; ++i)
    s += std::pow(w(i) - 1, 2) * (1 + 10 * std::pow(std::sin(M_PI * w(i) + 1), 2));
  s += std::pow(w(d - 1) - 1, 2) * (1 + std::pow(std::sin(2 * M_PI * w(d - 1)), 2));
  return s;
}

const std::map<std::string, Function>& functions() {
  static const std::map<std::string, Function> all = {
      {"branin",
       {2, {{-5, 10}, {0, 15}}, tune::test_functions::kBraninMinimum,
        [](const std::vector<double>& x) { return tune::test_functions::branin(x[0], x[1]); }, {M_PI, 2.275}}},
      {"hartmann6",
       {6, std::vector<std::pair<double, double>>(6, {0.0, 1.0}), tune::test_functions::kHartmann6Minimum,
        [](const std::vector<double>& x) {
          std::array<double, 6> a{};
          std::copy(x.begin(), x.end(), a.begin());
          return tune::test_functions::hartmann6(a);
        },
        {0.20168952, 0.15001069, 0.47687398, 0.27533243, 0.31165162, 0.65730054}}},
      // Six-hump camel on [-3, 3] x [-2, 2]; minimum -1.0316284535 at (0.0898, -0.7126).
      {"camel", {2, {{-3, 3}, {-2, 2}}, -1.0316284534898774, six_hump_camel, {0.08984201368301331, -0.7126564032704135}}},
      // Hartmann3 on [0, 1]^3; minimum -3.86278 (-3.8627797873 with the
      // published 4-digit P) at (0.114589, 0.555649, 0.852547).
      {"hartmann3",
       {3, std::vector<std::pair<double, double>>(3, {0.0, 1.0}), -3.862779787332663, hartmann3,
        {0.114588853515625, 0.5556488950958252, 0.852546984741211}}},
      // Levy in 4-D on [-10, 10]^4; minimum 0 at (1, 1, 1, 1).
      {"levy4", {4, std::vector<std::pair<double, double>>(4, {-10.0, 10.0}), 0.0, levy, {1, 1, 1, 1}}},
  };
  return all;
}

std::string arg(const std::vector<std::string>& args, const std::string& name, const std::string& fallback) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--" + name) return args[i + 1];
  return fallback;
}

tune::SearchSpace space_of(const Function& fn) {
  tune::SearchSpace space;
  for (int j = 0; j < fn.dims; ++j)
    space.add("x" + std::to_string(j), tune::uniform(fn.bounds[static_cast<size_t>(j)].first, fn.bounds[static_cast<size_t>(j)].second));
  return space;
}

std::vector<double> point_of(const Json& config, int dims) {
  std::vector<double> x;
  for (int j = 0; j < dims; ++j) x.push_back(config["x" + std::to_string(j)].get<double>());
  return x;
}

int regret(const std::vector<std::string>& args) {
  const std::string algorithm = arg(args, "algorithm", "bayes");
  const std::string name = arg(args, "function", "branin");
  const int budget = std::stoi(arg(args, "budget", "50"));
  const int seeds = std::stoi(arg(args, "seeds", "20"));
  const int concurrency = std::stoi(arg(args, "concurrency", "1"));
  const Json params = Json::parse(arg(args, "params", "{}"));
  auto it = functions().find(name);
  if (it == functions().end()) {
    std::cerr << "unknown function " << name << "\n";
    return 2;
  }
  const Function& fn = it->second;
  const double at_argmin = fn.f(fn.argmin);
  if (std::fabs(at_argmin - fn.minimum) > 1e-6) {
    std::cerr << name << ": f(argmin) = " << at_argmin << " but the minimum is " << fn.minimum << "\n";
    return 1;
  }
  const tune::SearchSpace space = space_of(fn);
  std::vector<double> regrets;
  std::vector<std::vector<double>> curves;
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < seeds; ++s) {
    tune::SearchOptions options;
    options.algorithm = algorithm;
    options.seed = static_cast<uint64_t>(1000 + s);
    options.params = params;
    options.metric = "loss";
    options.mode = "min";
    auto searcher = tune::make_searcher(options, space, budget, {});
    std::deque<std::pair<int64_t, Json>> pending;
    int64_t next = 0;
    double best = std::numeric_limits<double>::infinity();
    std::vector<double> curve;
    while (next < budget || !pending.empty()) {
      while (next < budget && static_cast<int>(pending.size()) < concurrency) {
        auto config = searcher->suggest(next);
        pending.emplace_back(next++, *config);
      }
      auto [index, config] = pending.front();
      pending.pop_front();
      const double y = fn.f(point_of(config, fn.dims));
      best = std::min(best, y);
      curve.push_back(best - fn.minimum);
      searcher->on_complete({index, config, Json{{"loss", y}, {"training_iteration", 1}}, false});
    }
    regrets.push_back(best - fn.minimum);
    curves.push_back(curve);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << Json{{"algorithm", algorithm}, {"function", name}, {"budget", budget}, {"concurrency", concurrency},
                    {"params", params}, {"regrets", regrets}, {"seconds", seconds}}
                   .dump()
            << "\n";
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
  const Function& fn = functions().at("hartmann6");
  const tune::SearchSpace space = space_of(fn);
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
      auto searcher = tune::make_searcher(options, space, n + 30, {});
      std::mt19937_64 rng(static_cast<uint64_t>(r));
      std::uniform_real_distribution<double> u(0, 1);
      for (int i = 0; i < n; ++i) {
        Json config = Json::object();
        std::vector<double> x;
        for (int j = 0; j < 6; ++j) {
          x.push_back(u(rng));
          config["x" + std::to_string(j)] = x.back();
        }
        searcher->on_complete({i, config, Json{{"loss", fn.f(x)}}, false});
      }
      // First model suggestion at n observations: fits the hyperparameters.
      auto t0 = std::chrono::steady_clock::now();
      Json c = *searcher->suggest(n);
      auto t1 = std::chrono::steady_clock::now();
      searcher->on_complete({n, c, Json{{"loss", fn.f(point_of(c, 6))}}, false});
      // Next one at n + 1: hyperparameters cached (no refit between scheduled sizes).
      auto t2 = std::chrono::steady_clock::now();
      (void)searcher->suggest(n + 1);
      auto t3 = std::chrono::steady_clock::now();
      refit_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      cached_ms.push_back(std::chrono::duration<double, std::milli>(t3 - t2).count());
      // Amortized: 20 more suggest/complete rounds, refits included where the
      // schedule (every 10% more data) puts them.
      searcher->on_complete({n + 1, Json{{"x0", 0.5}, {"x1", 0.5}, {"x2", 0.5}, {"x3", 0.5}, {"x4", 0.5}, {"x5", 0.5}},
                             Json{{"loss", fn.f({0.5, 0.5, 0.5, 0.5, 0.5, 0.5})}}, false});
      double total = 0;
      for (int k = n + 2; k < n + 22; ++k) {
        auto a = std::chrono::steady_clock::now();
        Json next = *searcher->suggest(k);
        total += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
        searcher->on_complete({k, next, Json{{"loss", fn.f(point_of(next, 6))}}, false});
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
    std::cerr << "usage: bayes_bench regret|latency [options]\n";
    return 2;
  }
  try {
    if (args[0] == "regret") return regret(args);
    if (args[0] == "latency") return latency(args);
  } catch (const std::exception& e) {
    std::cerr << "bayes_bench: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "unknown mode " << args[0] << "\n";
  return 2;
}
