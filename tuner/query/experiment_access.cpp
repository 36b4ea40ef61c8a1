#include "tuner/query/experiment_access.h"

#include <vector>

#include "base/error.h"
#include "base/names.h"

namespace tune::internal {

std::unique_ptr<Store> open_store(const std::string& storage) {
  if (!Store::exists(storage)) {
    throw NotFoundError("no tune store at " + storage + " (run a sweep first, or pass --storage DIR)");
  }
  return Store::open(storage, /*read_only=*/true);
}

ExperimentRecord find_experiment(Store& store, const std::string& storage, const std::string& name) {
  auto experiment = store.find_experiment(name);
  if (!experiment) {
    std::vector<std::string> names;
    for (const auto& e : store.experiments()) names.push_back(e.name);
    const std::string hint = closest_match(name, names);
    throw NotFoundError("no experiment named '" + name + "' in " + storage +
                        (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
  }
  return *experiment;
}

}  // namespace tune::internal
