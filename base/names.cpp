#include "base/names.h"

#include <algorithm>

namespace tune {

int edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  // A word far longer than any candidate is no typo of one: skip the table.
  const int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  std::string best;
  int best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    const int gap = static_cast<int>(word.size()) - static_cast<int>(candidate.size());
    if (gap > limit || -gap > limit) continue;
    int distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string hint = closest_match(word, candidates);
  return hint.empty() ? "" : " (did you mean '" + hint + "'?)";
}

std::string did_you_mean_or_list(const std::string& word, const std::vector<std::string>& candidates,
                                 const std::string& label) {
  const std::string hint = did_you_mean(word, candidates);
  return hint.empty() ? " (" + label + ": " + join_names(candidates) + ")" : hint;
}

std::string join_names(const std::vector<std::string>& names, const std::string& separator) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : separator) + name;
  return out;
}

}  // namespace tune
