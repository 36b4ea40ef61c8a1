// Successive-halving arithmetic shared by ASHA and HyperBand, public so the
// schedules can be printed and checked against the published tables.
//
//   successive_halving_schedule(243, 1, 81, 3)  ->  243@1, 81@3, 27@9, 9@27, 3@81
//   hyperband_brackets(8, 2)  ->  (8@1 4@2 2@4 1@8) (6@2 3@4 1@8) (4@4 2@8) (4@8)
#pragma once

#include <cstdint>
#include <vector>

namespace tune {

struct Rung {
  int64_t trials = 0;    // trials that run to this rung
  double resource = 0;   // the time attribute they reach (iterations, seconds)
  bool operator==(const Rung& o) const { return trials == o.trials && resource == o.resource; }
};

// Synchronous successive halving (Jamieson & Talwalkar 2016): n trials start
// with resource r; after each rung the best floor(n_i / eta) continue with eta
// times the resource, while the resource stays <= max_resource.
std::vector<Rung> successive_halving_schedule(int64_t n, double r, double max_resource, double eta);

// HyperBand (Li et al. 2017), R = max_resource, s_max = floor(log_eta R):
// bracket s = s_max..0 starts n = ceil((s_max + 1) / (s + 1) * eta^s) trials
// with r = R * eta^-s and halves them up to R. Brackets in that order.
std::vector<std::vector<Rung>> hyperband_brackets(double max_resource, double eta);

// ASHA's rung milestones for bracket s (Ray's AsyncHyperBand): grace * eta^(k+s)
// for k = 0, 1, ... while <= max_t (with a relative tolerance of 1e-9).
std::vector<double> asha_milestones(double grace, double eta, double max_t, int bracket);

}  // namespace tune
