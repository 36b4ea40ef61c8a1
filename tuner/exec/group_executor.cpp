#include "tuner/exec/group_executor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "base/error.h"
#include "base/names.h"
#include "base/options.h"
#include "storage/store.h"
#include "tuner/exec/checkpoint_transfer.h"
#include "tuner/exec/clock.h"
#include "tuner/exec/group_connection.h"
#include "tuner/exec/host_checks.h"
#include "tuner/exec/mpi_launcher.h"
#include "tuner/exec/mpirun_log.h"
#include "tuner/exec/protocol.h"
#include "tuner/exec/rotating_log.h"
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

// The host of `rank` in a placement (ranks are laid out host after host).
std::string host_of_rank(const Placement& placement, int rank) {
  for (const auto& share : placement.hosts) {
    if (rank < share.ranks) return share.host;
    rank -= share.ranks;
  }
  return "";
}

bool timed_out(int error) { return error == ETIMEDOUT || error == EHOSTUNREACH || error == ENETUNREACH; }

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
  bool hung = false;  // cancelled because it reported nothing in time
  std::string log_path;
  std::thread reader;
  // Across hosts: each other host's watch connection (rank 0's host is
  // watched through the connection itself).
  std::vector<std::pair<std::string, int>> watches;
  // The first host whose connection to the driver broke before the driver
  // ended the group, and whether it went silent (unreachable) rather than
  // closing (its processes died).
  std::optional<std::pair<std::string, bool>> first_break;
  double kill_at = 0;  // abandoned: SIGKILL and close at this time (steady clock)
  // Across hosts: killed if it has not connected by then (steady clock; 0: never).
  double start_deadline = 0;
  bool start_timed_out = false;
};

struct GroupExecutor::State {
  EventSink* sink = nullptr;
  GroupExecutorOptions options;
  mutable std::mutex mutex;
  std::vector<std::unique_ptr<Group>> groups;
  int next_id = 0;
  std::unique_ptr<Listener> listener;
  std::thread acceptor, watcher;
  int wake[2] = {-1, -1};  // wakes the watcher when the watches change
  std::atomic<bool> stopping{false};
  std::unique_ptr<HostChecks> checks;
  double logs_trimmed_at = 0;  // steady clock

  Group* find(int id) {
    for (auto& group : groups)
      if (group->id == id) return group.get();
    return nullptr;
  }

  void poke() {
    const char byte = 0;
    (void)!::write(wake[1], &byte, 1);
  }

  // A host of `group` lost its connection to the driver. Unless the driver
  // is ending the group itself, the first such host is the one to blame, and
  // the group is abandoned now: its processes elsewhere may never answer
  // (an unreachable host), so nothing waits for them.
  void link_broken(Group& group, const std::string& host, bool silent) {
    if (group.phase == Group::Phase::kDead && !group.attempt) return;
    // A group on this machine (host "") has no host to blame: its end is
    // read from its exit and log as before.
    if (!group.first_break && !host.empty() && (silent || (!group.cancelled && group.kill_at == 0)))
      group.first_break = {{host, silent}};
    abandon(group, silent);
  }

  // A host that went silent may never answer mpirun: the group is killed
  // now. One whose processes died is noticed by mpirun itself, which ends
  // the rest of the group; it is killed only if it has not within 2 s.
  void abandon(Group& group, bool now) {
    if (group.pid <= 0) return;
    if (now) {
      kill_group(group);
      if (group.connection) ::shutdown(group.connection->fd(), SHUT_RDWR);
    }
    if (group.kill_at == 0) group.kill_at = steady_seconds() + 2.0;
    close_watches(group);
  }

  // SIGKILL to a group's mpirun. One that never connected may be stuck in a
  // remote launch (an ssh that hangs): its launches go too (kill_mpirun).
  // One that connected had its launches done; those to a host that went
  // silent end with their connection, and what runs there ends itself.
  static void kill_group(const Group& group) {
    if (group.connection) {
      ::kill(-group.pid, SIGKILL);
    } else {
      kill_mpirun(group.pid);
    }
  }

