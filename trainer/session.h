// Session: what a trainable sees of the tuner while it runs one trial.
//
//   tune::register_trainable("quadratic", [](tune::Session& session) {
//     double x = session.config()["x"];
//     for (int step = 0; step < 10; ++step)
//       session.report({{"loss", (x - 3) * (x - 3) / (step + 1)}});
//   });
//
// report() blocks until the driver has durably recorded the result and decided
// what the trial does next, except where nothing can be decided on it (no stop
// criterion reaches it, the scheduler acts at other iterations, no checkpoint
// comes with it, iterations are short): then it returns at once and the next
// report() first waits for that answer (RunConfig::run_ahead). When the trial
// must stop (stop criteria, scheduler, sweep ending) report() throws
// tune::TrialStopped; let it propagate (it does
// not derive from std::exception, so `catch (const std::exception&)` in user
// code does not swallow it). Any other exception escaping the trainable marks
// the trial ERROR (retried per failure.max_failures); so does a NaN metric.
//
// In an MPI worker group every rank runs the trainable. All ranks must call
// report() the same number of times (it is collective: rank 0 talks to the
// driver and broadcasts the decision); metrics passed on ranks != 0 are ignored.
//
// Thread safety: a Session belongs to the thread running its trial.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"

namespace tune {

// Thrown by Session::report() when the driver stops the trial.
struct TrialStopped {};

// A checkpoint is a directory the trainable wrote; the tuner records it.
struct Checkpoint {
  std::string path;
  int64_t iteration = 0;  // the training_iteration it was taken at
};

class Session {
 public:
  virtual ~Session() = default;

  virtual const Json& config() const = 0;
  virtual const std::string& experiment_name() const = 0;
  virtual int64_t trial_index() const = 0;
  // "trial_00007": also the trial's folder name under the experiment dir.
  virtual std::string trial_name() const = 0;
  // The trial's own directory, for logs and checkpoints; it exists once this
  // returns (an in-process trial's is made on the first call: one that keeps
  // no files makes none). Throws tune::Error when it cannot be made.
  virtual const std::string& trial_dir() const = 0;

  // Results reported so far (continues from a restored checkpoint's iteration).
  virtual int64_t iteration() const = 0;

  // The checkpoint to restore from (retry after failure, `tune resume`),
  // or nullopt for a fresh start.
  virtual const std::optional<Checkpoint>& checkpoint() const = 0;

  // A new, empty directory for the checkpoint of the next report(); identical
  // on every rank of a group (rank 0 should write it).
  virtual std::string make_checkpoint_dir() = 0;

  // Reports one result; training_iteration = iteration() + 1 is added.
  // `checkpoint_dir`, if given, is a directory from make_checkpoint_dir()
  // now holding the trial's state. Throws TrialStopped (see above).
  virtual void report(const Json& metrics, const std::string& checkpoint_dir = "") = 0;

  // This process's rank in the trial's worker group and the group's size
  // (0 and 1 for in-process trials). The group's MPI communicator, for code
  // that uses MPI itself, is tune::communicator(session) (trainer/communicator.h).
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Cores this rank may use (resources.cpus_per_worker).
  virtual int cpus() const = 0;
  // The sweep's trainable setup: {"data": <the data: mapping>, "preprocess":
  // <the preprocess: list>}, each null when the sweep has none.
  virtual const Json& setup() const = 0;

  // True once the driver wants this trial to end (interrupt, hung-trial
  // timeout, the sweep stopping) while it runs in-process. A trainable that
  // waits on something other than report() (a child process, a socket)
  // polls it and throws tune::TrialStopped; report() checks it itself.
  virtual bool stop_requested() const { return false; }
  // Opaque: a pointer to the group's MPI_Comm, or nullptr for in-process
  // trials; read it through tune::communicator(session), which needs <mpi.h>
  // (this header does not).
  virtual const void* mpi_communicator_handle() const = 0;
};

using TrainableFunction = std::function<void(Session&)>;

struct TrainableInfo {
  // True if the function may run on a driver thread (no MPI, thread safe).
  // Functions needing MPI (workers > 1) must be false. Default: true.
  bool in_process = true;
  std::string description;
  // Checks the sweep's setup ({"data": ..., "preprocess": ...}, see
  // Session::setup()) before any trial starts; throws tune::ConfigError. A
  // trainable without it rejects sweeps that have data: or preprocess:.
  std::function<void(const Json& setup)> check_setup;
};

// Registers a named trainable (the sweep file's `trainable:`). Thread-safe;
// registering a name twice replaces the earlier one. Call it before
// tune::init() in programs that run MPI worker groups.
void register_trainable(const std::string& name, TrainableFunction function,
                        TrainableInfo info = {});

struct RegisteredTrainable {
  std::string name;
  TrainableFunction function;
  TrainableInfo info;
};
// nullptr if unknown.
const RegisteredTrainable* find_trainable(const std::string& name);
std::vector<std::string> trainable_names();

// Registers branin, hartmann6 and synthetic. Idempotent.
void register_builtin_trainables();

}  // namespace tune
