// The report's analyses: importance, downsampling, lanes, rungs, the median
// stopping cut-off, and the PBT lineage's perturbations.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "search/search_space.h"
#include "tuner/report/report_data.h"

namespace tune::report {
namespace {

// The share of y's variance between bins, adjusted like R^2 for the number
// of bins, so a parameter that does not matter scores ~0 even with few trials.
double adjusted_share(const std::vector<int>& bin, const std::vector<double>& y, int bins) {
  const double n = static_cast<double>(y.size());
  const double mean = std::accumulate(y.begin(), y.end(), 0.0) / n;
  std::vector<double> sum(static_cast<size_t>(bins), 0.0), count(static_cast<size_t>(bins), 0.0);
  double total = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    sum[static_cast<size_t>(bin[i])] += y[i];
    count[static_cast<size_t>(bin[i])] += 1;
    total += (y[i] - mean) * (y[i] - mean);
  }
  if (total <= 0) return 0;
  double between = 0;
  int used = 0;
  for (size_t b = 0; b < sum.size(); ++b) {
    if (count[b] == 0) continue;
    ++used;
    const double m = sum[b] / count[b];
    between += count[b] * (m - mean) * (m - mean);
  }
  if (used < 2 || n <= used) return 0;
  const double share = between / total;
  return std::max(0.0, 1 - (1 - share) * (n - 1) / (n - used));
}

// Bin of each trial for one parameter: quantile bins of about 5 trials or
// more (ties share a bin) for numbers, one per distinct value otherwise.
int bin_values(const std::vector<const Json*>& values, std::vector<int>& bin) {
  const size_t n = values.size();
  bin.assign(n, 0);
  bool numeric = true;
  for (const Json* v : values) numeric = numeric && v->is_number();
  if (!numeric) {
    std::map<std::string, int> ids;
    for (size_t i = 0; i < n; ++i) bin[i] = ids.emplace(values[i]->dump(), static_cast<int>(ids.size())).first->second;
    return static_cast<int>(ids.size());
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return values[a]->get<double>() < values[b]->get<double>(); });
  const int bins = static_cast<int>(std::clamp<size_t>(n / 5, 2, 10));
  for (size_t r = 0; r < n; ++r) {
    const bool tie = r > 0 && values[order[r]]->get<double>() == values[order[r - 1]]->get<double>();
    bin[order[r]] = tie ? bin[order[r - 1]] : static_cast<int>(r * static_cast<size_t>(bins) / n);
  }
  return bins;
}

}  // namespace

std::vector<Importance> parameter_importance(const std::vector<std::string>& params,
                                             const std::vector<TrialData>& trials) {
  std::vector<Importance> out;
  const Json missing;
  for (const auto& name : params) {
    std::vector<const Json*> values;
    std::vector<double> y;
    for (const auto& t : trials) {
      if (!std::isfinite(t.value)) continue;
      auto it = t.params.find(name);
      values.push_back(it == t.params.end() ? &missing : &*it);
      y.push_back(t.value);
    }
    if (y.size() < 3) return {};
    std::vector<int> bin;
    const int bins = bin_values(values, bin);
    out.push_back({name, adjusted_share(bin, y, bins)});
  }
  double sum = 0;
  for (const auto& i : out) sum += i.value;
  if (sum <= 0) return {};  // no parameter explains anything: no shares to show
  for (auto& i : out) i.value /= sum;
  std::stable_sort(out.begin(), out.end(), [](const Importance& a, const Importance& b) { return a.value > b.value; });
  return out;
}

std::vector<size_t> downsample(const std::vector<double>& x, const std::vector<double>& y, size_t budget) {
  std::vector<size_t> finite;
  for (size_t i = 0; i < y.size(); ++i) {
    if (std::isfinite(y[i])) finite.push_back(i);
  }
  const size_t n = finite.size();
  if (n <= budget || budget < 3) {
    if (budget < 3 && n > budget) finite.resize(budget);
    return finite;
  }
  std::vector<size_t> kept = {finite.front()};
  const double every = static_cast<double>(n - 2) / static_cast<double>(budget - 2);
  size_t a = 0;  // position (in `finite`) of the last kept point
  for (size_t b = 0; b < budget - 2; ++b) {
    const size_t from = static_cast<size_t>(std::floor(b * every)) + 1;
    const size_t to = std::min(n - 1, static_cast<size_t>(std::floor((b + 1) * every)) + 1);
    const size_t next_to = std::min(n, static_cast<size_t>(std::floor((b + 2) * every)) + 1);
    double cx = 0, cy = 0;  // centre of the next bucket
    for (size_t j = to; j < next_to; ++j) {
      cx += x[finite[j]];
      cy += y[finite[j]];
    }
    const double m = static_cast<double>(std::max<size_t>(1, next_to - to));
    cx /= m;
    cy /= m;
    double best_area = -1;
    size_t best = from;
    for (size_t j = from; j < to; ++j) {
      const double area = std::abs((x[finite[a]] - cx) * (y[finite[j]] - y[finite[a]]) -
                                   (x[finite[a]] - x[finite[j]]) * (cy - y[finite[a]]));
      if (area > best_area) {
        best_area = area;
        best = j;
      }
    }
    kept.push_back(finite[best]);
    a = best;
  }
  kept.push_back(finite.back());
  return kept;
}

