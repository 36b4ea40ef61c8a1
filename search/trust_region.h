// Internal to the "bayes" searcher: the box its acquisition is maximized in.
//
// A trust region as in TuRBO (Eriksson et al. 2019, "Scalable global
// optimization via local Bayesian optimization"): a box around the incumbent,
// its side scaled per coordinate by the fitted lengthscales (normalized to
// geometric mean 1), that doubles after 3 improvements in a row, halves after
// max(4, d) trials without one, and starts over at its initial side once it is
// smaller than 1/128 of it. Its state is replayed from the observations in
// trial order after the initial design, so the box is a pure function of the
// data (the searcher's exact resume). The incumbent is the observed point with
// the lowest posterior mean (robust to a lucky noise draw). One-hot
// (categorical) coordinates are not restricted; a discrete coordinate's box
// always reaches the neighbouring values.
#pragma once

#include <cstddef>
#include <vector>

#include "search/gp.h"
#include "search/model_space.h"

namespace tune::internal {

// A box in unit-cube coordinates.
struct UnitBox {
  std::vector<double> lower, upper;
};

// The trust region for observations (x, y) in trial order (minimized), of
// which the first `design` are the initial design. `model` holds exactly those
// observations with hyperparameters `hyper`.
UnitBox trust_region(const ModelSpace& space, const std::vector<std::vector<double>>& x,
                     const std::vector<double>& y, size_t design, const GaussianProcess& model,
                     const GpHyperparameters& hyper);

// The unit position of the next value of discrete variable v below
// (direction -1) or above (+1) the value at u; u itself at the ends.
double discrete_neighbour(const ModelSpace& space, size_t v, double u, int direction);

}  // namespace tune::internal
