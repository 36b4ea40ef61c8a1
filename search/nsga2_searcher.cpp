// The "nsga2" searcher: NSGA-II (Deb et al. 2002) with the semantics of
// Optuna 3.1's NSGAIISampler (docs/SEARCH.md): generations of
// population_size trials, the first random; each later generation's parents
// are the elite of the previous parents and the previous generation's
// finished trials (non-dominated rank, then crowding distance); a child is
// two tournament winners' uniform crossover, then per-variable mutation.
//
// Trial i belongs to generation i / population_size (points_to_evaluate
// included), a fixed schedule rather than Optuna's "a generation is complete
// once population_size of its trials completed": a suggestion then depends
// only on the trial index and the finished trials, so resume is exact, and
// under concurrency a generation is bred from whatever of the previous one
// has finished.
#include <algorithm>
#include <cmath>
#include <limits>

#include "search/model_searcher.h"
#include "search/pareto.h"
#include "base/error.h"

namespace tune::internal {
namespace {

const std::vector<std::string> kNsga2Keys = {"population_size", "mutation_prob", "crossover_prob", "swapping_prob"};

// Whether a variable can take more than one value (Optuna's mutation rate
// counts only those).
bool varies(const ModelVariable& v) {
  switch (v.type) {
    case ModelVariable::Type::kCategorical: return v.choices.size() > 1;
    case ModelVariable::Type::kDiscrete: return v.kmax > v.kmin;
    case ModelVariable::Type::kContinuous: return v.high > v.low;
  }
  return false;
}

class Nsga2Searcher : public ModelSearcher {
 public:
  Nsga2Searcher(const SearchOptions& options, uint64_t seed, const SearchSpace& space, std::vector<Json> points,
                int64_t total)
      : ModelSearcher(options, seed, space, std::move(points), total, "nsga2"),
        objectives_(options.objectives.empty() ? std::vector<Objective>{{options.metric, options.mode}}
                                               : options.objectives) {
    const OptionReader p = search_option_reader(options.params, kNsga2Keys, "nsga2");
    population_ = p.integer_in("population_size", 50, 2, 1000000);
    const auto& variables = space_.variables();
    const auto n_varying = std::count_if(variables.begin(), variables.end(), varies);
    mutation_prob_ = p.number_in("mutation_prob", 1.0 / static_cast<double>(std::max<std::ptrdiff_t>(n_varying, 1)),
                                 0.0, 1.0);
    crossover_prob_ = p.number_in("crossover_prob", 0.9, 0.0, 1.0);
    swapping_prob_ = p.number_in("swapping_prob", 0.5, 0.0, 1.0);
  }

 private:
  // A feasible finished trial: its objectives (minimized) and its variables'
  // internal values (NaN where its config lacks a valid value).
  struct Member {
    int64_t index = 0;
    std::vector<double> objectives, internal;
  };
  // The parents of one generation with their rank and crowding distance
  // among themselves, and how many finished trials of the previous
  // generation they were chosen from (the finished set only grows, so an
  // equal count means the same trials).
  struct Parents {
    std::vector<Member> members;
    std::vector<size_t> rank;
    std::vector<double> crowding;
    size_t finished_before = 0;
  };

  Json propose(int64_t i) override {
    auto rng = make_rng(seed_, 5, static_cast<uint64_t>(i));
    const Parents* parents = parents_of(i / population_);
    if (!parents || parents->members.size() < 2) return space_.space().resolve(0, rng);

    const Json fresh = space_.space().resolve(0, rng);  // the values mutated variables take
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const size_t first = tournament(*parents, rng, parents->members.size());
    const size_t second = tournament(*parents, rng, first);
    std::vector<double> child = parents->members[first].internal;
    if (unit(rng) < crossover_prob_)
      for (size_t v = 0; v < child.size(); ++v)
        if (unit(rng) < swapping_prob_) child[v] = parents->members[second].internal[v];
    for (size_t v = 0; v < child.size(); ++v)
      if (unit(rng) < mutation_prob_ || std::isnan(child[v])) child[v] = space_.internal(v, fresh).value();
    return space_.config_from_internal(child);
  }

  // Binary tournament among the parents other than `exclude`: lower rank
  // wins, then larger crowding distance, then the first drawn.
  size_t tournament(const Parents& parents, std::mt19937_64& rng, size_t exclude) const {
    const size_t n = parents.members.size() - (exclude < parents.members.size() ? 1 : 0);
    std::uniform_int_distribution<size_t> pick(0, n - 1);
    auto draw = [&] {
      const size_t k = pick(rng);
      return k >= exclude ? k + 1 : k;
    };
    const size_t a = draw(), b = draw();
    if (parents.rank[a] != parents.rank[b]) return parents.rank[a] < parents.rank[b] ? a : b;
    return parents.crowding[b] > parents.crowding[a] ? b : a;
  }

