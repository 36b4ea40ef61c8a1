// Standard optimization test functions (for the built-in trainables, tests and
// benchmarks). Known minima from Surjanovic & Bingham's Virtual Library of
// Simulation Experiments.
#pragma once

#include <array>
#include <vector>

namespace tune::test_functions {

// Branin on x0 in [-5, 10], x1 in [0, 15]; global minimum 0.397887 at
// (-pi, 12.275), (pi, 2.275), (9.42478, 2.475).
double branin(double x0, double x1);
inline constexpr double kBraninMinimum = 0.39788735772973816;

// Hartmann6 on [0, 1]^6; global minimum -3.32237 at
// (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573).
double hartmann6(const std::array<double, 6>& x);
inline constexpr double kHartmann6Minimum = -3.322368011391339;

// Shekel with m = 10 on [0, 10]^4: -sum_i 1 / (|x - a_i|^2 + c_i), ten
// narrow holes (c_i = 0.1 .. 0.7) on a nearly flat plateau; global minimum
// -10.5364 at ~(4, 4, 4, 4) (the published 4-digit point; the exact minimizer
// is kShekel10Argmin).
double shekel10(const std::array<double, 4>& x);
inline constexpr double kShekel10Minimum = -10.536409816692041;
inline constexpr std::array<double, 4> kShekel10Argmin = {4.0007465315920445, 4.00059293413853, 3.9996633980403233,
                                                          3.9995098005868086};

// De Jong's fifth function (Shekel's foxholes) on [-65.536, 65.536]^2: 25
// holes on a 16-spaced grid, hole j (1..25) bottoming out near j, on a plateau
// near 500. Global minimum 0.998004 near (-31.97833, -31.97833).
double foxholes(double x0, double x1);
inline constexpr double kFoxholesMinimum = 0.998003837794449;

// ZDT1 (Zitzler, Deb & Thiele 2000), two objectives to minimize of n >= 2
// variables in [0, 1]: f1 = x0, g = 1 + 9 * mean(x1..), f2 = g * (1 -
// sqrt(f1 / g)). The Pareto front is f2 = 1 - sqrt(f1), f1 in [0, 1], where
// every variable but x0 is 0.
std::array<double, 2> zdt1(const std::vector<double>& x);

}  // namespace tune::test_functions
