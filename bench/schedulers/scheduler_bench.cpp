// bench/run schedulers: scheduler cost at scale on a simulated cluster (fake
// clock), and the curves for the side-by-side with Optuna's
// SuccessiveHalvingPruner. Prints one JSON object per line.
//
//   scheduler_bench scale --trials 10000 --workers 64
//   scheduler_bench sha --trials 200 --max-t 27 --rf 3 --curves FILE   (writes the curves, prints tune's stops)
//   scheduler_bench replay --curves FILE --workers 2 --params JSON
//     (time to accuracy of ASHA on recorded curves: FILE is {"target": a,
//     "max_t": T, "trials": [[[epoch seconds, accuracy], ...], ...]}, the
//     epochs of each config in the searcher's order, as FIFO trained them;
//     bench/schedulers/time_to_accuracy.sh writes it with TTA_KEEP)
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>

#include "schedulers/scheduler.h"
#include "schedulers/simulator.h"

using tune::Json;

namespace {

// Synthetic learning curve of trial i: loss = a + b / t + small noise, with
// (a, b) drawn per trial; a step takes 1 fake second.
struct Curves {
  uint64_t seed = 1;
  double loss(int64_t trial, int64_t t) const {
    std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(trial));
    std::uniform_real_distribution<double> u(0, 1);
    const double a = u(rng), b = 0.2 + u(rng);
    std::mt19937_64 noise(seed * 7919 + static_cast<uint64_t>(trial) * 131 + static_cast<uint64_t>(t));
    return a + b / static_cast<double>(t) + 0.02 * std::normal_distribution<double>(0, 1)(noise);
  }
};

Json scale(const std::string& type, Json params, int64_t trials, int workers, int64_t max_t) {
  auto scheduler = tune::make_scheduler(type, params, "loss", "min");
  Curves curves;
  tune::SimulationOptions o;
  o.workers = workers;
  o.num_trials = trials;
  o.max_iterations = max_t;
  o.config_of = [](int64_t i) { return Json{{"i", i}, {"lr", 0.1}}; };
  o.step = [&](const Json& c, std::vector<double>&, int64_t t) { return curves.loss(c["i"].get<int64_t>(), t); };
  auto start = std::chrono::steady_clock::now();
  tune::SimulationResult r = tune::simulate(*scheduler, o);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t steps = 0;
  for (const auto& t : r.trials) steps += t.iterations;
  return {{"bench", "scale"}, {"scheduler", type}, {"params", params}, {"trials", trials}, {"workers", workers},
          {"decisions", r.decisions}, {"us_per_decision", 1e6 * r.decision_seconds / static_cast<double>(r.decisions)},
          {"decisions_per_s", static_cast<double>(r.decisions) / r.decision_seconds}, {"utilization", r.utilization()},
          {"utilization_until_last_start", r.time_with_trials_left > 0 ? 1.0 - r.idle_with_trials_left / (workers * r.time_with_trials_left) : 1.0},
          {"steps", steps}, {"makespan", r.makespan}, {"exploits", r.exploits.size()}, {"sim_wall_s", wall}};
}

