// Internal: the whole-experiment reads behind Store::events, result_columns
// and for_each_result, on the SQLite connection (sqlite_store.cpp delegates).
#pragma once

#include <SQLiteCpp/Database.h>

#include "storage/store.h"

namespace tune::storage_internal {

std::vector<EventRecord> read_events(SQLite::Database& db, int64_t experiment_id);
// Events of one kind after event `after_id`, in order.
std::vector<EventRecord> read_events_after(SQLite::Database& db, int64_t experiment_id, const std::string& kind,
                                           int64_t after_id, int64_t* newest);
ResultColumns read_result_columns(SQLite::Database& db, int64_t experiment_id,
                                  const std::vector<std::string>& keys);
void visit_results(SQLite::Database& db, int64_t experiment_id,
                   const std::function<void(const ResultRecord&)>& visit);

}  // namespace tune::storage_internal
