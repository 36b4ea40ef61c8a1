// The "random" and "grid" searchers: Ray's BasicVariantGenerator.
#include <algorithm>
#include <limits>
#include <random>

#include "search/searcher.h"
#include "base/error.h"

namespace tune {
namespace {

class BasicVariantSearcher : public Searcher {
 public:
  BasicVariantSearcher(uint64_t seed, const SearchSpace& space, int64_t num_samples, std::vector<Json> points)
      : seed_(seed),
        space_(space),
        grid_size_(space.grid_size()),
        points_(std::move(points)),
        total_(std::max<int64_t>(num_samples * grid_size_, static_cast<int64_t>(points_.size()))) {}

  std::optional<Json> suggest(int64_t trial_index) override {
    if (trial_index < 0 || trial_index >= total_) return std::nullopt;
    suggested_ = std::max(suggested_, trial_index + 1);
    // A fresh generator per trial makes config i a pure function of (seed, i).
    // Its seed is (seed, i) mixed by SplitMix64's finalizer. SplitMix64 rather
    // than std::mt19937_64, whose 312 words cost ~13k instructions to fill
    // and twist before the first draw (a std::seed_seq filling them, before
    // that, 46k): a trivial trial costs the driver ~190k in all.
    SplitMix64 rng(SplitMix64::finalize(seed_ ^ SplitMix64::finalize(static_cast<uint64_t>(trial_index) +
                                                                      0x9e3779b97f4a7c15ULL)));
    const int64_t grid_index = trial_index % grid_size_;
    if (trial_index < static_cast<int64_t>(points_.size()))
      return space_.resolve(grid_index, rng, points_[static_cast<size_t>(trial_index)]);
    return space_.resolve(grid_index, rng);
  }

  int64_t total() const override { return total_; }

  void restore(int64_t suggested, const std::vector<Observation>& /*observations*/) override {
    suggested_ = suggested;
  }

 private:
  uint64_t seed_;
  SearchSpace space_;
  int64_t grid_size_;
  std::vector<Json> points_;
  int64_t total_;
  int64_t suggested_ = 0;  // bookkeeping only: suggest() does not depend on it
};

}  // namespace

namespace internal {
std::unique_ptr<Searcher> make_basic_variant_searcher(uint64_t seed, const SearchSpace& space, int64_t num_samples,
                                                      const std::vector<Json>& points_to_evaluate) {
  return std::make_unique<BasicVariantSearcher>(seed, space, num_samples, points_to_evaluate);
}
}  // namespace internal

}  // namespace tune
