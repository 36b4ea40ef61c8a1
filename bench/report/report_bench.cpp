// bench/run report: the HTML report of a large sweep.
//
//   report_bench make DIR [--trials N] [--results R]
//       writes a store DIR/tune.db through the Store API: one experiment
//       "bench-report" of N trials x R results (a FIFO sweep over 4
//       parameters, learning curves that converge to a function of them)
//   report_bench time DIR OUTPUT [--repeat K]
//       writes the report K times; prints one JSON line: seconds and
//       cpu_seconds (each run), bytes, trials
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "storage/store.h"
#include "tuner/report/report.h"

namespace {

using Json = nlohmann::json;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int make(const std::string& dir, int trials, int results) {
  auto store = tune::Store::open(dir);
  tune::ExperimentRecord e;
  e.name = "bench-report";
  e.status = "FINISHED";
  e.metric = "loss";
  e.mode = "min";
  e.spec = {{"scheduler", {{"type", "fifo"}, {"params", Json::object()}}},
            {"search", {{"algorithm", "random"}}},
            {"resources", {{"workers", 1}, {"cpus_per_worker", 1}}}};
  const double start = 1.7e9;
  e.created_at = start;
  e.updated_at = start + trials * results * 0.01 / 8;
  const int64_t id = store->create_experiment(e);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> gauss(0, 1);
  const std::vector<std::string> optimizers = {"sgd", "adam", "rmsprop"};
  const int lanes = 8;
  std::vector<double> lane_free(lanes, start);
  for (int t = 0; t < trials; ++t) {
    const double lr = std::pow(10, -5 + 4 * u(rng)), dropout = 0.5 * u(rng);
    const int width = 32 << static_cast<int>(u(rng) * 4);
    const std::string optimizer = optimizers[static_cast<size_t>(u(rng) * 3)];
    const Json config = {{"lr", lr}, {"width", width}, {"dropout", dropout}, {"optimizer", optimizer}};
    const double floor = 0.1 + std::pow(std::log10(lr) + 2.5, 2) * 0.05 + dropout * 0.2 + (optimizer == "sgd") * 0.1;
    tune::Transaction txn(*store);
    const int64_t row = store->add_trial(id, t, config);
    const int lane = t % lanes;
    double now = lane_free[lane];
    store->set_trial_status(row, tune::kRunning, now);
    for (int i = 1; i <= results; ++i) {
      now += 0.01;
      const double loss = floor + 2.0 / i + 0.02 * gauss(rng);
      store->add_result(row, i, 1, {{"loss", loss}, {"accuracy", 1 - loss / 3}, {"training_iteration", i},
                                    {"time_this_iter_s", 0.01}, {"time_total_s", i * 0.01}, {"timestamp", now}}, now);
    }
    store->set_trial_status(row, tune::kTerminated, now);
    lane_free[lane] = now;
    txn.commit();
  }
  store->set_experiment_status(id, "FINISHED");
  return 0;
}

int time_report(const std::string& dir, const std::string& output, int repeat) {
  Json seconds = Json::array(), cpu_seconds = Json::array();
  for (int k = 0; k < repeat; ++k) {
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    tune::write_report(dir, {"bench-report"}, output);
    seconds.push_back(seconds_since(start));
    cpu_seconds.push_back(static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
  }
  auto store = tune::Store::open(dir, true);
  const auto experiment = store->find_experiment("bench-report");
  std::cout << Json{{"seconds", seconds}, {"cpu_seconds", cpu_seconds}, {"bytes", std::filesystem::file_size(output)},
                    {"trials", store->trials(experiment->id).size()}}
                   .dump()
            << "\n";
  return 0;
}

int option(const std::vector<std::string>& args, const std::string& name, int fallback) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == name) return std::stoi(args[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 2 && args[0] == "make") {
    return make(args[1], option(args, "--trials", 10000), option(args, "--results", 100));
  }
  if (args.size() >= 3 && args[0] == "time") return time_report(args[1], args[2], option(args, "--repeat", 3));
  std::cerr << "usage: report_bench make DIR [--trials N] [--results R] | time DIR OUTPUT [--repeat K]\n";
  return 2;
}
