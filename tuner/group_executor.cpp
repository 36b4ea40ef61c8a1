#include "tuner/group_executor.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "base/error.h"
#include "tuner/mpi_launcher.h"
#include "tuner/protocol.h"
#include "tuner/tuner.h"

namespace tune::internal {
namespace {

// Rank 0's connection. The reader closes it; replies check it is still open,
// so a verdict never goes to a later connection that reused the number.
struct Connection {
  explicit Connection(int fd) : fd(fd) {}
  std::mutex mutex;
  int fd;
  bool send(const DownMessage& message) {
    std::lock_guard<std::mutex> lock(mutex);
    return fd >= 0 && send_message(fd, encode(message));
  }
  void close() {
    std::lock_guard<std::mutex> lock(mutex);
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mutex);
    return fd < 0;
  }
};

std::string last_lines(const std::string& path, size_t count) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  std::string tail;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i)
    tail += (tail.empty() ? "" : " | ") + lines[i];
  return tail;
}

}  // namespace

struct GroupExecutor::Group {
  enum class Phase { kStarting, kIdle, kBusy, kDead };
  int id = 0;
  int ranks = 1;
  pid_t pid = -1;  // mpirun, leader of its own process group
  Phase phase = Phase::kStarting;
  std::shared_ptr<Connection> connection;
  std::optional<AttemptId> attempt;
  std::optional<TrialStart> trial;  // waiting for the group to connect
  std::string log_path;
  std::thread reader;
};

struct GroupExecutor::State {
  EventSink* sink = nullptr;
  GroupExecutorOptions options;
  mutable std::mutex mutex;
  std::vector<std::unique_ptr<Group>> groups;
  int next_id = 0;
  std::unique_ptr<UnixListener> listener;
  std::thread acceptor;
  std::atomic<bool> stopping{false};

  Group* find(int id) {
    for (auto& group : groups)
      if (group->id == id) return group.get();
    return nullptr;
  }

  void fail(Group& group, const std::string& message) {
    if (!group.attempt) return;
    TrialEvent failed;
    failed.kind = TrialEvent::Kind::kFailed;
    failed.attempt = *group.attempt;
    failed.lost = true;
    failed.message = message;
    const std::string tail = last_lines(group.log_path, 3);
    if (!tail.empty()) failed.message += ": " + tail;
    sink->push(std::move(failed));
    group.attempt.reset();
    group.trial.reset();
  }

  void send_run(Group& group) {
    group.phase = Group::Phase::kBusy;
    group.connection->send(RunMessage{*group.trial});  // a failed send shows as the group's exit
    group.trial.reset();
  }

  void launch(Group& group) {
    MpiLaunch launch;
    launch.ranks = group.ranks;
    launch.program = {options.executable};
    launch.env = {{kSocketEnv, listener->path()}, {kGroupEnv, std::to_string(group.id)}};
    launch.log_path = group.log_path;
    group.pid = spawn_mpirun(launch);
  }

  // Rank 0's messages become events; at EOF the group is reaped.
  void read(int id, std::shared_ptr<Connection> connection, pid_t pid, int fd) {
    while (auto frame = receive_message(fd)) {
      auto message = decode_up(*frame);
      if (!message) break;  // not our protocol: treat the group as gone
      std::lock_guard<std::mutex> lock(mutex);
      Group* group = find(id);
      if (!group || !group->attempt) continue;
      TrialEvent event;
      event.attempt = *group->attempt;
      if (auto* result = std::get_if<ResultMessage>(&*message)) {
        event.kind = TrialEvent::Kind::kResult;
        event.metrics = std::move(result->metrics);
        event.checkpoint = std::move(result->checkpoint);
        event.reply = [connection](Verdict v) { connection->send(VerdictMessage{v}); };
      } else if (auto* done = std::get_if<DoneMessage>(&*message)) {
        event.kind = TrialEvent::Kind::kEnded;
        event.stopped = done->stopped;
        group->attempt.reset();
        group->phase = Group::Phase::kIdle;
      } else if (auto* error = std::get_if<ErrorMessage>(&*message)) {
        event.kind = TrialEvent::Kind::kFailed;
        event.message = error->message;
        group->attempt.reset();
        group->phase = Group::Phase::kIdle;  // a fatal error ends the group: its exit follows
      } else {
        continue;
      }
      sink->push(std::move(event));
    }
    connection->close();
    const int status = reap(pid, std::chrono::milliseconds(static_cast<int>(options.stop_grace_s * 1000)));
    std::lock_guard<std::mutex> lock(mutex);
    if (Group* group = find(id)) {
      fail(*group, "worker group exited with status " + std::to_string(status));
      group->phase = Group::Phase::kDead;
    }
  }