  void close_watches(Group& group) {
    for (auto& [host, fd] : group.watches) ::shutdown(fd, SHUT_RDWR);  // the watcher closes them
    poke();
  }

  // The host to blame for a lost attempt, most certain first: one that went
  // silent; one mpirun's log names (a daemon it lost, a rank that died, a
  // peer ranks could not reach); the first whose processes died. With why.
  std::pair<std::string, std::string> culprit(const Group& group) {
    if (group.first_break && group.first_break->second)
      return {group.first_break->first, "stopped answering (unreachable for failure.host_timeout_s)"};
    for (const std::string& node : log_culprits(group.log_path)) {
      for (const auto& share : group.placement.hosts)
        if (share.host == node) return {node, "was lost by mpirun (its daemon or a rank there died or went silent)"};
    }
    if (group.first_break) return {group.first_break->first, "lost its processes"};
    return {"", ""};
  }

  void fail(Group& group, const std::string& message) {
    if (!group.attempt) return;
    TrialEvent failed;
    failed.kind = TrialEvent::Kind::kFailed;
    failed.attempt = *group.attempt;
    failed.lost = group.cancelled || !trainable_crashed(group.log_path);
    const auto [host, why] = culprit(group);
    if (!why.empty()) failed.lost_hosts = {host};
    if (group.hung) {
      failed.lost = !failed.lost_hosts.empty();  // else the trainable hung: its own failure
    } else if (failed.lost && failed.lost_hosts.empty()) {
      // No clue which host: each is suspect (the driver checks them).
      for (const auto& share : group.placement.hosts) failed.lost_hosts.push_back(share.host);
      failed.blame_uncertain = failed.lost_hosts.size() > 1;
    }
    const std::string log_name = "logs/" + std::filesystem::path(group.log_path).filename().string();
    failed.message = message;
    if (failed.lost && !why.empty() && !group.cancelled) {
      // The group's end is the host's doing: what mpirun printed about it
      // (often a crash of its own) says nothing more.
      failed.message = "host " + host + " " + why + "; the group ended (" + log_name + ")";
    } else if (const std::string said = rank_error(group.log_path); !said.empty()) {
      failed.message = said + " (" + message + ")";
    } else if (const std::string launch = launch_failure(group.log_path, options.executable); !launch.empty()) {
      failed.message = message + ": a host " + launch + " (" + log_name + ")";
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
    launch.env = {{kEndpointEnv, listener->endpoint()}, {kGroupEnv, std::to_string(group.id)}};
    for (auto& entry : secret_environment(listener->secret())) launch.env.push_back(std::move(entry));
    if (!options.listen_address.empty()) launch.env.emplace_back(kHostTimeoutEnv, std::to_string(options.host_timeout_s));
    // Ranks of a trial without GPUs see none (as Ray does), so a CUDA build
    // does not take a GPU another trial was given.
    launch.env.emplace_back(kRankGpusEnv, group.placement.gpus_per_rank > 0 ? rank_gpus(group.placement) : kNoGpus);
    for (const auto& share : group.placement.hosts)
      if (!share.host.empty()) launch.hosts.emplace_back(share.host, share.ranks);
    launch.network = options.network;
    launch.driver_address = options.listen_address;
    launch.log_path = group.log_path;
    launch.liveness_s = options.listen_address.empty() ? 0 : options.host_timeout_s;
    std::filesystem::create_directories(options.log_dir);
    group.pid = spawn_mpirun(launch);
    if (!options.listen_address.empty() && options.start_timeout_s > 0)
      group.start_deadline = steady_seconds() + options.start_timeout_s;
  }

  // The watches: a broken one abandons its group.
  void watch_hosts() {
    while (!stopping) {
      std::vector<pollfd> fds = {{wake[0], POLLIN, 0}};
      {
        std::lock_guard<std::mutex> lock(mutex);
        for (auto& group : groups)
          for (auto& [host, fd] : group->watches) fds.push_back({fd, POLLIN | POLLRDHUP, 0});
      }
      if (::poll(fds.data(), fds.size(), 200) <= 0) continue;
      if (fds[0].revents) {
        char drain[64];
        (void)!::read(wake[0], drain, sizeof drain);
      }
      std::lock_guard<std::mutex> lock(mutex);
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        char byte;
        const ssize_t n = ::recv(fds[i].fd, &byte, 1, MSG_DONTWAIT);
        if (n > 0) continue;  // a watch says nothing: ignore a stray byte
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        const bool silent = n < 0 && timed_out(errno);
        for (auto& group : groups) {
          auto& watches = group->watches;
          for (auto it = watches.begin(); it != watches.end(); ++it) {
            if (it->second != fds[i].fd) continue;
            const std::string host = it->first;
            ::close(it->second);
            watches.erase(it);
            link_broken(*group, host, silent);
            break;
          }
        }
      }
    }
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
    const std::string trial = trial_folder_name(attempt.trial);
    // No attempt (it was cancelled meanwhile): the bytes are read and dropped.
    const bool keep = attempt.trial >= 0;
    const std::string target = options.experiment_dir + "/" + (keep ? trial + ("/" + name) : ".dropped_checkpoint");
    const ReceivedCheckpoint got = receive_checkpoint(fd, *files, target);
    *error = got.error;
    *broken = got.stream_broken;
    if (!keep) {
      std::error_code ec;
      std::filesystem::remove_all(target, ec);
      return "";
    }
    return error->empty() ? target : "";
  }
  // Rank 0's messages become events; at EOF the group is reaped.
  void read(int id, std::shared_ptr<GroupConnection> connection, pid_t pid) {
    int why = 0;
    while (true) {
      errno = 0;
      auto frame = receive_message(connection->fd());
      if (!frame) {
        why = errno;
        break;
      }
      auto message = decode_up(*frame);
      if (!message) break;  // not our protocol: treat the group as gone
      std::string host_fault;
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
        host_fault = error->host_fault;
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
      if (const std::string host = host_of_rank(group->placement, 0); !host_fault.empty() && !host.empty()) {
        // Rank 0's host had no room left: the attempt is lost there, not failed.
        event.lost = true;
        event.lost_hosts = {host};
        event.message = "host " + host + ": " + host_fault + "; the trainable failed: " + event.message;
      }
      if (event.kind != TrialEvent::Kind::kResult) {
        group->attempt.reset();
        group->phase = Group::Phase::kIdle;
        if (event.kind == TrialEvent::Kind::kFailed && group->placement.ranks() > 1) {
          // A trainable that threw in a group of several ranks ends it
          // (kExitFatalTrial): the next trial gets a fresh group, never this
          // one on its way out.
          connection->send(ShutdownMessage{});
          group->phase = Group::Phase::kDead;
        }
      }
      sink->push(std::move(event));
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (Group* group = find(id); group && group->attempt)
        link_broken(*group, host_of_rank(group->placement, 0), timed_out(why));
    }
    connection->close();
    const int status = reap(pid, std::chrono::milliseconds(static_cast<int>(options.stop_grace_s * 1000)));
    std::lock_guard<std::mutex> lock(mutex);
    if (Group* group = find(id)) {
      group->pid = -1;  // reaped: its id may be another process's now
      fail(*group, "worker group exited with status " + std::to_string(status));
      group->phase = Group::Phase::kDead;
      close_watches(*group);
    }
  }