int assign_lanes(std::vector<Interval>& intervals) {
  std::vector<size_t> order(intervals.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return intervals[a].start < intervals[b].start; });
  std::map<std::string, std::vector<double>> lane_ends;  // per host
  int lanes = 0;
  for (size_t i : order) {
    Interval& interval = intervals[i];
    std::vector<double>& ends = lane_ends[interval.host];
    size_t lane = 0;
    while (lane < ends.size() && ends[lane] > interval.start) ++lane;
    if (lane == ends.size()) ends.push_back(0);
    ends[lane] = interval.end;
    interval.lane = static_cast<int>(lane);
    lanes = std::max(lanes, static_cast<int>(ends.size()));
  }
  return lanes;
}

double utilisation(const std::vector<Interval>& intervals, int lanes) {
  if (intervals.empty() || lanes <= 0) return NAN;
  double first = intervals.front().start, last = intervals.front().end, busy = 0;
  for (const auto& i : intervals) {
    first = std::min(first, i.start);
    last = std::max(last, i.end);
    busy += i.end - i.start;
  }
  return last > first ? busy / (lanes * (last - first)) : NAN;
}

std::vector<RungData> rung_data(const std::vector<TrialProgress>& trials, const std::vector<double>& milestones,
                                bool minimize) {
  std::vector<RungData> rungs;
  for (double milestone : milestones) {
    RungData rung;
    rung.milestone = milestone;
    for (const auto& t : trials) {
      // The value recorded at the rung: the first result at or past it.
      for (size_t i = 0; i < t.progress.size(); ++i) {
        if (t.progress[i] < milestone) continue;
        if (!std::isfinite(t.values[i])) break;
        bool went_on = false;
        for (size_t j = i + 1; j < t.progress.size(); ++j) went_on |= t.progress[j] > t.progress[i];
        rung.trials.push_back(t.trial);
        rung.values.push_back(t.values[i]);
        rung.continued.push_back(went_on);
        if (went_on && (!std::isfinite(rung.cutoff) || (minimize ? t.values[i] > rung.cutoff : t.values[i] < rung.cutoff))) {
          rung.cutoff = t.values[i];
        }
        break;
      }
    }
    rungs.push_back(std::move(rung));
  }
  return rungs;
}

MedianCurve median_curve(const std::vector<TrialProgress>& trials, size_t points) {
  MedianCurve curve;
  // Per trial: finite (progress, value) sorted by progress, with prefix sums,
  // so the running mean at any progress is one binary search.
  struct Running {
    std::vector<double> progress, prefix;
  };
  std::vector<Running> running;
  std::vector<double> all;
  for (const auto& t : trials) {
    std::vector<std::pair<double, double>> pairs;
    for (size_t i = 0; i < t.progress.size(); ++i) {
      if (std::isfinite(t.values[i]) && std::isfinite(t.progress[i])) pairs.emplace_back(t.progress[i], t.values[i]);
    }
    if (pairs.empty()) continue;
    std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Running r;
    double sum = 0;
    for (const auto& [p, v] : pairs) {
      r.progress.push_back(p);
      r.prefix.push_back(sum += v);
      all.push_back(p);
    }
    running.push_back(std::move(r));
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (all.empty() || points < 2) return curve;
  for (size_t k = 0; k < std::min(points, all.size()); ++k) {
    curve.progress.push_back(all[all.size() <= points ? k : k * (all.size() - 1) / (points - 1)]);
  }
  std::vector<double> means;
  for (double g : curve.progress) {
    means.clear();
    for (const auto& r : running) {
      const size_t n = static_cast<size_t>(std::upper_bound(r.progress.begin(), r.progress.end(), g) - r.progress.begin());
      if (n > 0) means.push_back(r.prefix[n - 1] / static_cast<double>(n));
    }
    std::sort(means.begin(), means.end());
    const size_t h = means.size() / 2;
    curve.median.push_back(means.size() % 2 ? means[h] : (means[h - 1] + means[h]) / 2);
  }
  return curve;
}

}  // namespace tune::report
