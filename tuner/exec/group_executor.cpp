#include "tuner/exec/group_executor.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "base/error.h"
#include "base/names.h"
#include "tuner/exec/checkpoint_transfer.h"
#include "tuner/exec/group_connection.h"
#include "tuner/exec/mpi_launcher.h"
#include "tuner/exec/mpirun_log.h"
#include "tuner/exec/protocol.h"
#include "tuner/exec/transport.h"
#include "tuner/spec/run_config.h"
#include "tuner/spec/sweep_spec.h"

namespace tune::internal {
namespace {

bool same_placement(const Placement& a, const Placement& b) {
  if (a.hosts.size() != b.hosts.size()) return false;
  for (size_t i = 0; i < a.hosts.size(); ++i) {
    if (a.hosts[i].host != b.hosts[i].host || a.hosts[i].ranks != b.hosts[i].ranks || a.hosts[i].gpus != b.hosts[i].gpus)
      return false;
  }
  return true;
}

// "0,1|2,3": the GPUs of each rank, in rank order.
std::string rank_gpus(const Placement& placement) {
  std::vector<std::string> ranks;
  for (const auto& share : placement.hosts) {
    for (int r = 0; r < share.ranks; ++r) {
      std::string ids;
      for (int g = 0; g < placement.gpus_per_rank; ++g)
        ids += (g ? "," : "") + std::to_string(share.gpus[static_cast<size_t>(r * placement.gpus_per_rank + g)]);
      ranks.push_back(ids);
    }
  }
  return join_names(ranks, "|");
}

}  // namespace

struct GroupExecutor::Group {
  enum class Phase { kStarting, kIdle, kBusy, kDead };
  int id = 0;
  Placement placement;
  pid_t pid = -1;  // mpirun, leader of its own process group
  Phase phase = Phase::kStarting;
  std::shared_ptr<GroupConnection> connection;
  std::optional<AttemptId> attempt;
  std::optional<TrialStart> trial;  // waiting for the group to connect
  bool cancelled = false;
  std::string log_path;
  std::thread reader;
};

struct GroupExecutor::State {
  EventSink* sink = nullptr;
  GroupExecutorOptions options;
  mutable std::mutex mutex;
  std::vector<std::unique_ptr<Group>> groups;
  int next_id = 0;
  std::unique_ptr<Listener> listener;
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
    failed.lost = group.cancelled || !trainable_crashed(group.log_path);
    failed.message = message;
    if (const std::string said = rank_error(group.log_path); !said.empty()) {
      failed.message = said + " (" + message + ")";
    } else if (const std::string tail = last_lines(group.log_path, 3); !tail.empty()) {
      failed.message += ": " + tail;
    }
    sink->push(std::move(failed));
    group.attempt.reset();
    group.trial.reset();
  }

  // The run message; with streaming, the checkpoint's files follow it.
  void send_run(Group& group) {
    group.phase = Group::Phase::kBusy;
    TrialStart trial = std::move(*group.trial);
    group.trial.reset();
    if (!options.stream_checkpoints || !trial.checkpoint) {
      group.connection->send(RunMessage{trial});
      return;
    }
    const std::string dir = trial.checkpoint->path;
    group.connection->post([trial, dir](int fd) mutable {
      std::vector<CheckpointFile> files;
      try {
        files = list_checkpoint(dir);
      } catch (const Error&) {
        trial.checkpoint.reset();  // gone from the driver's disk: a fresh start
      }
      trial.checkpoint_files = trial.checkpoint ? manifest_json(files) : Json();
      return send_message(fd, encode(DownMessage{RunMessage{trial}})) &&
             (!trial.checkpoint || send_checkpoint(fd, dir, files));
    });
  }

  void launch(Group& group) {
    MpiLaunch launch;
    launch.ranks = group.placement.ranks();
    launch.program = {options.executable};
    launch.env = {{kEndpointEnv, listener->endpoint()}, {kTokenEnv, listener->token()}, {kGroupEnv, std::to_string(group.id)}};
    // Ranks of a trial without GPUs see none (as Ray does), so a CUDA build
    // does not take a GPU another trial was given.
    launch.env.emplace_back(kRankGpusEnv, group.placement.gpus_per_rank > 0 ? rank_gpus(group.placement) : kNoGpus);
    for (const auto& share : group.placement.hosts)
      if (!share.host.empty()) launch.hosts.emplace_back(share.host, share.ranks);
    launch.network = options.network;
    launch.driver_address = options.listen_address;
    launch.log_path = group.log_path;
    group.pid = spawn_mpirun(launch);
  }

