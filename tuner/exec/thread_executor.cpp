#include "tuner/exec/thread_executor.h"

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "tuner/exec/profile.h"
#include "tuner/spec/sweep_spec.h"

namespace tune::internal {

struct ThreadExecutor::Core {
  struct Job {
    AttemptId id;
    TrialStart trial;
    std::atomic<bool> cancelled{false};
    double cancelled_at = 0;
    bool abandoned = false;  // guarded by mutex
  };
  struct Worker {
    std::thread thread;
    std::shared_ptr<Job> job;  // the job it runs, if any
    bool exited = false;
  };

  EventSink* sink = nullptr;
  const Clock* clock = nullptr;
  TrainableFunction function;
  double stop_grace_s = 10;

  mutable std::mutex mutex;
  std::condition_variable wake;      // workers: a job or closing
  std::condition_variable finished;  // shutdown: a worker finished its job
  bool closed = false;  // no more pushes to `sink`, no more jobs
  std::deque<std::shared_ptr<Job>> queue;
  std::map<AttemptId, std::shared_ptr<Job>> live;  // queued or running, not abandoned
  std::vector<std::shared_ptr<Worker>> workers;
  int idle = 0;

  // Pushes unless closed; false when the event was dropped.
  bool push(TrialEvent event) {
    std::lock_guard<std::mutex> lock(mutex);
    if (closed) return false;
    sink->push(std::move(event));
    return true;
  }
};

namespace {

class InProcessSession : public SessionBase {
 public:
  InProcessSession(TrialStart trial, std::shared_ptr<ThreadExecutor::Core> core,
                   std::shared_ptr<ThreadExecutor::Core::Job> job)
      : SessionBase(std::move(trial)), core_(std::move(core)), job_(std::move(job)) {}

  // The trial's folder is made when the trial first asks for it (here or
  // for a checkpoint), on its own thread: a trial that keeps no files makes
  // none, and the mkdir (100-200 us on a busy disk) is not between two
  // trials of a slot.
  const std::string& trial_dir() const override {
    if (!start_.trial_dir.empty()) std::call_once(folder_made_, [this] { make_folder(); });
    return start_.trial_dir;
  }
  std::string make_checkpoint_dir() override {
    trial_dir();
    return SessionBase::make_checkpoint_dir();
  }
  const void* mpi_communicator_handle() const override { return nullptr; }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  bool stop_requested() const override { return job_->cancelled; }

 protected:
  bool send(const Json& metrics, const std::string& checkpoint_dir) override {
    if (job_->cancelled) return false;
    // Only the event holds the promise: a driver that drops the event
    // without answering (it stopped: lost its lease, the disk filled) breaks
    // it, and the trial stops at once instead of waiting to be abandoned.
    auto decided = std::make_shared<std::promise<Verdict>>();
    answer_ = decided->get_future();
    TrialEvent event;
    event.kind = TrialEvent::Kind::kResult;
    event.attempt = job_->id;
    event.metrics = metrics;
    event.checkpoint = checkpoint_dir;
    event.reply = [decided = std::move(decided)](Verdict v) { decided->set_value(v); };
    return core_->push(std::move(event));
  }

  Verdict await_answer(int64_t iteration) override {
    Verdict answer = Verdict::kStop;
    try {
      answer = answer_.get();
    } catch (const std::future_error&) {
      return Verdict::kStop;  // not acknowledged: nothing to log
    }
    log_ack(start_, iteration, answer);
    return answer;
  }

 private:
  std::shared_ptr<ThreadExecutor::Core> core_;
  std::shared_ptr<ThreadExecutor::Core::Job> job_;
  std::future<Verdict> answer_;  // to the result sent last
  mutable std::once_flag folder_made_;  // not made when make_folder() threw: the next call tries again

