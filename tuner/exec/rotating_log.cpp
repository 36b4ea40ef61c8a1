#include "tuner/exec/rotating_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

uint64_t trim_log(const std::string& path, uint64_t max_bytes) {
  struct stat info {};
  if (max_bytes == 0 || ::stat(path.c_str(), &info) != 0 || static_cast<uint64_t>(info.st_size) <= max_bytes) return 0;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const uint64_t size = static_cast<uint64_t>(info.st_size);
  const uint64_t block = info.st_blksize > 0 ? static_cast<uint64_t>(info.st_blksize) : 4096;
  const uint64_t cut = (size - max_bytes / 2) / block * block;  // whole blocks, the newest half kept
  uint64_t dropped = 0;
  if (cut > 0 && ::fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, static_cast<off_t>(cut)) == 0) {
    dropped = cut;
  } else if (::ftruncate(fd, 0) == 0) {
    dropped = size;
  }
  ::close(fd);
  return dropped;
}

}  // namespace tune::internal
