#include "tuner/driver/live_report.h"

#include <iostream>

#include "tuner/report/report.h"

namespace tune::internal {

LiveReport::LiveReport(std::string storage, std::string experiment, std::string path, double interval_s, bool verbose)
    : storage_(std::move(storage)),
      experiment_(std::move(experiment)),
      path_(std::move(path)),
      interval_s_(interval_s),
      verbose_(verbose) {}

LiveReport::~LiveReport() {
  if (writer_.joinable()) writer_.join();
}

void LiveReport::write() {
  try {
    write_report(storage_, {experiment_}, path_);
  } catch (const std::exception& e) {
    // The sweep goes on without its page; say so once.
    if (verbose_ && !warned_.exchange(true)) std::cerr << "tune: report " << path_ << ": " << e.what() << "\n";
  }
}

void LiveReport::tick(double now) {
  if (now - last_ < interval_s_ || busy_) return;
  last_ = now;
  if (writer_.joinable()) writer_.join();
  busy_ = true;
  writer_ = std::thread([this] {
    write();
    busy_ = false;
  });
}

void LiveReport::finish() {
  if (writer_.joinable()) writer_.join();
  write();
}

}  // namespace tune::internal
