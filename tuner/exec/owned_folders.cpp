#include "tuner/exec/owned_folders.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "base/error.h"

namespace tune::internal {
namespace {

constexpr const char* kOwnerFile = "owner";
constexpr size_t kRandomPart = 6;  // mkdtemp's XXXXXX

}  // namespace

int remove_abandoned_folders(const std::string& parent, std::string_view prefix,
                             const std::function<bool(const std::filesystem::directory_entry&)>& expected) {
  namespace fs = std::filesystem;
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path dir = it->path();
    const std::string name = dir.filename().string();
    if (name.size() != prefix.size() + kRandomPart || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::error_code type_ec;
    if (it->is_symlink(type_ec) || !it->is_directory(type_ec)) continue;
    std::ifstream owner(dir / kOwnerFile);
    long long pid = 0;
    if (!(owner >> pid) || pid <= 1) continue;  // not one of ours, or written by an older tune
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // its driver still runs
    bool only_ours = true;
    std::error_code list_ec;
    for (fs::directory_iterator entry(dir, list_ec), last; only_ours && !list_ec && entry != last;
         entry.increment(list_ec)) {
      const bool owner_file = entry->path().filename() == kOwnerFile && entry->is_regular_file(type_ec) &&
                              !entry->is_symlink(type_ec);
      only_ours = owner_file || expected(*entry);
    }
    if (!only_ours || list_ec) continue;  // something else was put there: left alone
    std::error_code remove_ec;
    if (fs::remove_all(dir, remove_ec) > 0 && !remove_ec) ++removed;
  }
  return removed;
}

std::string make_owned_folder(std::string_view prefix,
                              const std::function<bool(const std::filesystem::directory_entry&)>& expected) {
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  remove_abandoned_folders(tmp.string(), prefix, expected);
  std::string pattern = (tmp / (std::string(prefix) + std::string(kRandomPart, 'X'))).string();
  if (!::mkdtemp(pattern.data())) throw Error("cannot create a folder " + pattern + ": " + std::strerror(errno));
  ::chmod(pattern.c_str(), 0700);
  // Whose it is: a later driver removes it if this one is killed before it can.
  std::ofstream(pattern + "/" + kOwnerFile) << ::getpid() << "\n";
  return pattern;
}

}  // namespace tune::internal