  void on_connected(Accepted peer) {
    auto message = decode_up(peer.first);
    std::lock_guard<std::mutex> lock(mutex);
    if (message && std::holds_alternative<CheckMessage>(*message)) {
      checks->reported(std::get<CheckMessage>(*message));
      ::close(peer.fd);
      return;
    }
    if (message && std::holds_alternative<WatchMessage>(*message)) {
      const auto& watch = std::get<WatchMessage>(*message);
      Group* group = find(watch.group);
      const std::string host = group ? host_of_rank(group->placement, watch.rank) : "";
      if (!group || group->phase == Group::Phase::kDead || host.empty() || stopping) {
        ::close(peer.fd);
        return;
      }
      set_liveness(peer.fd, options.host_timeout_s);
      group->watches.emplace_back(host, peer.fd);
      poke();
      return;
    }
    Group* group = message && std::holds_alternative<HelloMessage>(*message)
                       ? find(std::get<HelloMessage>(*message).group) : nullptr;
    if (!group || group->phase != Group::Phase::kStarting || group->start_timed_out || stopping) {
      ::close(peer.fd);
      return;
    }
    if (!options.listen_address.empty()) set_liveness(peer.fd, options.host_timeout_s);
    group->connection = std::make_shared<GroupConnection>(peer.fd);
    group->phase = Group::Phase::kIdle;
    group->reader = std::thread(&State::read, this, group->id, group->connection, group->pid);
    if (group->trial) send_run(*group);
  }
};

