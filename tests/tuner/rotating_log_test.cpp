// Logs that a program printing without end cannot grow past a size: the
// logs tune writes (RotatingLog) and those another process appends to
// (trim_log, mpirun's output).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"
#include "tuner/exec/rotating_log.h"

namespace tune::internal {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(RotatingLog, PastItsLimitTheLogMovesToDotOneAndStartsOver) {
  TempDir dir;
  const std::string path = dir.file("stdout.log");
  std::ofstream(path) << "an earlier attempt\n";  // 19 bytes, appended to
  RotatingLog log;
  log.open(path, 100);
  for (int i = 0; i < 30; ++i) log.write_line("line " + std::to_string(i) + " ......");  // 14-15 bytes each
  log.flush();
  EXPECT_LE(fs::file_size(path), 100u);
  EXPECT_LE(fs::file_size(path + ".1"), 100u);
  const std::string now = read(path), before = read(path + ".1");
  EXPECT_NE(now.find("line 29 ......\n"), std::string::npos) << "the newest output, whole";
  EXPECT_EQ(now.find("line 29") + 15, now.size());
  EXPECT_EQ(before.find("an earlier attempt"), std::string::npos) << "the oldest output is gone";
  // Lines are never split between the two.
  EXPECT_EQ(now.rfind("line ", 0), 0u);
  EXPECT_EQ(before.rfind("line ", 0), 0u);
}

TEST(RotatingLog, NoLimitKeepsEverything) {
  TempDir dir;
  RotatingLog log;
  log.open(dir.file("a.log"), 0);
  for (int i = 0; i < 1000; ++i) log.write("0123456789", 10);
  log.flush();
  EXPECT_EQ(fs::file_size(dir.file("a.log")), 10000u);
  EXPECT_FALSE(fs::exists(dir.file("a.log.1")));
}

// A writer that appends (O_APPEND, as mpirun's output is opened) goes on at
// the new end after a trim.
void trim_under_an_appending_writer(const std::string& path, bool keeps_newest) {
  const int writer = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
  ASSERT_GE(writer, 0);
  std::string block;
  for (int i = 0; i < 4096; ++i) block += "line " + std::to_string(i % 10) + " ....................\n";  // 26 bytes
  for (int i = 0; i < 10; ++i) ASSERT_EQ(::write(writer, block.data(), block.size()), static_cast<ssize_t>(block.size()));
  const auto size = fs::file_size(path);  // ~1 MB
  EXPECT_EQ(trim_log(path, size + 1), 0u) << "under the limit: untouched";
  const uint64_t dropped = trim_log(path, 256 << 10);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(fs::file_size(path), size - dropped);
  if (keeps_newest) {
    EXPECT_GE(fs::file_size(path), 128u << 10) << "about half the limit, the newest part, is kept";
    EXPECT_LE(fs::file_size(path), (128u << 10) + 4096);
  } else {
    EXPECT_EQ(fs::file_size(path), 0u) << "a filesystem that cannot cut a file's start: emptied";
  }
  const std::string last = "the writer's next line\n";
  ASSERT_EQ(::write(writer, last.data(), last.size()), static_cast<ssize_t>(last.size()));
  ::close(writer);
  const std::string text = read(path);
  EXPECT_EQ(text.size(), size - dropped + last.size()) << "no hole, nothing written past the end";
  EXPECT_EQ(text.substr(text.size() - last.size()), last);
}

TEST(TrimLog, CutsTheOldestPartInPlaceWhereTheFilesystemCan) {
  TempDir dir;  // under /tmp: ext4 on these machines
  trim_under_an_appending_writer(dir.file("group_0.log"), true);
}

TEST(TrimLog, EmptiesTheLogWhereTheFilesystemCannotCutIt) {
  const std::string path = "/dev/shm/tune_trim_log_test." + std::to_string(::getpid());  // tmpfs
  trim_under_an_appending_writer(path, false);
  fs::remove(path);
}

}  // namespace
}  // namespace tune::internal
