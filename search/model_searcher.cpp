#include "search/model_searcher.h"

namespace tune::internal {

ModelSearcher::ModelSearcher(const SearchOptions& options, uint64_t seed, const SearchSpace& space,
                             std::vector<Json> points, int64_t total, const std::string& algorithm)
    : seed_(seed),
      metric_(options.metric),
      mode_(options.mode),
      space_(space, algorithm),
      total_(total),
      points_(std::move(points)) {}

std::optional<Json> ModelSearcher::suggest(int64_t i) {
  if (i < 0 || i >= total_) return std::nullopt;
  Json config;
  if (i < static_cast<int64_t>(points_.size())) {
    auto rng = make_rng(seed_, 1, static_cast<uint64_t>(i));
    config = space_.space().resolve(0, rng, points_[static_cast<size_t>(i)]);
  } else {
    config = propose(i);
  }
  configs_[i] = config;
  return config;
}

void ModelSearcher::on_complete(const Observation& o) {
  finished_[o.trial_index] = o;
  configs_[o.trial_index] = o.config;
}

void ModelSearcher::restore(int64_t /*suggested*/, const std::vector<Observation>& observations) {
  for (const auto& o : observations) {
    configs_[o.trial_index] = o.config;
    if (!o.running) finished_[o.trial_index] = o;
  }
}

std::vector<Observation> ModelSearcher::finished() const {
  std::vector<Observation> out;
  out.reserve(finished_.size());
  for (const auto& [index, o] : finished_) out.push_back(o);
  return out;
}

std::vector<std::pair<int64_t, const Json*>> ModelSearcher::running(int64_t except) const {
  std::vector<std::pair<int64_t, const Json*>> out;
  for (const auto& [index, config] : configs_)
    if (!finished_.count(index) && index != except) out.emplace_back(index, &config);
  return out;
}

}  // namespace tune::internal
