// Internal: the whole-experiment reads behind Store::events, result_columns
// and for_each_result, on the SQLite connection (sqlite_store.cpp delegates).
#pragma once

#include <SQLiteCpp/Database.h>

#include "storage/store.h"

namespace tune::storage_internal {

std::vector<EventRecord> read_events(SQLite::Database& db, int64_t experiment_id);
ResultColumns read_result_columns(SQLite::Database& db, int64_t experiment_id,
                                  const std::vector<std::string>& keys);
void visit_results(SQLite::Database& db, int64_t experiment_id,
                   const std::function<void(const ResultRecord&)>& visit);

}  // namespace tune::storage_internal
