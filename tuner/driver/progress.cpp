#include "tuner/driver/progress.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "search/search_space.h"
#include "storage/store.h"

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
                            const std::vector<std::string>& sampled, size_t max_rows, std::optional<double> eta_s,
                            const std::vector<std::string>& more_metrics) {
  std::map<std::string, int> counts;
  for (const auto& row : rows) counts[row.status]++;
  const std::string eta = eta_s && !final ? ", ETA " + format_duration(*eta_s) : "";
  std::string out = fmt::format("== {} {} == {:.1f}s elapsed{}, {}/{} slots busy | ", experiment,
                                final ? "finished" : "running", elapsed_s, eta, used_slots, slots);
  bool first = true;
  for (const auto& [status, count] : counts) {
    out += fmt::format("{}{} {}", first ? "" : ", ", count, status);
    first = false;
  }
  out += "\n";

  const std::vector<size_t> order = progress_order(metric, mode, rows, max_rows);

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
  for (const auto& m : more_metrics) header.push_back(m);
  header.push_back("time_s");

  std::vector<std::vector<std::string>> table;
  for (size_t i : order) {
    const ProgressRow& row = rows[i];
    std::vector<std::string> cells = {trial_folder_name(row.trial_index), row.status};
    Json flat = flatten(row.config);
    for (const auto& p : params) cells.push_back(flat.contains(p) ? format_value(flat[p]) : "");
    const Json& r = row.last_result;
    cells.push_back(r.is_object() && r.contains("training_iteration") ? format_value(r["training_iteration"]) : "");
    if (!metric.empty()) cells.push_back(r.is_object() && r.contains(metric) ? format_value(r[metric]) : "");
    for (const auto& m : more_metrics) cells.push_back(r.is_object() && r.contains(m) ? format_value(r[m]) : "");
    cells.push_back(r.is_object() && r.contains("time_total_s") ? fmt::format("{:.1f}", r["time_total_s"].get<double>()) : "");
    table.push_back(std::move(cells));
  }
  out += render_table(header, table);
  if (rows.size() > max_rows) out += fmt::format("... {} more trials\n", rows.size() - max_rows);
  return out;
}

std::vector<size_t> progress_order(const std::string& metric, const std::string& mode,
                                   const std::vector<ProgressRow>& rows, size_t max_rows) {
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Each row's score and whether it runs, read once (not in every comparison).
  std::vector<double> scores(rows.size(), std::nan(""));
  std::vector<char> running(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const ProgressRow& row = rows[i];
    running[i] = row.status == "RUNNING";
    if (metric.empty() || !row.last_result.is_object()) continue;
    auto it = row.last_result.find(metric);
    if (it != row.last_result.end() && it->is_number()) scores[i] = it->get<double>();
  }
  const bool max = mode == "max";
  auto before = [&](size_t i, size_t j) {
    if (running[i] != running[j]) return running[i] != 0;
    const double sa = scores[i], sb = scores[j];
    if (std::isnan(sa) != std::isnan(sb)) return !std::isnan(sa);
    if (!std::isnan(sa) && sa != sb) return max ? sa > sb : sa < sb;
    return rows[i].trial_index < rows[j].trial_index;
  };
  // The first max_rows of the stable order: a total order (ties end on the
  // trial index), so a partial sort gives the same rows.
  const size_t shown = std::min(max_rows, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(), before);
  order.resize(shown);
  return order;
}

std::optional<double> estimate_eta(const EtaInput& in) {
  std::optional<double> eta;
  if (!in.finished_s.empty() && in.total_trials >= 0) {
    double mean = 0;
    for (double t : in.finished_s) mean += t;
    mean /= static_cast<double>(in.finished_s.size());
    const auto started = static_cast<int64_t>(in.finished_s.size() + in.running_s.size());
    double work = static_cast<double>(std::max<int64_t>(0, in.total_trials - started)) * mean;
    for (double t : in.running_s) work += std::max(0.0, mean - t);
    eta = work / std::max(1, in.concurrency);
  }
  if (in.budget_left) eta = eta ? std::min(*eta, std::max(0.0, *in.budget_left)) : std::max(0.0, *in.budget_left);
  return eta;
}

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

}  // namespace tune::internal
