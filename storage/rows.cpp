#include "storage/internal/rows.h"

#include <chrono>

#include "base/error.h"
#include "base/json.h"

namespace tune::storage_internal {

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string dump(const Json& j) { return dump_json(j); }

void bind_json_or_null(SQLite::Statement& s, int index, const Json& j) {
  if (j.is_null()) {
    s.bind(index);
  } else {
    s.bind(index, dump(j));
  }
}

Json json_column(const SQLite::Column& c, const char* table) {
  if (c.isNull()) return Json();
  const char* text = c.getText();
  std::string why;
  Json j = parse_json(std::string_view(text, static_cast<size_t>(c.getBytes())), kMaxJsonDepth, &why);
  if (j.is_discarded()) {
    throw Error(std::string("store: malformed JSON in ") + table + "." + c.getName() + " (" + why + ")");
  }
  return j;
}

double time_column(const SQLite::Column& c) { return c.isNull() ? 0 : c.getDouble(); }

ExperimentRecord read_experiment(SQLite::Statement& s) {
  ExperimentRecord e;
  e.id = s.getColumn(0).getInt64();
  e.name = s.getColumn(1).getString();
  e.status = s.getColumn(2).getString();
  e.metric = s.getColumn(3).getString();
  e.mode = s.getColumn(4).getString();
  e.spec = json_column(s.getColumn(5), "experiments");
  e.spec_source = s.getColumn(6).getString();
  e.searcher_state = json_column(s.getColumn(7), "experiments");
  e.scheduler_state = json_column(s.getColumn(8), "experiments");
  e.created_at = time_column(s.getColumn(9));
  e.updated_at = time_column(s.getColumn(10));
  return e;
}

TrialRecord read_trial(SQLite::Statement& s) {
  TrialRecord t;
  t.id = s.getColumn(0).getInt64();
  t.experiment_id = s.getColumn(1).getInt64();
  t.trial_index = s.getColumn(2).getInt64();
  t.status = s.getColumn(3).getString();
  t.config = json_column(s.getColumn(4), "trials");
  t.attempts = s.getColumn(5).getInt();
  t.error = s.getColumn(6).getString();
  t.last_iteration = s.getColumn(7).getInt64();
  t.last_result = json_column(s.getColumn(8), "trials");
  t.created_at = time_column(s.getColumn(9));
  t.started_at = time_column(s.getColumn(10));
  t.ended_at = time_column(s.getColumn(11));
  return t;
}

namespace {
void flatten_into(const Json& j, const std::string& prefix,
                  const std::function<void(const std::string&, const Json&)>& emit) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object() && !it->empty()) {
      flatten_into(*it, name, emit);
    } else {
      emit(name, *it);
    }
  }
}
}  // namespace

void flatten(const Json& config, const std::function<void(const std::string&, const Json&)>& emit) {
  if (config.is_object()) flatten_into(config, "", emit);
}

}  // namespace tune::storage_internal
