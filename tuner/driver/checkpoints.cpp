#include "tuner/driver/checkpoints.h"

#include <algorithm>
#include <set>

#include "base/error.h"
#include "storage/store.h"
#include "tuner/exec/session_base.h"

namespace tune::internal {

namespace fs = std::filesystem;

void prune_checkpoints(Store& store, int64_t trial_row, const CheckpointOptions& options, const std::string& mode,
                       const std::function<bool(const std::string&)>& in_use) {
  if (options.num_to_keep <= 0) return;
  const std::string order = options.score_order.empty() ? mode : options.score_order;
  auto live = store.checkpoints(trial_row);
  if (static_cast<int>(live.size()) <= options.num_to_keep) return;
  const int64_t latest_id = live.back().id;
  std::stable_sort(live.begin(), live.end(), [&](const CheckpointRecord& a, const CheckpointRecord& b) {
    if (a.score.has_value() != b.score.has_value()) return a.score.has_value();
    if (!a.score) return a.id > b.id;  // the newest first (a PBT clone may go back in iterations)
    return order == "max" ? *a.score > *b.score : *a.score < *b.score;
  });
  // A path a kept record still names is never removed (names do not repeat
  // within a trial, but a user's session may report any directory).
  std::set<std::string> kept;
  for (size_t i = 0; i < live.size(); ++i)
    if (i < static_cast<size_t>(options.num_to_keep) || live[i].id == latest_id) kept.insert(live[i].path);
  for (size_t i = static_cast<size_t>(options.num_to_keep); i < live.size(); ++i) {
    if (live[i].id == latest_id) continue;
    std::error_code ec;
    if (!kept.count(live[i].path) && !(in_use && in_use(live[i].path))) fs::remove_all(live[i].path, ec);
    store.mark_checkpoint_deleted(live[i].id);
  }
}

fs::path clone_target(const fs::path& trial_dir, int64_t iteration, int64_t donor_index, int64_t exploit) {
  return trial_dir / (checkpoint_dir_name(iteration, exploit) + "_from_" + trial_folder_name(donor_index));
}

void copy_checkpoint(const std::string& donor_checkpoint, const fs::path& target) {
  std::error_code ec;
  fs::remove_all(target, ec);
  fs::create_directories(target.parent_path(), ec);
  fs::copy(donor_checkpoint, target, fs::copy_options::recursive, ec);
  if (is_disk_full(ec))
    throw DiskFullError("cannot copy checkpoint " + donor_checkpoint + " to " + target.string() + ": " + ec.message());
  if (ec) throw Error("cannot copy checkpoint " + donor_checkpoint + " to " + target.string() + ": " + ec.message());
}

CheckpointCopier::~CheckpointCopier() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    queue_.clear();
  }
  work_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void CheckpointCopier::submit(int64_t trial, std::string source, fs::path target) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(Copy{trial, std::move(source), std::move(target), "", false});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  work_.notify_one();
}

std::vector<CheckpointCopier::Copy> CheckpointCopier::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Copy> taken;
  taken.swap(finished_);
  return taken;
}

void CheckpointCopier::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Copy copy = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      copy_(copy.source, copy.target);
    } catch (const DiskFullError& e) {
      copy.error = e.what();
      copy.disk_full = true;
    } catch (const std::exception& e) {
      copy.error = e.what();
    }
    lock.lock();
    finished_.push_back(std::move(copy));
    lock.unlock();
    if (done_) done_();
    lock.lock();
  }
}

}  // namespace tune::internal
