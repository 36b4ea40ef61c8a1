// Standard optimization test functions (for the built-in trainables, tests and
// benchmarks). Known minima from Surjanovic & Bingham's Virtual Library of
// Simulation Experiments.
#pragma once

#include <array>

namespace tune::test_functions {

// Branin on x0 in [-5, 10], x1 in [0, 15]; global minimum 0.397887 at
// (-pi, 12.275), (pi, 2.275), (9.42478, 2.475).
double branin(double x0, double x1);
inline constexpr double kBraninMinimum = 0.39788735772973816;

// Hartmann6 on [0, 1]^6; global minimum -3.32237 at
// (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573).
double hartmann6(const std::array<double, 6>& x);
inline constexpr double kHartmann6Minimum = -3.322368011391339;

}  // namespace tune::test_functions
