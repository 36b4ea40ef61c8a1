// Successive-halving and HyperBand schedules against the published tables,
// both the arithmetic and what the schedulers actually do in a simulation.
#include <gtest/gtest.h>

#include <map>

#include "schedulers/scheduler.h"
#include "schedulers/simulator.h"
#include "schedulers/successive_halving.h"

namespace tune {
namespace {

std::vector<Rung> rungs(std::initializer_list<std::pair<int64_t, double>> list) {
  std::vector<Rung> out;
  for (const auto& [n, r] : list) out.push_back({n, r});
  return out;
}

TEST(SuccessiveHalving, ReductionFactor3OverResources1To81) {
  // 243 trials for 1, 81 for 3, 27 for 9, 9 for 27, 3 for 81.
  EXPECT_EQ(successive_halving_schedule(243, 1, 81, 3),
            rungs({{243, 1}, {81, 3}, {27, 9}, {9, 27}, {3, 81}}));
}

TEST(SuccessiveHalving, HyperBandBracketsEta2Over1To8) {
  // Li et al. 2017: (8@1, 4@2, 2@4, 1@8), (6@2, 3@4, 1@8), (4@4, 2@8), (4@8).
  std::vector<std::vector<Rung>> expected = {rungs({{8, 1}, {4, 2}, {2, 4}, {1, 8}}),
                                             rungs({{6, 2}, {3, 4}, {1, 8}}), rungs({{4, 4}, {2, 8}}),
                                             rungs({{4, 8}})};
  EXPECT_EQ(hyperband_brackets(8, 2), expected);
}

TEST(SuccessiveHalving, HyperBandBracketsEta3Over1To81) {
  // The paper's Table 1 (R = 81, eta = 3), n_i / r_i per bracket.
  std::vector<std::vector<Rung>> expected = {
      rungs({{81, 1}, {27, 3}, {9, 9}, {3, 27}, {1, 81}}), rungs({{34, 3}, {11, 9}, {3, 27}, {1, 81}}),
      rungs({{15, 9}, {5, 27}, {1, 81}}), rungs({{8, 27}, {2, 81}}), rungs({{5, 81}})};
  EXPECT_EQ(hyperband_brackets(81, 3), expected);
}

TEST(SuccessiveHalving, AshaMilestonesFollowRay) {
  EXPECT_EQ(asha_milestones(1, 3, 81, 0), (std::vector<double>{1, 3, 9, 27, 81}));
  EXPECT_EQ(asha_milestones(1, 3, 81, 1), (std::vector<double>{3, 9, 27, 81}));
  EXPECT_EQ(asha_milestones(2, 4, 100, 0), (std::vector<double>{2, 8, 32}));
  EXPECT_TRUE(asha_milestones(10, 3, 5, 0).empty());
}

// Trial i's loss falls with training and is lower for larger i (distinct and
// ordered the same at every iteration), so the survivors are known.
SimulationOptions ranked_curves(int workers, int64_t trials, int64_t reverse_from = -1) {
  SimulationOptions o;
  o.workers = workers;
  o.num_trials = trials;
  o.config_of = [](int64_t i) { return Json{{"i", i}}; };
  o.step = [reverse_from](const Json& c, std::vector<double>&, int64_t it) {
    const double i = c["i"].get<double>();
    const double quality = reverse_from >= 0 ? static_cast<double>((static_cast<int64_t>(i) * 7919) % 97) : i;
    return 1.0 / (1.0 + quality) + 1.0 / static_cast<double>(it);
  };
  return o;
}

// Simulated HyperBand: how many trials of each bracket reach each resource.
std::vector<std::vector<Rung>> simulate_hyperband(double max_t, double eta, int workers, bool shuffled) {
  auto scheduler = make_scheduler("hyperband", {{"max_t", max_t}, {"reduction_factor", eta}}, "loss", "min");
  std::vector<std::vector<Rung>> band = hyperband_brackets(max_t, eta);
  int64_t total = 0;
  for (const auto& b : band) total += b.front().trials;
  SimulationResult r = simulate(*scheduler, ranked_curves(workers, total, shuffled ? 0 : -1));
  std::vector<std::vector<Rung>> seen;
  int64_t first = 0;
  for (const auto& b : band) {
    std::vector<Rung> out;
    for (const Rung& rung : b) {
      int64_t reached = 0;
      for (int64_t t = first; t < first + b.front().trials; ++t) reached += r.trials[t].iterations >= rung.resource;
      out.push_back({reached, rung.resource});
    }
    first += b.front().trials;
    seen.push_back(out);
  }
  for (const auto& t : r.trials) EXPECT_EQ(t.status, "TERMINATED");
  return seen;
}

TEST(HyperBandScheduler, RunsThePublishedBracketsEta2) {
  for (int workers : {1, 3, 8}) {
    for (bool shuffled : {false, true}) {
      SCOPED_TRACE("workers " + std::to_string(workers) + (shuffled ? " shuffled" : ""));
      EXPECT_EQ(simulate_hyperband(8, 2, workers, shuffled), hyperband_brackets(8, 2));
    }
  }
}

TEST(HyperBandScheduler, RunsThePublishedBracketsEta3) {
  EXPECT_EQ(simulate_hyperband(81, 3, 5, true), hyperband_brackets(81, 3));
}

TEST(HyperBandScheduler, KeepsTheBestOfEachRung) {
  // Loss decreases with i: in bracket 0 (trials 0..7) the survivor to 8 is trial 7.
  auto scheduler = make_scheduler("hyperband", {{"max_t", 8}, {"reduction_factor", 2}}, "loss", "min");
  SimulationResult r = simulate(*scheduler, ranked_curves(2, 8));
  EXPECT_EQ(r.trials[7].iterations, 8);
  EXPECT_EQ(r.trials[6].iterations, 4);
  EXPECT_EQ(r.trials[5].iterations, 2);
  EXPECT_EQ(r.trials[0].iterations, 1);
}

TEST(HyperBandScheduler, HalvesAnIncompleteBracketWhenTheSearcherIsDone) {
  // 5 of bracket 0's 8 trials: floor(5/2) = 2 continue to 2, then 1 to 4, then 1 to 8.
  auto scheduler = make_scheduler("hyperband", {{"max_t", 8}, {"reduction_factor", 2}}, "loss", "min");
  SimulationResult r = simulate(*scheduler, ranked_curves(2, 5));
  std::map<int64_t, int> reached;
  for (const auto& t : r.trials) reached[t.iterations] += 1;
  EXPECT_EQ(reached, (std::map<int64_t, int>{{1, 3}, {2, 1}, {8, 1}}));
  EXPECT_EQ(r.trials[4].iterations, 8);
}

}  // namespace
}  // namespace tune
