// Internal: a checkpoint folder a command trainable's program names in a
// result (`@tune {"loss": 1, "checkpoint": "ck"}`), taken into the trial's
// own checkpoint folder without ever moving or deleting what tune did not
// make:
//
// - a folder inside the trial's folder (TUNE_CHECKPOINT_DIR, or a folder the
//   program made in it) is moved, in one rename; TUNE_CHECKPOINT_DIR itself
//   is made again, empty;
// - a checkpoint tune recorded earlier (checkpoint_000003 in the trial's
//   folder, TUNE_RESTORE_FROM) and any folder outside the trial's folder is
//   copied and left in place; symlinks in it are copied as symlinks, never
//   followed;
// - a folder that is the trial's folder or contains it (the experiment's, the
//   results directory with tune.db, the project) is refused;
// - a path that is no folder, or holds what cannot be copied (a named pipe,
//   a socket, a device), is refused.
//
// Refusals throw Error (one line): the trial fails, the sweep goes on.
#pragma once

#include <functional>
#include <string>

#include "base/json.h"

namespace tune::internal {

struct CheckpointPlaces {
  std::string cwd;        // the program's folder: a relative path is relative to it
  std::string trial_dir;  // the trial's folder
  std::string handoff;    // TUNE_CHECKPOINT_DIR, in trial_dir
};

// Takes the folder `named` names; `make_dir` makes the new, empty checkpoint
// folder (Session::make_checkpoint_dir). Returns that folder.
std::string take_checkpoint(const Json& named, const CheckpointPlaces& places,
                            const std::function<std::string()>& make_dir);

}  // namespace tune::internal
