// Pareto dominance for multi-objective search: non-dominated sorting and
// crowding distance (NSGA-II, Deb et al. 2002) and the hypervolume indicator.
// Every vector here is oriented for minimization (negate a "max" objective).
#pragma once

#include <cstddef>
#include <vector>

namespace tune {

// a dominates b: no worse in every objective and better in at least one.
bool dominates(const std::vector<double>& a, const std::vector<double>& b);

// Non-dominated sorting: fronts[0] holds the indices of the points no other
// point dominates (the Pareto front), fronts[1] those dominated only by
// fronts[0], and so on. Every index appears once; indices ascend in a front.
// Equal points share a front.
std::vector<std::vector<size_t>> non_dominated_fronts(const std::vector<std::vector<double>>& points);

// The leading fronts of non_dominated_fronts, as many as it takes to hold at
// least `count` points (all of them when there are fewer): front by front, so
// much cheaper when only the best few points are wanted.
std::vector<std::vector<size_t>> first_fronts(const std::vector<std::vector<double>>& points, size_t count);

// The crowding distance of each member of `front` (indices into points), in
// the order of `front`: the sum over objectives of the gap between its
// neighbours divided by the front's range; the smallest and the largest in
// each objective get +infinity (among tied members, the first in `front`). An
// objective in which the whole front is equal adds nothing (as in Optuna 3.1),
// so a one-member front gets 0.
std::vector<double> crowding_distance(const std::vector<std::vector<double>>& points,
                                      const std::vector<size_t>& front);

// The hypervolume the points dominate inside the box bounded by `reference`
// (the volume of the union of [p, reference] over points p <= reference;
// points not strictly below the reference in every objective add nothing).
// Exact; O(n log n) in 2-D, slicing over the first objective above that.
double hypervolume(const std::vector<std::vector<double>>& points, const std::vector<double>& reference);

// Each point's exclusive contribution: the hypervolume of all the points
// minus that of all but this one (0 for a dominated or duplicated point).
std::vector<double> hypervolume_contributions(const std::vector<std::vector<double>>& points,
                                              const std::vector<double>& reference);

// Greedy hypervolume subset selection (Guerreiro, Fonseca, Paquete 2016):
// picks min(k, points) of the points, each time the one that adds the most
// hypervolume to those already picked (ties to the lower index), as Optuna
// 3.1's _solve_hssp. Returns the indices in the order picked.
std::vector<size_t> greedy_hypervolume_subset(const std::vector<std::vector<double>>& points, size_t k,
                                              const std::vector<double>& reference);

}  // namespace tune