  void on_connected(int fd) {
    // The hello comes at once from a real worker: don't let a stray
    // connection block the acceptor.
    timeval timeout{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    auto frame = receive_message(fd);
    auto hello = frame ? decode_up(*frame) : std::nullopt;
    timeval none{0, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    std::lock_guard<std::mutex> lock(mutex);
    Group* group = hello && std::holds_alternative<HelloMessage>(*hello)
                       ? find(std::get<HelloMessage>(*hello).group)
                       : nullptr;
    if (!group || group->phase != Group::Phase::kStarting || stopping) {
      ::close(fd);
      return;
    }
    group->connection = std::make_shared<Connection>(fd);
    group->phase = Group::Phase::kIdle;
    group->reader = std::thread(&State::read, this, group->id, group->connection, group->pid, fd);
    if (group->trial) send_run(*group);
  }
};

GroupExecutor::GroupExecutor(EventSink& events, GroupExecutorOptions options) : state_(std::make_shared<State>()) {
  state_->sink = &events;
  state_->options = std::move(options);
  if (state_->options.executable.empty()) state_->options.executable = self_executable();
  state_->listener = std::make_unique<UnixListener>();
  State* state = state_.get();
  state_->acceptor = std::thread([state] {
    while (!state->stopping) {
      const int fd = state->listener->accept_one(100);
      if (fd >= 0) state->on_connected(fd);
    }
  });
}

GroupExecutor::~GroupExecutor() { shutdown(); }

void GroupExecutor::start(const AttemptId& attempt, TrialStart trial, const Placement& placement) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const int ranks = placement.ranks();
  Group* chosen = nullptr;
  int idle_ranks = 0;
  for (auto& group : state_->groups) {
    if (group->phase != Group::Phase::kIdle) continue;
    if (!chosen && group->ranks == ranks) {
      chosen = group.get();
    } else {
      idle_ranks += group->ranks;
    }
  }
  if (!chosen) {
    // Idle groups of other sizes hold memory: close the oldest beyond the limit.
    for (auto& group : state_->groups) {
      if (idle_ranks + ranks <= state_->options.idle_rank_limit) break;
      if (group->phase != Group::Phase::kIdle) continue;
      idle_ranks -= group->ranks;
      group->connection->send(ShutdownMessage{});  // its reader reaps it
      group->phase = Group::Phase::kDead;
    }
    auto group = std::make_unique<Group>();
    group->id = state_->next_id++;
    group->ranks = ranks;
    group->log_path = state_->options.log_dir + "/group_" + std::to_string(group->id) + ".log";
    chosen = group.get();
    state_->groups.push_back(std::move(group));
  }
  chosen->attempt = attempt;
  chosen->trial = std::move(trial);
  if (chosen->phase == Group::Phase::kIdle) {
    state_->send_run(*chosen);
    return;
  }
  try {
    state_->launch(*chosen);
  } catch (const Error& e) {
    state_->fail(*chosen, e.what());
    chosen->phase = Group::Phase::kDead;
  }
}

void GroupExecutor::cancel(const AttemptId& attempt, const std::string&) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (auto& group : state_->groups) {
    if (group->attempt && *group->attempt == attempt && group->pid > 0) {
      // Busy: SIGTERM; the reader reaps (SIGKILL after the grace) and
      // reports. Starting: poll() notices the exit.
      ::kill(-group->pid, group->connection ? SIGTERM : SIGKILL);
    }
  }
}

void GroupExecutor::poll() {
  std::vector<std::unique_ptr<Group>> dead;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (auto& group : state_->groups) {
      if (group->phase != Group::Phase::kStarting || group->pid <= 0) continue;
      int status = 0;
      if (::waitpid(group->pid, &status, WNOHANG) != group->pid) continue;
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      state_->fail(*group, "worker group exited with status " + std::to_string(code) + " before it connected");
      group->phase = Group::Phase::kDead;
    }
    // Dead groups whose reader has finished (or that never had one) go.
    auto& groups = state_->groups;
    for (auto it = groups.begin(); it != groups.end();) {
      const bool reader_done = !(*it)->connection || (*it)->connection->closed();
      if ((*it)->phase == Group::Phase::kDead && !(*it)->attempt && reader_done) {
        dead.push_back(std::move(*it));
        it = groups.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& group : dead)
    if (group->reader.joinable()) group->reader.join();
}

int GroupExecutor::live() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  int n = 0;
  for (const auto& group : state_->groups) n += group->attempt.has_value();
  return n;
}

int GroupExecutor::live_groups() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  int n = 0;
  for (const auto& group : state_->groups) n += group->phase != Group::Phase::kDead;
  return n;
}

int GroupExecutor::launched_groups() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->next_id;
}

void GroupExecutor::shutdown() {
  if (state_->stopping.exchange(true)) return;
  std::vector<std::unique_ptr<Group>> groups;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (auto& group : state_->groups) {
      if (group->phase == Group::Phase::kIdle) {
        group->connection->send(ShutdownMessage{});  // the reader reaps it
      } else if (group->connection) {
        ::kill(-group->pid, SIGTERM);  // busy: the attempt is abandoned (resume restarts it)
      } else if (group->pid > 0 && group->phase == Group::Phase::kStarting) {
        ::kill(-group->pid, SIGKILL);  // never connected: no reader
        reap(group->pid, std::chrono::milliseconds(2000));
      }
      group->attempt.reset();  // no events after shutdown
    }
  }
  if (state_->acceptor.joinable()) state_->acceptor.join();
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    groups.swap(state_->groups);  // readers find nothing: they only reap
  }
  for (auto& group : groups)
    if (group->reader.joinable()) group->reader.join();
}

ExecutorKind group_executor_kind() {
  ExecutorKind kind;
  kind.name = "mpi";
  kind.priority = 50;
  kind.accepts = [](const ExecutorContext& c) { return c.trainable != nullptr && !c.function; };
  kind.create = [](const ExecutorContext& c) -> std::unique_ptr<TrialExecutor> {
    GroupExecutorOptions options;
    options.executable = c.run.worker_executable;
    options.log_dir = c.experiment_dir + "/logs";
    options.idle_rank_limit = c.slots;  // idle ranks sleep but hold memory
    std::filesystem::create_directories(options.log_dir);
    return std::make_unique<GroupExecutor>(c.events, options);
  };
  return kind;
}

}  // namespace tune::internal
