#include "tuner/exec/checkpoint_handoff.h"

#include <cerrno>
#include <filesystem>

#include "base/error.h"

namespace tune::internal {
namespace {

namespace fs = std::filesystem;

// Whether `inner` is `outer` or inside it (both canonical).
bool within(const fs::path& inner, const fs::path& outer) {
  auto o = outer.begin();
  auto i = inner.begin();
  for (; o != outer.end(); ++o, ++i)
    if (i == inner.end() || *i != *o) return false;
  return true;
}

}  // namespace

std::string take_checkpoint(const Json& named, const CheckpointPlaces& places,
                            const std::function<std::string()>& make_dir) {
  if (!named.is_string() || named.get_ref<const std::string&>().empty() ||
      named.get_ref<const std::string&>().find('\0') != std::string::npos)
    throw Error("the program's @tune \"checkpoint\" must be a folder path, got " + one_line(named.dump(), 200));
  fs::path from(named.get<std::string>());
  if (from.is_relative()) from = fs::path(places.cwd) / from;
  const std::string path = "checkpoint " + one_line(from.lexically_normal().string(), 300);
  const std::string shown = "the program's @tune result names " + path;
  std::error_code ec;
  // Where it really is: every symlink on the way resolved, so that the rules
  // below judge the folder itself, not a name for it.
  const fs::path real = fs::canonical(from, ec);
  if (ec || !fs::is_directory(real, ec)) throw Error(shown + ", which is not a folder");
  const fs::path trial = fs::weakly_canonical(fs::absolute(places.trial_dir), ec);
  const fs::path handoff = fs::weakly_canonical(fs::absolute(places.handoff), ec);
  if (within(trial, real))
    throw Error(shown + ", which " + (real == trial ? "is" : "contains") +
                " the trial's own folder (" + one_line(trial.string(), 300) +
                "): write each checkpoint into a folder of its own, e.g. in $TUNE_CHECKPOINT_DIR");
  // Moved only if it is the program's, in the trial's folder: not a
  // checkpoint tune recorded (checkpoint_000003, the one restored from).
  bool move = false;
  if (within(real, trial)) {
    const fs::path first = *real.lexically_relative(trial).begin();
    move = within(real, handoff) || first.string().rfind("checkpoint_", 0) != 0;
  }
  const std::string dir = make_dir();  // new and empty: a rename may replace it
  if (move) {
    fs::rename(real, dir, ec);
    if (!ec) {
      if (real == handoff) fs::create_directories(handoff, ec);
      return dir;
    }
    if (ec != std::errc::cross_device_link) throw Error("cannot take " + path + ": " + ec.message());
    ec.clear();  // a mount inside the trial's folder: copied, then removed (it is the program's)
  }
  fs::copy(real, dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);  // what was copied of it: tune made it
    throw Error("cannot copy " + path + ": " + ec.message() + " (a checkpoint holds files, folders and symlinks)");
  }
  if (move) fs::remove_all(real, ec);
  return dir;
}

}  // namespace tune::internal
