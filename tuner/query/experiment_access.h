// Internal: opening a store and finding an experiment in it for reading, as
// every reader does (the CLI's queries, `tune results`, the HTML report,
// ResultGrid): one wording for "no store here" and "no such experiment".
//
//   auto store = open_store("./tune_results");            // read-only, WAL: safe while a sweep runs
//   ExperimentRecord e = find_experiment(*store, "./tune_results", "branin-random");
#pragma once

#include <memory>
#include <string>

#include "storage/store.h"

namespace tune::internal {

// The store in `storage`, read-only. Throws NotFoundError when there is none.
std::unique_ptr<Store> open_store(const std::string& storage);
// The experiment `name`. Throws NotFoundError (with a did-you-mean over the
// store's experiments) when it is not there.
ExperimentRecord find_experiment(Store& store, const std::string& storage, const std::string& name);

}  // namespace tune::internal
