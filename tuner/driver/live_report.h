// Internal: the report a running sweep keeps current (`tune run --report`).
// Writing reads the store on its own connection, so it runs on a thread of
// its own and never holds up the driver's loop; a write still in progress
// when the next is due is not doubled.
//
//   LiveReport report(run.storage_path, name, run.report_path, run.report_interval_s);
//   report.tick(clock.now());   // every turn of the loop
//   report.finish();            // after the last commit: the page stops reloading
#pragma once

#include <atomic>
#include <string>
#include <thread>

namespace tune::internal {

class LiveReport {
 public:
  LiveReport(std::string storage, std::string experiment, std::string path, double interval_s, bool verbose);
  ~LiveReport();  // waits for a write in progress
  LiveReport(const LiveReport&) = delete;
  LiveReport& operator=(const LiveReport&) = delete;

  // Starts a write when `now` (steady seconds) is interval_s past the last.
  void tick(double now);
  // The final write, in this thread.
  void finish();

 private:
  void write();
  std::string storage_, experiment_, path_;
  double interval_s_;
  bool verbose_;
  double last_ = -1e300;
  std::thread writer_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> warned_{false};
};

}  // namespace tune::internal