  void make_folder() const {
    profile::Scope timed(profile::Part::kFolder);
    std::error_code ec;
    std::filesystem::create_directories(start_.trial_dir, ec);
    if (ec) throw Error("cannot make the trial's folder " + start_.trial_dir + ": " + ec.message());
  }
};

// Runs one job; true if the worker now counts as idle (it reported the end:
// a start() that follows the event must not make a thread for nothing).
bool run_job(const std::shared_ptr<ThreadExecutor::Core>& core, const std::shared_ptr<ThreadExecutor::Core::Job>& job) {
  TrialEvent outcome;
  outcome.attempt = job->id;
  outcome.kind = TrialEvent::Kind::kEnded;
  try {
    // The job's start is the session's now (nothing else reads it): moved,
    // not copied (its config and the sweep's setup).
    InProcessSession session(std::move(job->trial), core, job);
    core->function(session);
  } catch (const TrialStopped&) {
    outcome.stopped = true;
  } catch (const OutOfDescriptorsError& e) {
    outcome.kind = TrialEvent::Kind::kFailed;
    outcome.message = e.what();
    outcome.out_of_descriptors = true;
  } catch (const std::exception& e) {
    outcome.kind = TrialEvent::Kind::kFailed;
    outcome.message = e.what();
  } catch (...) {
    outcome.kind = TrialEvent::Kind::kFailed;
    outcome.message = "unknown exception";
  }
  std::lock_guard<std::mutex> lock(core->mutex);
  if (job->abandoned) return false;  // reported when it was abandoned
  core->live.erase(job->id);
  core->idle += 1;
  if (!core->closed) core->sink->push(std::move(outcome));
  return true;
}

// A worker thread: takes jobs until the executor closes, or until its job is
// abandoned (then it exits and is never joined).
void work(std::shared_ptr<ThreadExecutor::Core> core, std::shared_ptr<ThreadExecutor::Core::Worker> self) {
  bool idle = false;  // counted idle already (by run_job)
  while (true) {
    std::shared_ptr<ThreadExecutor::Core::Job> job;
    {
      std::unique_lock<std::mutex> lock(core->mutex);
      if (!idle) core->idle += 1;
      core->wake.wait(lock, [&] { return core->closed || !core->queue.empty(); });
      core->idle -= 1;
      if (core->queue.empty()) {
        self->exited = true;
        return;
      }
      job = std::move(core->queue.front());
      core->queue.pop_front();
      self->job = job;
    }
    idle = run_job(core, job);
    std::lock_guard<std::mutex> lock(core->mutex);
    self->job.reset();
    core->finished.notify_all();
    if (job->abandoned) {
      self->exited = true;
      return;
    }
  }
}

}  // namespace

ThreadExecutor::ThreadExecutor(EventSink& events, const Clock& clock, TrainableFunction function, double stop_grace_s)
    : core_(std::make_shared<Core>()) {
  core_->sink = &events;
  core_->clock = &clock;
  core_->function = std::move(function);
  core_->stop_grace_s = stop_grace_s;
}

ThreadExecutor::~ThreadExecutor() { shutdown(); }

void ThreadExecutor::start(const AttemptId& attempt, TrialStart trial, const Placement&) {
  auto job = std::make_shared<Core::Job>();
  job->id = attempt;
  job->trial = std::move(trial);
  std::lock_guard<std::mutex> lock(core_->mutex);
  if (core_->closed) return;
  core_->queue.push_back(job);
  core_->live[attempt] = job;
  if (core_->idle < static_cast<int>(core_->queue.size())) {
    auto worker = std::make_shared<Core::Worker>();
    worker->thread = std::thread(work, core_, worker);
    core_->workers.push_back(std::move(worker));
  }
  core_->wake.notify_one();
}

void ThreadExecutor::cancel(const AttemptId& attempt, const std::string& reason) {
  std::lock_guard<std::mutex> lock(core_->mutex);
  auto it = core_->live.find(attempt);
  if (it == core_->live.end()) return;
  auto job = it->second;
  for (auto q = core_->queue.begin(); q != core_->queue.end(); ++q) {
    if (*q != job) continue;
    core_->queue.erase(q);  // never started
    core_->live.erase(it);
    TrialEvent ended;
    ended.attempt = attempt;
    ended.stopped = true;
    if (!core_->closed) core_->sink->push(std::move(ended));
    return;
  }
  if (!job->cancelled.exchange(true)) job->cancelled_at = core_->clock->now();
  // Silent for the whole result timeout: no reason to expect a report within
  // the grace; the next poll() abandons it (a report it still makes is stopped).
  if (reason == kCancelHung) job->cancelled_at = core_->clock->now() - core_->stop_grace_s;
}

void ThreadExecutor::poll() {
  std::lock_guard<std::mutex> lock(core_->mutex);
  const double now = core_->clock->now();
  for (auto it = core_->live.begin(); it != core_->live.end();) {
    auto& job = it->second;
    if (!job->cancelled || now - job->cancelled_at < core_->stop_grace_s) {
      ++it;
      continue;
    }
    job->abandoned = true;
    TrialEvent failed;
    failed.kind = TrialEvent::Kind::kFailed;
    failed.attempt = job->id;
    failed.lost = true;
    failed.message = "the trial did not stop within " + std::to_string(static_cast<int>(core_->stop_grace_s)) +
                     " s of being cancelled; its thread was abandoned";
    if (!core_->closed) core_->sink->push(std::move(failed));
    it = core_->live.erase(it);
  }
}

int ThreadExecutor::live() const {
  std::lock_guard<std::mutex> lock(core_->mutex);
  return static_cast<int>(core_->live.size());
}

int ThreadExecutor::threads() const {
  std::lock_guard<std::mutex> lock(core_->mutex);
  return static_cast<int>(core_->workers.size());
}

// Waits (real time: the process is ending the sweep) up to stop_grace_s for
// running trials to stop at their next report; joins every thread that is
// free, detaches the ones still stuck in a trial.
void ThreadExecutor::shutdown() {
  std::unique_lock<std::mutex> lock(core_->mutex);
  if (core_->closed) return;
  core_->closed = true;
  core_->queue.clear();
  for (auto& [id, job] : core_->live) job->cancelled = true;
  core_->wake.notify_all();
  auto busy = [&] {
    for (const auto& worker : core_->workers)
      if (worker->job && !worker->job->abandoned) return true;
    return false;
  };
  core_->finished.wait_for(lock, std::chrono::duration<double>(core_->stop_grace_s), [&] { return !busy(); });
  std::vector<std::pair<std::shared_ptr<Core::Worker>, bool>> workers;  // (worker, stuck)
  for (auto& worker : core_->workers) {
    if (worker->job) worker->job->abandoned = true;  // it exits when (if) its trial returns
    workers.emplace_back(worker, worker->job != nullptr);
  }
  core_->live.clear();
  lock.unlock();
  for (auto& [worker, stuck] : workers) {
    if (stuck) {
      worker->thread.detach();
    } else if (worker->thread.joinable()) {
      worker->thread.join();
    }
  }
}

ExecutorKind thread_executor_kind() {
  ExecutorKind kind;
  kind.name = "threads";
  kind.priority = 100;
  // C++ functions, and registered in-process trainables of one worker.
  kind.accepts = [](const ExecutorContext& c) {
    if (c.function) return true;
    // With other hosts, in-process trainables run in (one-rank) groups there.
    return c.single_host && c.trainable && c.trainable->info.in_process && c.spec.resources.workers == 1 &&
           !c.spec.resources.use_mpi;
  };
  kind.create = [](const ExecutorContext& c) -> std::unique_ptr<TrialExecutor> {
    return std::make_unique<ThreadExecutor>(c.events, c.clock, c.function ? c.function : c.trainable->function);
  };
  return kind;
}

}  // namespace tune::internal
