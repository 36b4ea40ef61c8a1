// Internal: checkpoint files on disk, kept in step with the store.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "storage/store.h"
#include "tuner/spec/sweep_spec.h"

namespace tune::internal {

// Keeps the options.num_to_keep best live checkpoints of a trial by score
// (order: options.score_order, else `mode`; unscored ones rank last, newest
// first) plus always the latest; deletes the others' files and marks them
// deleted. No-op when num_to_keep is 0.
void prune_checkpoints(Store& store, int64_t trial_row, const CheckpointOptions& options,
                       const std::string& mode);

// Copies a donor's checkpoint directory into `trial_dir` for the trial's
// `exploit`-th exploit, as checkpoint_<iteration>_exploit<k>_from_<donor trial
// name> (replacing a partial copy), and returns its path. Throws tune::Error
// if the copy fails.
std::filesystem::path clone_checkpoint(const std::string& donor_checkpoint, const std::filesystem::path& trial_dir,
                                       int64_t iteration, int64_t donor_index, int64_t exploit);

}  // namespace tune::internal
