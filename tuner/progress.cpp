#include "tuner/progress.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "search/search_space.h"
#include "tuner/session_base.h"

namespace tune::internal {

std::string format_value(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_number_float()) return fmt::format("{:.5g}", value.get<double>());
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < width.size(); ++c) {
      std::string cell = c < cells.size() ? cells[c] : "";
      out += fmt::format("{:<{}}", cell, width[c]);
      if (c + 1 < width.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string render_progress(const std::string& experiment, const std::string& metric,
                            const std::string& mode, const std::vector<ProgressRow>& rows,
                            double elapsed_s, int used_slots, int slots, bool final,
                            const std::vector<std::string>& sampled, size_t max_rows) {
  std::map<std::string, int> counts;
  for (const auto& row : rows) counts[row.status]++;
  std::string out = fmt::format("== {} {} == {:.1f}s elapsed, {}/{} slots busy | ", experiment,
                                final ? "finished" : "running", elapsed_s, used_slots, slots);
  bool first = true;
  for (const auto& [status, count] : counts) {
    out += fmt::format("{}{} {}", first ? "" : ", ", count, status);
    first = false;
  }
  out += "\n";

  // Order: running first, then by metric (best first), then by index.
  std::vector<const ProgressRow*> order;
  for (const auto& row : rows) order.push_back(&row);
  auto score = [&](const ProgressRow* row) {
    if (metric.empty() || !row->last_result.is_object()) return std::nan("");
    auto it = row->last_result.find(metric);
    return it != row->last_result.end() && it->is_number() ? it->get<double>() : std::nan("");
  };
  std::stable_sort(order.begin(), order.end(), [&](const ProgressRow* a, const ProgressRow* b) {
    bool ra = a->status == "RUNNING", rb = b->status == "RUNNING";
    if (ra != rb) return ra;
    double sa = score(a), sb = score(b);
    if (std::isnan(sa) != std::isnan(sb)) return !std::isnan(sa);
    if (!std::isnan(sa) && sa != sb) return mode == "max" ? sa > sb : sa < sb;
    return a->trial_index < b->trial_index;
  });

  std::vector<std::string> header = {"trial", "status"};
  std::vector<std::string> params = sampled;
  if (params.empty() && !rows.empty()) {
    const Json flat = flatten(rows.front().config);  // named: items() must not outlive it
    for (const auto& [key, value] : flat.items()) params.push_back(key);
  }
  if (params.size() > kMaxParamColumns) params.resize(kMaxParamColumns);
  for (const auto& p : params) header.push_back(p);
  header.push_back("iter");
  if (!metric.empty()) header.push_back(metric);
  header.push_back("time_s");

  std::vector<std::vector<std::string>> table;
  for (size_t i = 0; i < order.size() && i < max_rows; ++i) {
    const ProgressRow& row = *order[i];
    std::vector<std::string> cells = {trial_name(row.trial_index), row.status};
    Json flat = flatten(row.config);
    for (const auto& p : params) cells.push_back(flat.contains(p) ? format_value(flat[p]) : "");
    const Json& r = row.last_result;
    cells.push_back(r.is_object() && r.contains("training_iteration") ? format_value(r["training_iteration"]) : "");
    if (!metric.empty()) cells.push_back(r.is_object() && r.contains(metric) ? format_value(r[metric]) : "");
    cells.push_back(r.is_object() && r.contains("time_total_s") ? fmt::format("{:.1f}", r["time_total_s"].get<double>()) : "");
    table.push_back(std::move(cells));
  }
  out += render_table(header, table);
  if (order.size() > max_rows) out += fmt::format("... {} more trials\n", order.size() - max_rows);
  return out;
}

}  // namespace tune::internal