GroupExecutor::GroupExecutor(EventSink& events, GroupExecutorOptions options) : state_(std::make_shared<State>()) {
  state_->sink = &events;
  state_->options = std::move(options);
  if (state_->options.executable.empty()) state_->options.executable = self_executable();
  remove_orphaned_segments();  // of jobs killed here before (ranks tune did not kill itself)
  const GroupExecutorOptions& o = state_->options;
  state_->checks = std::make_unique<HostChecks>(
      HostChecks::Options{o.executable, o.network, o.listen_address, o.host_timeout_s, o.check_timeout_s});
  state_->listener = o.listen_address.empty() ? Listener::unix_socket(Secret::random())
                                              : Listener::tcp(o.listen_address, Secret::from_key_file(o.key_file));
  if (::pipe2(state_->wake, O_CLOEXEC | O_NONBLOCK) != 0) throw Error("cannot create a pipe for the group watcher");
  State* state = state_.get();
  state_->acceptor = std::thread([state] {
    while (!state->stopping) {
      if (auto peer = state->listener->accept_one(100)) state->on_connected(std::move(*peer));
    }
  });
  state_->watcher = std::thread([state] { state->watch_hosts(); });
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

void GroupExecutor::cancel(const AttemptId& attempt, const std::string& reason) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (auto& group : state_->groups) {
    if (group->attempt && *group->attempt == attempt && group->pid > 0) {
      // Busy: SIGTERM; the reader reaps and reports; after the grace poll()
      // kills the group and closes its connection, so a group that cannot
      // stop (a host out of reach) ends all the same. Starting: poll()
      // notices the exit.
      group->cancelled = true;
      group->hung = reason == kCancelHung;
      if (group->connection) {
        ::kill(-group->pid, SIGTERM);
      } else {
        kill_mpirun(group->pid);
      }
      if (group->kill_at == 0) group->kill_at = steady_seconds() + state_->options.stop_grace_s;
    }
  }
}

void GroupExecutor::check_host(const HostCheckRequest& request) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->checks->start(request, state_->listener->endpoint(), state_->listener->secret());
}

std::vector<HostCheckResult> GroupExecutor::take_host_checks() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->checks->take();
}

