// Internal: the progress table printed while a sweep runs (Ray-style).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tune::internal {

struct ProgressRow {
  int64_t trial_index;
  std::string status;
  nlohmann::json config;
  nlohmann::json last_result;
  std::string error;
};

// At most `max_rows` trials are listed (running first, then the best by
// metric); the header counts every status. The parameter columns are the
// sampled parameters (`sampled`, dotted paths, in that order, at most
// kMaxParamColumns); constants fill the columns only when nothing is sampled.
inline constexpr size_t kMaxParamColumns = 10;
std::string render_progress(const std::string& experiment, const std::string& metric,
                            const std::string& mode, const std::vector<ProgressRow>& rows,
                            double elapsed_s, int used_slots, int slots, bool final,
                            const std::vector<std::string>& sampled = {}, size_t max_rows = 20);

// A plain text table with aligned columns.
std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);

// Short display of a JSON value (numbers with 5 significant digits).
std::string format_value(const nlohmann::json& value);

}  // namespace tune::internal
