// moo_bench: tune's searchers on multi-objective test problems (bench/run moo).
//
//   moo_bench list                        the problems, one JSON line each
//   moo_bench run --algorithm nsga2|tpe|random --problem zdt1 [--budget 500] [--population 50] [--seeds 10]
//                                         one JSON line: hypervolume per seed, mean suggest() time
//   moo_bench evaluate --problem zdt1     stdin: one JSON array x per line; stdout: its objectives
//   moo_bench score                       stdin: JSON lines with "problem" and "points" (per seed);
//                                         stdout: the same with "hypervolumes" (tune's exact hypervolume)
//
// The searcher is driven directly, sequentially (suggest, evaluate, on_complete);
// seeds 1000..1000+seeds-1, as the Optuna peer (bench/peers/optuna_nsga2.py).
// tpe runs with its defaults (10 startup trials, univariate), as the peer's
// TPESampler.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "search/pareto.h"
#include "search/searcher.h"

namespace {

using tune::Json;
using Point = std::vector<double>;

struct Problem {
  std::string name;
  int variables = 0, objectives = 0;
  Point reference;
  Point (*f)(const Point& x) = nullptr;
};

// ZDT1-3 (Zitzler, Deb, Thiele 2000), x in [0, 1]^n.
double zdt_g(const Point& x) {
  double sum = 0;
  for (size_t k = 1; k < x.size(); ++k) sum += x[k];
  return 1 + 9 * sum / static_cast<double>(x.size() - 1);
}
Point zdt1(const Point& x) {
  const double g = zdt_g(x);
  return {x[0], g * (1 - std::sqrt(x[0] / g))};
}
Point zdt2(const Point& x) {
  const double g = zdt_g(x);
  return {x[0], g * (1 - (x[0] / g) * (x[0] / g))};
}
Point zdt3(const Point& x) {
  const double g = zdt_g(x), r = x[0] / g;
  return {x[0], g * (1 - std::sqrt(r) - r * std::sin(10 * M_PI * x[0]))};
}
// DTLZ2 with 3 objectives (Deb, Thiele, Laumanns, Zitzler 2002): the front
// is the unit sphere's octant.
Point dtlz2(const Point& x) {
  double g = 0;
  for (size_t k = 2; k < x.size(); ++k) g += (x[k] - 0.5) * (x[k] - 0.5);
  const double a = x[0] * M_PI / 2, b = x[1] * M_PI / 2;
  return {(1 + g) * std::cos(a) * std::cos(b), (1 + g) * std::cos(a) * std::sin(b), (1 + g) * std::sin(a)};
}

const std::vector<Problem>& problems() {
  // ZDT's reference: f2 <= g <= 10 on ZDT1-2, so the box holds every point
  // (with (1.1, 1.1), 500 trials of random search in 10-D leave it empty).
  static const std::vector<Problem> all = {{"zdt1", 10, 2, {1.1, 10}, zdt1},
                                           {"zdt2", 10, 2, {1.1, 10}, zdt2},
                                           {"zdt3", 10, 2, {1.1, 10}, zdt3},
                                           {"dtlz2", 7, 3, {1.1, 1.1, 1.1}, dtlz2}};
  return all;
}

const Problem& problem(const std::string& name) {
  for (const auto& p : problems())
    if (p.name == name) return p;
  std::cerr << "moo_bench: unknown problem '" << name << "'\n";
  std::exit(2);
}

std::string objective_name(size_t k) { return "f" + std::to_string(k + 1); }

Json run(const std::string& algorithm, const Problem& p, int64_t budget, int population, int seeds) {
  tune::SearchSpace space;
  for (int k = 0; k < p.variables; ++k) space.add("x" + std::to_string(k), tune::uniform(0, 1));
  Json hypervolumes = Json::array();
  double suggest_seconds = 0;
  for (int s = 0; s < seeds; ++s) {
    tune::SearchOptions options;
    options.algorithm = algorithm;
    options.seed = 1000 + s;
    options.metric = objective_name(0);
    options.mode = "min";
    for (int k = 0; k < p.objectives; ++k) options.objectives.push_back({objective_name(k), "min"});
    if (algorithm == "nsga2") options.params = {{"population_size", population}};
    auto searcher = tune::make_searcher(options, space, budget, {});
    std::vector<Point> values;
    for (int64_t i = 0; i < budget; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const Json config = *searcher->suggest(i);
      suggest_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      Point x;
      for (int k = 0; k < p.variables; ++k) x.push_back(config["x" + std::to_string(k)].get<double>());
      values.push_back(p.f(x));
      Json result = {{"training_iteration", 1}};
      for (size_t k = 0; k < values.back().size(); ++k) result[objective_name(k)] = values.back()[k];
      searcher->on_complete({i, config, result, false});
    }
    hypervolumes.push_back(tune::hypervolume(values, p.reference));
  }
  return {{"sampler", "tune-" + algorithm},
          {"problem", p.name},
          {"budget", budget},
          {"population", population},
          {"hypervolumes", hypervolumes},
          {"suggest_ms", 1e3 * suggest_seconds / static_cast<double>(budget * seeds)}};
}

std::map<std::string, std::string> flags(int argc, char** argv, int first) {
  std::map<std::string, std::string> out;
  for (int k = first; k + 1 < argc; k += 2) out[std::string(argv[k]).substr(2)] = argv[k + 1];
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  auto f = flags(argc, argv, 2);
  auto flag = [&](const std::string& key, const std::string& fallback) {
    return f.count(key) ? f[key] : fallback;
  };
  if (mode == "list") {
    for (const auto& p : problems())
      std::cout << Json{{"problem", p.name}, {"variables", p.variables}, {"objectives", p.objectives},
                        {"reference", p.reference}}
                       .dump()
                << "\n";
  } else if (mode == "run") {
    std::cout << run(flag("algorithm", "nsga2"), problem(flag("problem", "zdt1")), std::stoll(flag("budget", "500")),
                     std::stoi(flag("population", "50")), std::stoi(flag("seeds", "10")))
                     .dump()
              << "\n";
  } else if (mode == "evaluate") {
    const Problem& p = problem(flag("problem", "zdt1"));
    for (std::string line; std::getline(std::cin, line);) std::cout << Json(p.f(Json::parse(line))).dump() << "\n";
  } else if (mode == "score") {
    for (std::string line; std::getline(std::cin, line);) {
      Json row = Json::parse(line);
      const Problem& p = problem(row["problem"]);
      Json hypervolumes = Json::array();
      for (const auto& points : row["points"]) hypervolumes.push_back(tune::hypervolume(points.get<std::vector<Point>>(), p.reference));
      row.erase("points");
      row["hypervolumes"] = hypervolumes;
      std::cout << row.dump() << "\n";
    }
  } else {
    std::cerr << "usage: moo_bench list | run --algorithm nsga2|tpe|random --problem NAME [--budget N] [--population N] "
                 "[--seeds N] | evaluate --problem NAME | score\n";
    return 2;
  }
  return 0;
}
