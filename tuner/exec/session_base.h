// Internal: the part of Session shared by in-process trials and MPI workers.
#pragma once

#include <string>

#include "trainer/session.h"

namespace tune::internal {

// The driver's answer to a result: the trial goes on, or stops (report()
// then throws TrialStopped). kRunAhead: it goes on, and nothing can be decided
// on its next result (no stop criterion reaches it, the scheduler acts at
// other iterations), so that report() sends its result and returns without
// waiting for the answer; the report after it (or the end of the attempt)
// reads the answer first. A kStop found there stops the trial one iteration
// late: the hint is only an optimisation, never a promise about the answer.
enum class Verdict { kContinue, kStop, kRunAhead };

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
  // The attempt's first result may run ahead (see Verdict::kRunAhead).
  bool run_ahead = false;

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

  // Reads the answer to a result that ran ahead, if one is outstanding (an
  // attempt's connection must carry nothing unread when it ends). Collective
  // in a worker group, like report(). Returns that answer, or nullopt.
  std::optional<Verdict> settle();
  // Whether a result ran ahead and its answer is still to be read (settle()).
  bool answer_pending() const { return in_flight_; }

 protected:
  // Sends one result to the driver; false when it cannot be sent (the trial
  // was cancelled, the sweep is ending): report() then throws TrialStopped.
  virtual bool send(const Json& metrics, const std::string& checkpoint_dir) = 0;
  // Waits for the answer to the result sent last, which was the trial's
  // `iteration`-th (for log_ack). A result the driver never answered is kStop.
  virtual Verdict await_answer(int64_t iteration) = 0;

  TrialStart start_;
  int64_t iteration_ = 0;

 private:
  bool run_ahead_ = false;  // the last answer allows the next result to run ahead
  bool in_flight_ = false;  // a result ran ahead: its answer is still to be read
};

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