void GroupExecutor::poll() {
  std::vector<std::unique_ptr<Group>> dead;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    const double now = steady_seconds();
    for (auto& group : state_->groups) {
      if (group->phase != Group::Phase::kStarting || group->pid <= 0) continue;
      // A launch that hangs (ssh or srun stuck on a host, a daemon that cannot
      // reach back) would hold its slots for ever: killed, and failed below
      // once mpirun is reaped, as a loss of its hosts.
      if (group->start_deadline > 0 && now > group->start_deadline && !group->start_timed_out) {
        group->start_timed_out = true;
        kill_mpirun(group->pid);
      }
      int status = 0;
      if (::waitpid(group->pid, &status, WNOHANG) != group->pid) continue;
      const int code = reaped_mpirun(group->pid, status);
      group->pid = -1;
      state_->fail(*group, group->start_timed_out
                               ? "the worker group did not connect within failure.start_timeout_s (" +
                                     short_number(state_->options.start_timeout_s) +
                                     " s) of its start: a host's launch hangs (ssh, srun) or cannot reach this machine"
                               : "worker group exited with status " + std::to_string(code) + " before it connected");
      group->phase = Group::Phase::kDead;
    }
    // Abandoned or cancelled groups past their grace: killed, their
    // connection closed so that the reader ends even if no host answers.
    for (auto& group : state_->groups) {
      if (group->kill_at == 0 || now < group->kill_at || group->pid <= 0) continue;
      state_->kill_group(*group);
      if (group->connection) ::shutdown(group->connection->fd(), SHUT_RDWR);
      state_->close_watches(*group);
      group->kill_at = now + 3600;  // once
    }
    state_->checks->poll();
    // Ranks that print without end (a debug line in a loop) must not fill
    // the driver's disk: each live group's log is cut to its newest part.
    if (now - state_->logs_trimmed_at >= 1.0) {
      state_->logs_trimmed_at = now;
      for (auto& group : state_->groups)
        if (group->pid > 0) trim_log(group->log_path, state_->options.log_max_bytes);
    }
    // Dead groups whose reader has finished (or that never had one) go.
    auto& groups = state_->groups;
    for (auto it = groups.begin(); it != groups.end();) {
      const bool reader_done = !(*it)->connection || (*it)->connection->closed();
      if ((*it)->phase == Group::Phase::kDead && !(*it)->attempt && reader_done && (*it)->watches.empty()) {
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
      } else if (group->connection && group->pid > 0) {
        ::kill(-group->pid, SIGTERM);  // busy: the attempt is abandoned (resume restarts it)
      } else if (group->pid > 0 && group->phase == Group::Phase::kStarting) {
        kill_mpirun(group->pid);  // never connected: no reader
        reap(group->pid, std::chrono::milliseconds(2000));
      }
      group->attempt.reset();  // no events after shutdown
    }
  }
  if (state_->acceptor.joinable()) state_->acceptor.join();
  state_->poke();
  if (state_->watcher.joinable()) state_->watcher.join();
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    groups.swap(state_->groups);  // readers find nothing: they only reap
    state_->checks->kill_all();
  }
  for (auto& group : groups) {
    if (group->reader.joinable()) group->reader.join();
    for (auto& [host, fd] : group->watches) ::close(fd);
  }
  ::close(state_->wake[0]);
  ::close(state_->wake[1]);
}

namespace {
// TUNE_GROUP_LOG_MAX_MB, else 64.
uint64_t group_log_max_bytes() {
  const char* text = std::getenv("TUNE_GROUP_LOG_MAX_MB");
  if (!text || !*text) return 64ull << 20;
  char* end = nullptr;
  const double mb = std::strtod(text, &end);
  if (end == text || *end || !(mb >= 0.01 && mb <= 1e6))
    throw ConfigError("TUNE_GROUP_LOG_MAX_MB must be a number of MB between 0.01 and 1000000, got '" +
                      std::string(text) + "'");
  return static_cast<uint64_t>(mb * 1024 * 1024);
}
}  // namespace

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
    options.key_file = c.key_file;
    options.host_timeout_s = c.spec.failure.host_timeout_s;
    options.check_timeout_s = std::max(10.0, 3 * c.spec.failure.host_timeout_s);
    options.start_timeout_s = c.spec.failure.start_timeout_s;
    options.log_max_bytes = group_log_max_bytes();
    return std::make_unique<GroupExecutor>(c.events, options);
  };
  return kind;
}

}  // namespace tune::internal
