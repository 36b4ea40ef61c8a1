// Internal: an opt-in cost profile of the driver's loop and the trial start
// path, for finding where a slowdown went (bench/run overhead prints it per
// trial and per result). Off unless TUNE_PROFILE=PATH is set: then each part
// below counts its calls and their time on the steady clock (two clock reads
// a call; atomics, so the executors' threads add to it too), and the driver
// writes the totals to PATH as JSON when the sweep ends:
//
//   {"parts": {"launch": {"calls": 1000, "seconds": 0.061, "longest_s": 0.0004}, ...}}
//
// (longest_s: the longest single call, where a stall shows.)
//
//   void Driver::housekeeping() {
//     profile::Scope timed(profile::Part::kHousekeeping);
//     ...
//
// Instruction counts per part come from valgrind instead (bench/overhead/parts.sh):
// each profiled part is a function of its own (the driver's are [[gnu::noinline]]
// for that), whose inclusive cost callgrind reports.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace tune::internal::profile {

// Parts nest: kLaunch holds kSuggest, kAddTrial and kStart; kHousekeeping holds
// kProgress. kWait is time blocked waiting for events (not a cost).
enum class Part {
  kLaunch,        // Driver::launch_ready: what can start, starts
  kSuggest,       // the searcher's suggest()
  kAddTrial,      // a new trial's row and the scheduler's on_trial_add
  kStart,         // Driver::start: the attempt to the executor, its rows
  kWait,          // blocked in the event queue
  kPoll,          // the executor's poll()
  kResult,        // a result: checks, its row, searcher and scheduler, the decision
  kEnd,           // an attempt's end or failure
  kStateSave,     // the scheduler's and searcher's state to the store
  kCommit,        // a batch's (or a launch's) store transaction commits
  kReply,         // the verdicts to the trials, after the commit
  kHousekeeping,  // timeouts, hosts, leases, budget, progress, live report
  kProgress,      // the progress table
  kFolder,        // a trial's folder made (on the trial's thread or host)
  kCount
};

const char* name(Part part);
// TUNE_PROFILE is set (read once).
bool enabled();
void add(Part part, int64_t nanoseconds);
// {"parts": {NAME: {"calls": N, "seconds": S, "longest_s": L}}}, every part, as JSON text.
std::string to_json();
// Writes to_json() to TUNE_PROFILE's path when profiling is on; errors are
// printed, never thrown (a profile must not end a sweep).
void write_if_enabled();

class Scope {
 public:
  explicit Scope(Part part) : part_(part), start_(enabled() ? now() : -1) {}
  ~Scope() {
    if (start_ >= 0) add(part_, now() - start_);
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  static int64_t now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  Part part_;
  int64_t start_;
};

}  // namespace tune::internal::profile
