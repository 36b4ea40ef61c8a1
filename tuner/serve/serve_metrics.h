// Internal to `tune serve`: the request counters, duration histograms and
// connection counts behind GET /metrics (Prometheus text format 0.0.4).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tune::serve_detail {

using Clock = std::chrono::steady_clock;

enum class Route { kPredict, kMetadata, kHealth, kMetrics, kOther };
constexpr std::array<const char*, 5> kRouteNames = {"predict", "metadata", "healthz", "metrics", "other"};
// Upper bounds (seconds) of the duration histogram's buckets, +Inf aside.
constexpr std::array<double, 16> kBuckets = {1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
                                             5e-2, 0.1,    0.25,   0.5,  1,    2.5,    5,    10};

// Why the server closed a connection before answering it.
enum class Drop { kTimeout, kEvicted, kRefused };
constexpr std::array<const char*, 3> kDropNames = {"timeout", "evicted", "refused"};

// Lock-free counters: a request costs a few relaxed atomic increments.
class Metrics {
 public:
  void record(Route route, int status, Clock::duration elapsed) {
    PerRoute& counters = routes_[static_cast<size_t>(route)];
    if (status >= kFirstCode && status < kFirstCode + kCodes) {
      counters.requests[status - kFirstCode].fetch_add(1, std::memory_order_relaxed);
    }
    double seconds = std::chrono::duration<double>(elapsed).count();
    size_t bucket = std::lower_bound(kBuckets.begin(), kBuckets.end(), seconds) - kBuckets.begin();
    counters.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
    auto nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
    counters.nanoseconds.fetch_add(static_cast<uint64_t>(nanoseconds), std::memory_order_relaxed);
  }
  void add_instances(size_t count) { instances_.fetch_add(count, std::memory_order_relaxed); }
  void add_dropped(Drop reason) { dropped_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed); }
  // Requests handed to a worker thread and not yet answered.
  std::atomic<int64_t>& in_flight() { return in_flight_; }
  // Connections open.
  std::atomic<int64_t>& connections() { return connections_; }
  std::string render() const;

 private:
  static constexpr int kFirstCode = 100;
  static constexpr int kCodes = 500;
  struct PerRoute {
    std::array<std::atomic<uint64_t>, kCodes> requests{};
    std::array<std::atomic<uint64_t>, kBuckets.size() + 1> buckets{};
    std::atomic<uint64_t> nanoseconds{0};
  };
  std::array<PerRoute, kRouteNames.size()> routes_{};
  std::atomic<uint64_t> instances_{0};
  std::array<std::atomic<uint64_t>, kDropNames.size()> dropped_{};
  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> connections_{0};
};

}  // namespace tune::serve_detail
