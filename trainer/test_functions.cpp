#include "trainer/test_functions.h"

#include <cmath>

namespace tune::test_functions {

double branin(double x0, double x1) {
  const double a = 1, b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, r = 6, s = 10,
               t = 1 / (8 * M_PI);
  const double u = x1 - b * x0 * x0 + c * x0 - r;
  return a * u * u + s * (1 - t) * std::cos(x0) + s;
}

double shekel10(const std::array<double, 4>& x) {
  static const double a[10][4] = {{4, 4, 4, 4}, {1, 1, 1, 1}, {8, 8, 8, 8}, {6, 6, 6, 6}, {3, 7, 3, 7},
                                  {2, 9, 2, 9}, {5, 5, 3, 3}, {8, 1, 8, 1}, {6, 2, 6, 2}, {7, 3.6, 7, 3.6}};
  static const double c[10] = {0.1, 0.2, 0.2, 0.4, 0.4, 0.6, 0.3, 0.7, 0.5, 0.5};
  double s = 0;
  for (int i = 0; i < 10; ++i) {
    double d = c[i];
    for (size_t j = 0; j < 4; ++j) d += (x[j] - a[i][j]) * (x[j] - a[i][j]);
    s -= 1 / d;
  }
  return s;
}

double hartmann6(const std::array<double, 6>& x) {
  static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
  static const double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                 {0.05, 10, 17, 0.1, 8, 14},
                                 {3, 3.5, 1.7, 10, 17, 8},
                                 {17, 8, 0.05, 10, 0.1, 14}};
  static const double P[4][6] = {{1312, 1696, 5569, 124, 8283, 5886},
                                 {2329, 4135, 8307, 3736, 1004, 9991},
                                 {2348, 1451, 3522, 2883, 3047, 6650},
                                 {4047, 8828, 8732, 5743, 1091, 381}};
  double total = 0;
  for (int i = 0; i < 4; ++i) {
    double inner = 0;
    for (int j = 0; j < 6; ++j) {
      const double d = x[j] - P[i][j] * 1e-4;
      inner += A[i][j] * d * d;
    }
    total += alpha[i] * std::exp(-inner);
  }
  return -total;
}

double foxholes(double x0, double x1) {
  static const double grid[5] = {-32, -16, 0, 16, 32};
  double s = 0.002;
  for (int j = 0; j < 25; ++j) {
    const double d0 = x0 - grid[j % 5], d1 = x1 - grid[j / 5];
    s += 1 / (j + 1 + std::pow(d0, 6) + std::pow(d1, 6));
  }
  return 1 / s;
}

std::array<double, 2> zdt1(const std::vector<double>& x) {
  double rest = 0;
  for (size_t i = 1; i < x.size(); ++i) rest += x[i];
  const double f1 = x.at(0);
  const double g = 1 + 9 * rest / static_cast<double>(x.size() - 1);
  return {f1, g * (1 - std::sqrt(f1 / g))};
}

}  // namespace tune::test_functions
