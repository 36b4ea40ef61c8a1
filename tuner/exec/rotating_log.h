// Internal: a log file that a program printing without end cannot grow past
// a size. Past `max_bytes` the file moves to PATH.1 (replacing the one
// before) and starts over, so at most twice that is on disk and the newest
// output is kept whole (Ray's worker logs rotate the same way).
//
//   RotatingLog log;
//   log.open(trial_dir + "/stdout.log", 64 << 20);   // appends to what is there
//   log.write(chunk, n);
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace tune::internal {

class RotatingLog {
 public:
  // max_bytes 0: no limit.
  void open(const std::string& path, uint64_t max_bytes);
  void write(const char* data, size_t size);
  void write_line(const std::string& line);  // line + '\n'
  void flush() { out_.flush(); }

 private:
  void make_room(size_t size);

  std::string path_;
  std::ofstream out_;
  uint64_t size_ = 0, max_ = 0;
};

}  // namespace tune::internal
