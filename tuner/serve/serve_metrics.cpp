#include "tuner/serve/serve_metrics.h"

#include <cstdio>

namespace tune::serve_detail {

namespace {

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

}  // namespace

std::string Metrics::render() const {
  std::string out;
  out.reserve(8192);
  out += "# HELP tune_serve_requests_total HTTP requests answered, by route and status code.\n";
  out += "# TYPE tune_serve_requests_total counter\n";
  for (size_t route = 0; route < routes_.size(); ++route) {
    for (int code = 0; code < kCodes; ++code) {
      uint64_t count = routes_[route].requests[code].load(std::memory_order_relaxed);
      if (count == 0) continue;
      out += std::string("tune_serve_requests_total{route=\"") + kRouteNames[route] + "\",code=\"" +
             std::to_string(kFirstCode + code) + "\"} " + std::to_string(count) + "\n";
    }
  }
  out += "# HELP tune_serve_instances_total Instances predicted.\n";
  out += "# TYPE tune_serve_instances_total counter\n";
  out += "tune_serve_instances_total " + std::to_string(instances_.load()) + "\n";
  out += "# HELP tune_serve_request_duration_seconds From a request's first byte to its response, by route.\n";
  out += "# TYPE tune_serve_request_duration_seconds histogram\n";
  for (size_t route = 0; route < routes_.size(); ++route) {
    const std::string label = std::string("route=\"") + kRouteNames[route] + "\"";
    uint64_t cumulative = 0;
    for (size_t bucket = 0; bucket <= kBuckets.size(); ++bucket) {
      cumulative += routes_[route].buckets[bucket].load(std::memory_order_relaxed);
      std::string bound = bucket < kBuckets.size() ? format_number(kBuckets[bucket]) : "+Inf";
      out += "tune_serve_request_duration_seconds_bucket{" + label + ",le=\"" + bound + "\"} " +
             std::to_string(cumulative) + "\n";
    }
    double seconds = static_cast<double>(routes_[route].nanoseconds.load()) * 1e-9;
    out += "tune_serve_request_duration_seconds_sum{" + label + "} " + format_number(seconds) + "\n";
    out += "tune_serve_request_duration_seconds_count{" + label + "} " + std::to_string(cumulative) + "\n";
  }
  out += "# HELP tune_serve_in_flight Requests read whole and not yet answered (predicting or waiting for a thread).\n";
  out += "# TYPE tune_serve_in_flight gauge\n";
  out += "tune_serve_in_flight " + std::to_string(in_flight_.load()) + "\n";
  out += "# HELP tune_serve_connections Connections open.\n";
  out += "# TYPE tune_serve_connections gauge\n";
  out += "tune_serve_connections " + std::to_string(connections_.load()) + "\n";
  out += "# HELP tune_serve_connections_dropped_total Connections closed unanswered: past a deadline (timeout), "
         "replaced at a connection limit (evicted), or over one with none to replace (refused).\n";
  out += "# TYPE tune_serve_connections_dropped_total counter\n";
  for (size_t reason = 0; reason < dropped_.size(); ++reason) {
    out += std::string("tune_serve_connections_dropped_total{reason=\"") + kDropNames[reason] + "\"} " +
           std::to_string(dropped_[reason].load(std::memory_order_relaxed)) + "\n";
  }
  return out;
}

}  // namespace tune::serve_detail
