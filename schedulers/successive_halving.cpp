#include "schedulers/successive_halving.h"

#include <cmath>

namespace tune {

namespace {
bool within(double x, double limit) { return x <= limit * (1 + 1e-9); }
}  // namespace

std::vector<Rung> successive_halving_schedule(int64_t n, double r, double max_resource, double eta) {
  std::vector<Rung> rungs;
  for (double resource = r; n >= 1 && within(resource, max_resource); resource *= eta) {
    rungs.push_back({n, resource});
    n = static_cast<int64_t>(std::floor(static_cast<double>(n) / eta + 1e-9));
  }
  return rungs;
}

std::vector<std::vector<Rung>> hyperband_brackets(double max_resource, double eta) {
  int s_max = 0;
  while (within(std::pow(eta, s_max + 1), max_resource)) ++s_max;
  std::vector<std::vector<Rung>> brackets;
  for (int s = s_max; s >= 0; --s) {
    const double eta_s = std::pow(eta, s);
    const auto n = static_cast<int64_t>(std::ceil((s_max + 1.0) / (s + 1.0) * eta_s - 1e-9));
    brackets.push_back(successive_halving_schedule(n, max_resource / eta_s, max_resource, eta));
  }
  return brackets;
}

std::vector<double> asha_milestones(double grace, double eta, double max_t, int bracket) {
  std::vector<double> milestones;
  for (double m = grace * std::pow(eta, bracket); within(m, max_t); m *= eta) milestones.push_back(m);
  return milestones;
}

}  // namespace tune
