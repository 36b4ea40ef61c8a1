#include "tuner/exec/rotating_log.h"

#include <cstdio>
#include <filesystem>

namespace tune::internal {

void RotatingLog::open(const std::string& path, uint64_t max_bytes) {
  path_ = path;
  max_ = max_bytes;
  std::error_code ec;
  const auto existing = std::filesystem::file_size(path, ec);  // earlier attempts' output
  size_ = ec ? 0 : existing;
  out_.open(path, std::ios::app);
}

void RotatingLog::make_room(size_t size) {
  if (max_ == 0 || size_ == 0 || size_ + size <= max_) return;
  out_.close();
  std::rename(path_.c_str(), (path_ + ".1").c_str());  // a failed rename: the file starts over all the same
  out_.open(path_, std::ios::trunc);
  size_ = 0;
}

void RotatingLog::write(const char* data, size_t size) {
  make_room(size);
  out_.write(data, static_cast<std::streamsize>(size));
  size_ += size;
}

void RotatingLog::write_line(const std::string& line) {
  make_room(line.size() + 1);
  out_ << line << '\n';
  size_ += line.size() + 1;
}

}  // namespace tune::internal