  // The parents of generation g (none for generation 0): the elite of the
  // parents of g - 1 and the feasible finished trials of generation g - 1.
  // Cached per generation; a generation is chosen again when a trial of an
  // earlier one finished since.
  const Parents* parents_of(int64_t g) {
    bool stale = false;
    for (int64_t h = 1; h <= g; ++h) {
      std::vector<int64_t> done;
      for (int64_t index = (h - 1) * population_; index < h * population_; ++index)
        if (is_finished(index)) done.push_back(index);
      const auto slot = static_cast<size_t>(h - 1);
      if (!stale && slot < cache_.size() && cache_[slot].finished_before == done.size()) continue;
      stale = true;
      std::vector<Member> pool = slot > 0 ? cache_[slot - 1].members : std::vector<Member>{};
      for (int64_t index : done)
        if (auto m = member(index)) pool.push_back(std::move(*m));
      Parents parents = select_elite(std::move(pool));
      parents.finished_before = done.size();
      if (slot < cache_.size()) cache_[slot] = std::move(parents);
      else cache_.push_back(std::move(parents));
    }
    return g > 0 ? &cache_[static_cast<size_t>(g - 1)] : nullptr;
  }

  std::optional<Member> member(int64_t index) const {
    const Observation& o = finished_at(index);
    Member m;
    m.index = index;
    for (const Objective& objective : objectives_) {
      auto loss = observed_loss(o, objective.metric, objective.mode);
      if (!loss) return std::nullopt;
      m.objectives.push_back(*loss);
    }
    for (size_t v = 0; v < space_.variables().size(); ++v) {
      auto x = space_.internal(v, o.config);
      m.internal.push_back(x ? space_.snap(v, *x) : std::numeric_limits<double>::quiet_NaN());
    }
    return m;
  }

  // NSGA-II's elitism: whole fronts while they fit, then the members of the
  // front that does not fit with the largest crowding distance. Ties go to
  // the lower trial index, so the choice depends on the set, not its order.
  Parents select_elite(std::vector<Member> pool) const {
    std::sort(pool.begin(), pool.end(), [](const Member& a, const Member& b) { return a.index < b.index; });
    std::vector<size_t> chosen;
    const auto pool_points = objectives_of(pool);
    const auto limit = static_cast<size_t>(population_);
    for (const auto& front : non_dominated_fronts(pool_points)) {
      if (chosen.size() + front.size() <= limit) {
        chosen.insert(chosen.end(), front.begin(), front.end());
        continue;
      }
      const std::vector<double> distance = crowding_distance(pool_points, front);
      std::vector<size_t> order(front.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return distance[a] > distance[b]; });
      for (size_t k = 0; chosen.size() < limit; ++k) chosen.push_back(front[order[k]]);
      break;
    }
    std::sort(chosen.begin(), chosen.end());
    Parents parents;
    for (size_t k : chosen) parents.members.push_back(std::move(pool[k]));
    // Rank and crowding among the parents themselves, for the tournaments.
    const auto points = objectives_of(parents.members);
    parents.rank.assign(points.size(), 0);
    parents.crowding.assign(points.size(), 0.0);
    const auto parent_fronts = non_dominated_fronts(points);
    for (size_t r = 0; r < parent_fronts.size(); ++r) {
      const std::vector<double> distance = crowding_distance(points, parent_fronts[r]);
      for (size_t k = 0; k < parent_fronts[r].size(); ++k) {
        parents.rank[parent_fronts[r][k]] = r;
        parents.crowding[parent_fronts[r][k]] = distance[k];
      }
    }
    return parents;
  }

  static std::vector<std::vector<double>> objectives_of(const std::vector<Member>& members) {
    std::vector<std::vector<double>> out;
    out.reserve(members.size());
    for (const Member& m : members) out.push_back(m.objectives);
    return out;
  }

  std::vector<Objective> objectives_;
  int64_t population_ = 50;
  double mutation_prob_ = 0, crossover_prob_ = 0.9, swapping_prob_ = 0.5;
  std::vector<Parents> cache_;  // cache_[g - 1]: the parents of generation g
};

}  // namespace

std::unique_ptr<Searcher> make_nsga2_searcher(const SearchOptions& options, uint64_t seed, const SearchSpace& space,
                                              const std::vector<Json>& points_to_evaluate, int64_t total) {
  return std::make_unique<Nsga2Searcher>(options, seed, space, points_to_evaluate, total);
}

}  // namespace tune::internal
