// Internal: checkpoint files on disk, kept in step with the store, and the
// thread that copies a donor's checkpoint for a PBT exploit off the driver's
// loop.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/store.h"
#include "tuner/spec/sweep_spec.h"

namespace tune::internal {

// Keeps the options.num_to_keep best live checkpoints of a trial by score
// (order: options.score_order, else `mode`; unscored ones rank last, newest
// first) plus always the latest; deletes the others' files and marks them
// deleted. No-op when num_to_keep is 0. `in_use` (optional): a folder it
// answers true for is marked deleted but left on disk (a copy of it is
// being made; its owner removes it after).
void prune_checkpoints(Store& store, int64_t trial_row, const CheckpointOptions& options, const std::string& mode,
                       const std::function<bool(const std::string&)>& in_use = {});

// Where the trial's `exploit`-th exploit puts its copy of a donor's
// checkpoint: trial_dir/checkpoint_<iteration>_exploit<k>_from_<donor trial name>.
std::filesystem::path clone_target(const std::filesystem::path& trial_dir, int64_t iteration, int64_t donor_index,
                                   int64_t exploit);
// Copies the donor's checkpoint directory to `target` (replacing a partial
// copy). Throws DiskFullError when the disk is full, else tune::Error.
void copy_checkpoint(const std::string& donor_checkpoint, const std::filesystem::path& target);

// Copies checkpoints on a thread of its own, in order: a PBT exploit's copy
// (a model's weights: megabytes to gigabytes) must not hold the driver's
// loop, where every other trial's report() waits. Each finished copy is
// taken by the driver (take()); `done` is called on the copier's thread after
// each (the driver's wake-up). The destructor finishes the copy under way
// and drops the rest (their trials are PENDING in the store; a resume
// restarts them from their own checkpoints).
class CheckpointCopier {
 public:
  struct Copy {
    int64_t trial = 0;
    std::string source;
    std::filesystem::path target;
    std::string error;       // empty: copied
    bool disk_full = false;  // the error was a full disk
  };
  using CopyFn = std::function<void(const std::string& source, const std::filesystem::path& target)>;
  // `copy`: copy_checkpoint unless given (tests hold a copy to watch the loop meanwhile).
  explicit CheckpointCopier(std::function<void()> done, CopyFn copy = {})
      : done_(std::move(done)), copy_(copy ? std::move(copy) : CopyFn(copy_checkpoint)) {}
  ~CheckpointCopier();
  CheckpointCopier(const CheckpointCopier&) = delete;
  CheckpointCopier& operator=(const CheckpointCopier&) = delete;

  void submit(int64_t trial, std::string source, std::filesystem::path target);
  std::vector<Copy> take();

 private:
  void loop();
  std::function<void()> done_;
  CopyFn copy_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<Copy> queue_;
  std::vector<Copy> finished_;
  bool stop_ = false;
  std::thread thread_;  // started by the first submit()
};

}  // namespace tune::internal