  // A streamed checkpoint into the driver's copy of the trial's directory.
  // Returns the path ("" when none arrived whole) and why not in `error`.
  std::string receive(const AttemptId& attempt, ResultMessage& result, int fd, bool* broken, std::string* error) {
    auto files = manifest_from_json(result.files);
    const std::string name = std::filesystem::path(result.checkpoint).filename().string();
    if (!files || name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
      *broken = true;  // not our protocol
      return "";
    }
    char trial[32];
    std::snprintf(trial, sizeof trial, "trial_%05lld", static_cast<long long>(attempt.trial));
    // No attempt (it was cancelled meanwhile): the bytes are read and dropped.
    const bool keep = attempt.trial >= 0;
    const std::string target = options.experiment_dir + "/" + (keep ? trial + ("/" + name) : ".dropped_checkpoint");
    *error = receive_checkpoint(fd, *files, target);
    if (!keep) {
      std::error_code ec;
      std::filesystem::remove_all(target, ec);
      *broken = !error->empty();
      return "";
    }
    *broken = error->find("broke off") != std::string::npos || error->find("ended early") != std::string::npos;
    return error->empty() ? target : "";
  }
  // Rank 0's messages become events; at EOF the group is reaped.
  void read(int id, std::shared_ptr<GroupConnection> connection, pid_t pid) {
    while (auto frame = receive_message(connection->fd())) {
      auto message = decode_up(*frame);
      if (!message) break;  // not our protocol: treat the group as gone
      std::optional<AttemptId> attempt;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (Group* group = find(id)) attempt = group->attempt;
      }
      TrialEvent event;
      if (auto* result = std::get_if<ResultMessage>(&*message)) {
        event.kind = TrialEvent::Kind::kResult;
        event.metrics = std::move(result->metrics);
        if (result->files.is_null()) {
          event.checkpoint = std::move(result->checkpoint);
        } else {
          // Bytes follow the message: they are read (or the connection ends) even without an attempt.
          bool broken = false;
          event.checkpoint = receive(attempt.value_or(AttemptId{}), *result, connection->fd(), &broken, &event.message);
          if (broken) break;
        }
        event.reply = [connection](Verdict v) { connection->send(VerdictMessage{v}); };
        if (!attempt) {
          // After shutdown() the group is being ended: a result nobody will
          // store gets no answer (an answer is an acknowledgement).
          if (!stopping) event.reply(Verdict::kStop);
          continue;
        }
      } else if (auto* done = std::get_if<DoneMessage>(&*message)) {
        event.kind = TrialEvent::Kind::kEnded;
        event.stopped = done->stopped;
      } else if (auto* error = std::get_if<ErrorMessage>(&*message)) {
        event.kind = TrialEvent::Kind::kFailed;
        event.message = error->message;  // a fatal error ends the group: its exit follows
      } else {
        continue;
      }
      std::lock_guard<std::mutex> lock(mutex);
      Group* group = find(id);
      if (!group || !group->attempt || !attempt || !(*group->attempt == *attempt)) {
        if (event.reply && !stopping) event.reply(Verdict::kStop);
        continue;
      }
      event.attempt = *attempt;
      if (event.kind != TrialEvent::Kind::kResult) {
        group->attempt.reset();
        group->phase = Group::Phase::kIdle;
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
    // The hello comes at once from a real worker.
    auto frame = receive_message(fd);
    auto hello = frame ? decode_up(*frame) : std::nullopt;
    std::lock_guard<std::mutex> lock(mutex);
    Group* group = hello && std::holds_alternative<HelloMessage>(*hello) ? find(std::get<HelloMessage>(*hello).group)
                                                                         : nullptr;
    if (!group || group->phase != Group::Phase::kStarting || stopping) {
      ::close(fd);
      return;
    }
    group->connection = std::make_shared<GroupConnection>(fd);
    group->phase = Group::Phase::kIdle;
    group->reader = std::thread(&State::read, this, group->id, group->connection, group->pid);
    if (group->trial) send_run(*group);
  }
};

GroupExecutor::GroupExecutor(EventSink& events, GroupExecutorOptions options) : state_(std::make_shared<State>()) {
  state_->sink = &events;
  state_->options = std::move(options);
  if (state_->options.executable.empty()) state_->options.executable = self_executable();
  state_->listener = state_->options.listen_address.empty() ? Listener::unix_socket()
                                                            : Listener::tcp(state_->options.listen_address);
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
  trial.stream_checkpoints = state_->options.stream_checkpoints;
  if (trial.stream_checkpoints) trial.trial_dir.clear();  // the worker's own scratch
  Group* chosen = nullptr;
  int idle_ranks = 0;
  for (auto& group : state_->groups) {
    if (group->phase != Group::Phase::kIdle) continue;
    if (!chosen && same_placement(group->placement, placement)) {
      chosen = group.get();
    } else {
      idle_ranks += group->placement.ranks();
    }
  }
  if (!chosen) {
    // Idle groups elsewhere hold memory: close the oldest beyond the limit.
    for (auto& group : state_->groups) {
      if (idle_ranks + placement.ranks() <= state_->options.idle_rank_limit) break;
      if (group->phase != Group::Phase::kIdle) continue;
      idle_ranks -= group->placement.ranks();
      group->connection->send(ShutdownMessage{});  // its reader reaps it
      group->phase = Group::Phase::kDead;
    }
    auto group = std::make_unique<Group>();
    group->id = state_->next_id++;
    group->placement = placement;
    group->log_path = state_->options.log_dir + "/group_" + std::to_string(group->id) + ".log";
    chosen = group.get();
    state_->groups.push_back(std::move(group));
  }
  chosen->attempt = attempt;
  chosen->trial = std::move(trial);
  chosen->cancelled = false;
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
      group->cancelled = true;
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
    options.experiment_dir = c.experiment_dir;
    options.listen_address = c.listen_address;
    options.network = c.network;
    options.stream_checkpoints = !c.single_host && !c.spec.checkpoint.shared_filesystem;
    std::filesystem::create_directories(options.log_dir);
    return std::make_unique<GroupExecutor>(c.events, options);
  };
  return kind;
}

}  // namespace tune::internal
