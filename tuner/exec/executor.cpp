#include "tuner/exec/executor.h"

#include <algorithm>
#include <mutex>

#include "base/error.h"
#include "tuner/exec/group_executor.h"
#include "tuner/exec/thread_executor.h"

namespace tune::internal {

void EventSink::push(TrialEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
  }
  ready_.notify_one();
}

void EventSink::wake() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    woken_ = true;
  }
  ready_.notify_one();
}

std::deque<TrialEvent> EventSink::take(std::chrono::microseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait_for(lock, timeout, [this] { return woken_ || !events_.empty(); });
  woken_ = false;
  std::deque<TrialEvent> taken;
  taken.swap(events_);
  return taken;
}

int Placement::ranks() const {
  int n = 0;
  for (const auto& share : hosts) n += share.ranks;
  return n;
}

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<ExecutorKind> kinds;  // highest priority first
};

Registry& registry() {
  static Registry instance;
  return instance;
}

// The built-in kinds, registered on first use (a static registrar in each
// executor's file would be dropped by the linker from the static library).
void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_executor(thread_executor_kind());
    register_executor(group_executor_kind());
  });
}

}  // namespace

void register_executor(ExecutorKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.kinds.erase(std::remove_if(r.kinds.begin(), r.kinds.end(), [&](const ExecutorKind& k) { return k.name == kind.name; }),
                r.kinds.end());
  auto at = std::find_if(r.kinds.begin(), r.kinds.end(), [&](const ExecutorKind& k) { return k.priority < kind.priority; });
  r.kinds.insert(at, std::move(kind));
}

std::unique_ptr<TrialExecutor> make_executor(const ExecutorContext& context, std::string* chosen) {
  register_builtins();
  std::vector<ExecutorKind> kinds;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    kinds = r.kinds;
  }
  for (const auto& kind : kinds) {
    if (!kind.accepts(context)) continue;
    if (chosen) *chosen = kind.name;
    return kind.create(context);
  }
  throw ConfigError("no executor can run this sweep's trials");
}

std::vector<std::string> executor_names() {
  register_builtins();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& kind : r.kinds) names.push_back(kind.name);
  return names;
}

}  // namespace tune::internal
