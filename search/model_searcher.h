// Internal: what the model-based searchers (bayes, tpe, nsga2) share: the
// points_to_evaluate first, then the model's proposals; the configs handed out
// and the trials finished, restored from the store on resume.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "search/model_space.h"
#include "search/searcher.h"

namespace tune::internal {

class ModelSearcher : public Searcher {
 public:
  // `algorithm` names the searcher in messages ("bayes", "tpe", "nsga2").
  ModelSearcher(const SearchOptions& options, uint64_t seed, const SearchSpace& space, std::vector<Json> points,
                int64_t total, const std::string& algorithm);

  // Trial i: points_to_evaluate[i] (missing keys sampled from (seed, i)) while
  // there are points, then propose(i).
  std::optional<Json> suggest(int64_t i) final;
  void on_complete(const Observation& o) final;
  int64_t total() const final { return total_; }
  void restore(int64_t suggested, const std::vector<Observation>& observations) final;

 protected:
  // The model's config for trial i >= points().size().
  virtual Json propose(int64_t i) = 0;

  // Finished trials in trial order; one of them; whether trial i finished.
  std::vector<Observation> finished() const;
  const Observation& finished_at(int64_t index) const { return finished_.at(index); }
  bool is_finished(int64_t index) const { return finished_.count(index) > 0; }
  // The configs of trials handed out and not finished, except trial `except`.
  std::vector<std::pair<int64_t, const Json*>> running(int64_t except) const;

  const std::vector<Json>& points() const { return points_; }

  uint64_t seed_;
  std::string metric_, mode_;
  ModelSpace space_;
  int64_t total_;

 private:
  std::vector<Json> points_;
  std::map<int64_t, Json> configs_;          // every suggested (or restored) config
  std::map<int64_t, Observation> finished_;  // finished trials
};

}  // namespace tune::internal
