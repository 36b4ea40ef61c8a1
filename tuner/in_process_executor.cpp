#include "tuner/in_process_executor.h"

#include <future>

namespace tune::internal {
namespace {

class InProcessSession : public SessionBase {
 public:
  InProcessSession(TrialStart start, EventQueue& events, int attempt)
      : SessionBase(std::move(start)), events_(events), attempt_(attempt) {}

  MPI_Comm communicator() const override { return MPI_COMM_NULL; }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }

 protected:
  std::string exchange(const Json& metrics, const std::string& checkpoint_dir) override {
    std::promise<std::string> decision;
    std::future<std::string> answer = decision.get_future();
    Event event;
    event.kind = Event::Kind::kResult;
    event.trial_index = start_.trial_index;
    event.attempt = attempt_;
    event.payload = {{"metrics", metrics}, {"checkpoint", checkpoint_dir}};
    // shared_ptr: std::function needs a copyable callable.
    auto shared = std::make_shared<std::promise<std::string>>(std::move(decision));
    event.reply = [shared](const std::string& action) { shared->set_value(action); };
    events_.push(std::move(event));
    return answer.get();
  }

 private:
  EventQueue& events_;
  int attempt_;
};

}  // namespace

InProcessExecutor::InProcessExecutor(EventQueue& events, int threads) : events_(events) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      while (true) {
        Job job;
        {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [this] { return closing_ || !jobs_.empty(); });
          if (jobs_.empty()) return;
          job = std::move(jobs_.front());
          jobs_.pop_front();
        }
        run(std::move(job));
      }
    });
  }
}

InProcessExecutor::~InProcessExecutor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
    jobs_.clear();
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void InProcessExecutor::start(TrialStart start, TrainableFunction function, int attempt) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(Job{std::move(start), std::move(function), attempt});
    ++active_;
  }
  wake_.notify_one();
}

void InProcessExecutor::run(Job job) {
  Event outcome;
  outcome.trial_index = job.start.trial_index;
  outcome.attempt = job.attempt;
  outcome.kind = Event::Kind::kDone;
  try {
    InProcessSession session(std::move(job.start), events_, job.attempt);
    job.function(session);
  } catch (const TrialStopped&) {
    outcome.payload = {{"stopped", true}};
  } catch (const std::exception& e) {
    outcome.kind = Event::Kind::kError;
    outcome.message = e.what();
  } catch (...) {
    outcome.kind = Event::Kind::kError;
    outcome.message = "unknown exception";
  }
  events_.push(std::move(outcome));
  --active_;
}

}  // namespace tune::internal
