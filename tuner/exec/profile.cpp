#include "tuner/exec/profile.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace tune::internal::profile {
namespace {

constexpr int kParts = static_cast<int>(Part::kCount);
std::array<std::atomic<int64_t>, kParts> g_calls{};
std::array<std::atomic<int64_t>, kParts> g_nanoseconds{};
std::array<std::atomic<int64_t>, kParts> g_longest{};  // the longest call: where a stall is

const char* path() {
  static const char* const value = [] {
    const char* v = std::getenv("TUNE_PROFILE");
    return v && *v ? v : nullptr;
  }();
  return value;
}

}  // namespace

const char* name(Part part) {
  switch (part) {
    case Part::kLaunch: return "launch";
    case Part::kSuggest: return "suggest";
    case Part::kAddTrial: return "add_trial";
    case Part::kStart: return "start";
    case Part::kWait: return "wait";
    case Part::kPoll: return "poll";
    case Part::kResult: return "result";
    case Part::kEnd: return "end";
    case Part::kStateSave: return "state_save";
    case Part::kCommit: return "commit";
    case Part::kReply: return "reply";
    case Part::kHousekeeping: return "housekeeping";
    case Part::kProgress: return "progress";
    case Part::kFolder: return "folder";
    case Part::kCount: break;
  }
  return "?";
}

bool enabled() { return path() != nullptr; }

void add(Part part, int64_t nanoseconds) {
  const int i = static_cast<int>(part);
  g_calls[i].fetch_add(1, std::memory_order_relaxed);
  g_nanoseconds[i].fetch_add(nanoseconds, std::memory_order_relaxed);
  int64_t longest = g_longest[i].load(std::memory_order_relaxed);
  while (nanoseconds > longest &&
         !g_longest[i].compare_exchange_weak(longest, nanoseconds, std::memory_order_relaxed)) {
  }
}

std::string to_json() {
  std::string out = "{\"parts\": {";
  for (int i = 0; i < kParts; ++i) {
    char entry[200];
    std::snprintf(entry, sizeof entry, "%s\"%s\": {\"calls\": %lld, \"seconds\": %.9f, \"longest_s\": %.9f}",
                  i ? ", " : "", name(static_cast<Part>(i)), static_cast<long long>(g_calls[i].load()),
                  static_cast<double>(g_nanoseconds[i].load()) * 1e-9,
                  static_cast<double>(g_longest[i].load()) * 1e-9);
    out += entry;
  }
  return out + "}}\n";
}

void write_if_enabled() {
  if (!enabled()) return;
  std::ofstream file(path(), std::ios::trunc);
  file << to_json();
  if (!file) std::cerr << "tune: cannot write the profile to " << path() << " (TUNE_PROFILE)\n";
}

}  // namespace tune::internal::profile