// Time until the first result at or above `target` (max mode), replaying each
// config's recorded epochs (seconds, accuracy) through ASHA on `workers`
// workers; a resume costs nothing (bench/schedulers/README.md measured ~0).
Json replay(const Json& file, const Json& params, int workers) {
  const Json& trials = file.at("trials");
  const double target = file.at("target").get<double>();
  const int64_t max_t = file.at("max_t").get<int64_t>();
  if (max_t < 1 || !trials.is_array() || trials.empty()) throw std::runtime_error("needs max_t >= 1 and some trials");
  for (size_t i = 0; i < trials.size(); ++i) {
    if (!trials[i].is_array() || trials[i].size() != static_cast<size_t>(max_t))
      throw std::runtime_error("trial " + std::to_string(i) + " does not have max_t (" + std::to_string(max_t) + ") epochs");
    for (const Json& epoch : trials[i])
      if (!epoch.is_array() || epoch.size() != 2 || !epoch[0].is_number() || !epoch[1].is_number() ||
          epoch[0].get<double>() <= 0)
        throw std::runtime_error("trial " + std::to_string(i) + ": an epoch is not [seconds > 0, accuracy]");
  }
  Json p = params;
  p["max_t"] = max_t;
  auto scheduler = tune::make_scheduler("asha", p, "accuracy", "max");
  tune::SimulationOptions o;
  o.workers = workers;
  o.num_trials = static_cast<int64_t>(trials.size());
  o.max_iterations = max_t;
  o.metric = "accuracy";
  o.config_of = [](int64_t i) { return Json{{"i", i}}; };
  o.step = [&](const Json& c, std::vector<double>&, int64_t t) {
    return trials[c["i"].get<size_t>()][static_cast<size_t>(t - 1)][1].get<double>();
  };
  o.step_time = [&](int64_t i, const Json&, int64_t t) {
    return trials[static_cast<size_t>(i)][static_cast<size_t>(t - 1)][0].get<double>();
  };
  tune::SimulationResult r = tune::simulate(*scheduler, o);
  double first = -1;
  int64_t epochs = 0, best_trial = -1;
  Json results = Json::array();  // [time, trial, accuracy] of every result
  for (size_t i = 0; i < r.trials.size(); ++i) {
    const auto& t = r.trials[i];
    epochs += static_cast<int64_t>(t.metrics.size());
    for (size_t k = 0; k < t.metrics.size(); ++k) {
      results.push_back({t.times[k], i, t.metrics[k]});
      if (t.metrics[k] >= target && (first < 0 || t.times[k] < first)) first = t.times[k], best_trial = static_cast<int64_t>(i);
    }
  }
  return {{"bench", "replay"}, {"params", p}, {"workers", workers}, {"time_to_target", first},
          {"trial", best_trial}, {"epochs", epochs}, {"makespan", r.makespan}, {"results", results}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  int64_t trials = 10000, max_t = 81;
  int workers = 64;
  double rf = 3;
  std::string curves_file;
  Json params = Json::object();
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--trials") trials = std::stoll(v);
    else if (k == "--workers") workers = std::stoi(v);
    else if (k == "--max-t") max_t = std::stoll(v);
    else if (k == "--rf") rf = std::stod(v);
    else if (k == "--curves") curves_file = v;
    else if (k == "--params") params = Json::parse(v);
    else {
      std::cerr << "scheduler_bench: unknown option " << k << "\n";
      return 2;
    }
  }
  if (mode == "scale") {
    for (bool promotion : {false, true})
      for (bool backfill : {true, false})
        std::cout << scale("asha", {{"reduction_factor", rf}, {"max_t", max_t}, {"promotion", promotion}, {"backfill", backfill}},
                           trials, workers, max_t)
                         .dump()
                  << "\n";
    std::cout << scale("hyperband", {{"reduction_factor", rf}, {"max_t", max_t}}, trials, workers, max_t).dump() << "\n";
    std::cout << scale("pbt", {{"time_attr", "training_iteration"}, {"perturbation_interval", 9},
                               {"hyperparam_mutations", {{"lr", {{"loguniform", {1e-4, 1.0}}}}}}},
                       trials, workers, max_t).dump() << "\n";
    return 0;
  }
  if (mode == "sha") {
    // Sequential (one worker, as Optuna's study.optimize with n_jobs=1): the
    // same curves through tune's ASHA (Ray's rule) and, in the peer script,
    // Optuna's SuccessiveHalvingPruner.
    Curves curves;
    Json table = Json::array();
    for (int64_t i = 0; i < trials; ++i) {
      Json row = Json::array();
      for (int64_t t = 1; t <= max_t; ++t) row.push_back(curves.loss(i, t));
      table.push_back(row);
    }
    std::ofstream(curves_file) << table.dump();
    auto s = tune::make_scheduler("asha", {{"reduction_factor", rf}, {"max_t", max_t}, {"grace_period", 1}}, "loss", "min");
    Json stops = Json::array();
    double seconds = 0;
    int64_t decisions = 0;
    for (int64_t i = 0; i < trials; ++i) {
      s->on_trial_add(i, Json::object());
      int64_t stop = max_t;
      for (int64_t t = 1; t <= max_t; ++t) {
        Json result = {{"loss", table[i][t - 1]}, {"training_iteration", t}};
        auto a = std::chrono::steady_clock::now();
        tune::TrialDecision d = s->on_result(i, result);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
        decisions += 1;
        if (d.action == tune::TrialAction::kStop) {
          stop = t;
          break;
        }
      }
      stops.push_back(stop);
    }
    std::cout << Json{{"bench", "sha"}, {"stops", stops}, {"us_per_decision", 1e6 * seconds / decisions},
                      {"decisions", decisions}}.dump() << "\n";
    return 0;
  }
  if (mode == "replay") {
    std::ifstream in(curves_file);
    if (!in) {
      std::cerr << "scheduler_bench replay: cannot read --curves " << curves_file << "\n";
      return 2;
    }
    try {
      std::cout << replay(Json::parse(in), params, workers).dump() << "\n";
    } catch (const std::exception& e) {
      std::cerr << "scheduler_bench replay: " << curves_file << ": " << e.what() << "\n";
      return 2;
    }
    return 0;
  }
  std::cerr << "usage: scheduler_bench scale|sha|replay [--trials N] [--workers W] [--max-t T] [--rf R] [--curves FILE]"
               " [--params JSON]\n";
  return 2;
}
