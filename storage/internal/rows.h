// Row <-> record helpers shared by the SQLite store.
#pragma once

#include <SQLiteCpp/Column.h>
#include <SQLiteCpp/Statement.h>

#include <functional>
#include <string>

#include "storage/store.h"

namespace tune::storage_internal {

double now();  // unix seconds

// Compact (dump_json, base/json.h); invalid UTF-8 is replaced rather than
// failing a whole batch. NaN and infinities become null (JSON has no
// spelling for them).
std::string dump(const Json& j);

// One use of a cached statement: a clean start, and reset on the way out
// (even on throw), since a SELECT left mid-step keeps a read snapshot open.
class Use {
 public:
  explicit Use(SQLite::Statement& s) : s_(s) {
    s_.tryReset();
    s_.clearBindings();
  }
  ~Use() { s_.tryReset(); }
  SQLite::Statement* operator->() { return &s_; }
  SQLite::Statement& operator*() { return s_; }
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;

 private:
  SQLite::Statement& s_;
};

// Binds SQL NULL for a null Json, else its dump.
void bind_json_or_null(SQLite::Statement& s, int index, const Json& j);
// SQL NULL reads back as a null Json; unparsable text throws tune::Error.
Json json_column(const SQLite::Column& c, const char* table);
// SQL NULL reads back as 0.
double time_column(const SQLite::Column& c);

// Read the current row of the experiment / trial SELECTs in sqlite_store.cpp.
ExperimentRecord read_experiment(SQLite::Statement& s);
TrialRecord read_trial(SQLite::Statement& s);

// Calls emit(dotted_name, leaf) for each leaf of an object config. Empty
// objects and arrays are leaves, so nothing in the config is invisible to SQL.
void flatten(const Json& config, const std::function<void(const std::string&, const Json&)>& emit);

}  // namespace tune::storage_internal
