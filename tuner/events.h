// Internal: the driver's event queue. Trial threads and worker-group reader
// threads push; the driver's event loop pops in batches (one store commit per
// batch).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace tune::internal {

struct Event {
  enum class Kind {
    kResult,          // payload: {metrics, checkpoint}; reply(action) must be called
    kDone,            // the trainable returned (or stopped on request)
    kError,           // message: what went wrong
    kGroupConnected,  // group: id; fd: rank 0's connection
    kGroupExited,     // group: id; status: exit status of mpirun
  };
  Kind kind = Kind::kDone;
  int64_t trial_index = -1;
  int attempt = 0;  // which start of the trial this event belongs to
  int group = -1;
  int fd = -1;
  int status = 0;
  nlohmann::json payload;
  std::string message;
  std::function<void(const std::string& action)> reply;
};

class EventQueue {
 public:
  void push(Event event) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(std::move(event));
    }
    ready_.notify_one();
  }

  // Waits up to `timeout` for at least one event, then takes everything queued.
  std::deque<Event> pop_all(std::chrono::microseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait_for(lock, timeout, [this] { return !events_.empty(); });
    std::deque<Event> taken;
    taken.swap(events_);
    return taken;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Event> events_;
};

}  // namespace tune::internal
