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

// A log another process appends to (mpirun's output, opened O_APPEND): past
// `max_bytes` its oldest part is cut off in place so that about max_bytes / 2
// of the newest output is left (FALLOC_FL_COLLAPSE_RANGE: ext4, XFS); where
// the filesystem cannot, it is emptied. The writer's next write lands at the
// new end. Returns the bytes dropped (0: under the limit, or gone).
uint64_t trim_log(const std::string& path, uint64_t max_bytes);

}  // namespace tune::internal
