// SQLite's memory statistics are off in a process where tune is the first to
// use SQLite (open_sqlite_store turns them off, as SQLite's recommended build
// options do), and stay on in one that initialized SQLite before opening a
// store (README, "Embedded in a C++ program"). A program of its own, run by
// ctest twice: the check needs a process where SQLite is not initialized yet,
// which a test binary running other tests first cannot promise.
//
//   memstatus_check                       statistics off: sqlite3_memory_used() is 0
//   memstatus_check --initialize-first    statistics on: it counts the open store
#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "storage/store.h"

int main(int argc, char** argv) {
  const bool initialize_first = argc > 1 && std::string(argv[1]) == "--initialize-first";
  if (initialize_first && sqlite3_initialize() != SQLITE_OK) {
    std::fprintf(stderr, "memstatus_check: sqlite3_initialize failed\n");
    return 2;
  }
  std::string dir = (std::filesystem::temp_directory_path() / "tune-memstatus-XXXXXX").string();
  if (!mkdtemp(dir.data())) {
    std::perror("memstatus_check: mkdtemp");
    return 2;
  }
  sqlite3_int64 used = 0;
  {
    auto store = tune::Store::open(dir);  // creates the schema: the connection holds its pages
    used = sqlite3_memory_used();
  }
  std::filesystem::remove_all(dir);  // its own folder, made above
  const bool ok = initialize_first ? used > 0 : used == 0;
  std::printf("memstatus_check%s: sqlite3_memory_used() = %lld with a store open (expected %s)\n",
              initialize_first ? " --initialize-first" : "", static_cast<long long>(used),
              initialize_first ? "> 0" : "0");
  return ok ? 0 : 1;
}
