// Internal: the part of Session shared by in-process trials and MPI workers.
#pragma once

#include <string>

#include "trainer/session.h"

namespace tune::internal {

// The driver's answer to a result: the trial goes on, or stops (report()
// then throws TrialStopped).
enum class Verdict { kContinue, kStop };

// What the driver sends to start (or restart) a trial.
struct TrialStart {
  std::string experiment;
  std::string trainable;
  int64_t trial_index = 0;
  std::string trial_dir;
  Json config;
  int64_t iteration = 0;  // results already recorded (restored from checkpoint)
  // PBT exploits of the trial so far: each may send its iteration back, so
  // the checkpoints after the k-th are named apart (checkpoint_dir_name).
  int64_t exploits = 0;
  std::optional<Checkpoint> checkpoint;
  int cpus = 1;
  Json setup;  // SweepSpec::setup()
  // Between hosts without a shared filesystem: the worker keeps the trial's
  // files in its own scratch directory (trial_dir is then "") and streams
  // every checkpoint to the driver; a checkpoint to restore from arrives
  // over the connection (its files listed here) instead of at checkpoint->path.
  bool stream_checkpoints = false;
  Json checkpoint_files;

  Json to_json() const;
  static TrialStart from_json(const Json& json);
};

class SessionBase : public Session {
 public:
  explicit SessionBase(TrialStart start);

  const Json& config() const override { return start_.config; }
  const std::string& experiment_name() const override { return start_.experiment; }
  int64_t trial_index() const override { return start_.trial_index; }
  std::string trial_name() const override;
  const std::string& trial_dir() const override { return start_.trial_dir; }
  int64_t iteration() const override { return iteration_; }
  const std::optional<Checkpoint>& checkpoint() const override { return start_.checkpoint; }
  std::string make_checkpoint_dir() override;
  void report(const Json& metrics, const std::string& checkpoint_dir = "") override;
  int cpus() const override { return start_.cpus; }
  const Json& setup() const override { return start_.setup; }

 protected:
  // Sends the result to the driver and returns its verdict.
  virtual Verdict exchange(const Json& metrics, const std::string& checkpoint_dir) = 0;

  TrialStart start_;
  int64_t iteration_ = 0;
};

std::string trial_name(int64_t trial_index);
// A trial's checkpoint directory name: checkpoint_<iteration>, and after its
// k-th PBT exploit checkpoint_<iteration>_exploit<k>; names never repeat
// within a trial, so pruning one checkpoint never deletes another's files.
std::string checkpoint_dir_name(int64_t iteration, int64_t exploits);

// Test hook (tests/torture): when TUNE_ACK_LOG=PATH is set, the process that
// received the driver's verdict on a result (rank 0, or the in-process trial's
// thread) appends "EXPERIMENT TRIAL_INDEX ITERATION c|s" (c: continue, s: stop)
// to PATH right after it arrives, in one O_APPEND write, so a test can check
// that every acknowledged result is in the store. Does nothing otherwise.
void log_ack(const TrialStart& start, int64_t iteration, Verdict verdict);

}  // namespace tune::internal
