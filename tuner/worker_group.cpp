#include "tuner/worker_group.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tuner/error.h"
#include "tuner/worker.h"

extern char** environ;

namespace tune::internal {

struct WorkerGroupPool::Group {
  enum class State { kStarting, kIdle, kBusy, kDead };
  int id = 0;
  int ranks = 1;
  pid_t pid = -1;  // mpirun, leader of its own process group
  int fd = -1;
  State state = State::kStarting;
  std::optional<TrialStart> trial;
  int attempt = 0;
  std::string log_path;
  std::thread reader;
};

namespace {

// Waits for `pid` up to `grace`, then kills its process group. Returns the
// exit status (128 + signal for a signal).
int reap(pid_t pid, std::chrono::milliseconds grace) {
  auto deadline = std::chrono::steady_clock::now() + grace;
  int status = 0;
  while (true) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string last_lines(const std::string& path, int count) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  std::string tail;
  for (size_t i = lines.size() > static_cast<size_t>(count) ? lines.size() - count : 0;
       i < lines.size(); ++i) {
    if (!tail.empty()) tail += " | ";
    tail += lines[i];
  }
  return tail;
}

}  // namespace

WorkerGroupPool::WorkerGroupPool(EventQueue& events, GroupLaunchOptions options)
    : events_(events), options_(std::move(options)) {
  if (options_.executable.empty()) {
    char buffer[4096];
    ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
    if (n <= 0) throw Error("cannot find this program's path for worker groups");
    options_.executable.assign(buffer, static_cast<size_t>(n));
  }
  listener_ = std::make_unique<UnixListener>();
  acceptor_ = std::thread([this] {
    while (!stopping_) {
      int fd = listener_->accept_one(100);
      if (fd < 0) continue;
      auto hello = receive_message(fd);
      if (!hello || hello->value("type", "") != "hello") {
        ::close(fd);
        continue;
      }
      Event event;
      event.kind = Event::Kind::kGroupConnected;
      event.group = hello->value("group", -1);
      event.fd = fd;
      events_.push(std::move(event));
    }
  });
}

WorkerGroupPool::~WorkerGroupPool() {
  stopping_ = true;
  for (auto& group : groups_) shutdown(*group);
  for (auto& group : groups_) {
    if (group->reader.joinable()) group->reader.join();
  }
  if (acceptor_.joinable()) acceptor_.join();
}

void WorkerGroupPool::shutdown(Group& group) {
  if (group.state == Group::State::kDead) return;
  if (group.state == Group::State::kIdle) {
    send_message(group.fd, {{"type", "shutdown"}});  // the reader reaps it
  } else if (group.fd >= 0) {
    ::kill(-group.pid, SIGTERM);  // busy: the trial is abandoned (resume restarts it)
  } else {
    ::kill(-group.pid, SIGKILL);  // never connected: no reader thread
    reap(group.pid, std::chrono::milliseconds(2000));
  }
  group.state = Group::State::kDead;
}

WorkerGroupPool::Group* WorkerGroupPool::find_idle(int ranks) {
  for (auto& group : groups_) {
    if (group->state == Group::State::kIdle && group->ranks == ranks) return group.get();
  }
  return nullptr;
}

WorkerGroupPool::Group* WorkerGroupPool::launch(int ranks) {
  auto group = std::make_unique<Group>();
  group->id = next_id_++;
  group->ranks = ranks;
  group->log_path = options_.log_dir + "/group_" + std::to_string(group->id) + ".log";

  std::vector<std::string> args = {"mpirun", "--oversubscribe", "--bind-to", "none", "-np",
                                   std::to_string(ranks), "-x", kSocketEnv, "-x", kGroupEnv,
                                   "--mca", "btl", "self,vader", "--mca",
                                   "btl_vader_single_copy_mechanism", "none"};
  if (::geteuid() == 0) args.insert(args.begin() + 1, "--allow-run-as-root");
  for (const auto& extra : options_.extra_mpirun_args) args.push_back(extra);
  args.push_back(options_.executable);

  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "TUNE_DRIVER_SOCKET=", 19) && std::strncmp(*e, "TUNE_GROUP_ID=", 14)) env.push_back(*e);
  }
  env.push_back(std::string(kSocketEnv) + "=" + listener_->path());
  env.push_back(std::string(kGroupEnv) + "=" + std::to_string(group->id));

  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, group->log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  int rc = posix_spawnp(&group->pid, "mpirun", &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) {
    throw Error(std::string("cannot start mpirun (is openmpi-bin installed?): ") + std::strerror(rc));
  }
  groups_.push_back(std::move(group));
  return groups_.back().get();
}

void WorkerGroupPool::start(TrialStart start, int ranks, int attempt) {
  Group* group = find_idle(ranks);
  if (!group) {
    trim_idle();
    group = launch(ranks);
  }
  group->trial = std::move(start);
  group->attempt = attempt;
  if (group->state == Group::State::kIdle) send_run(*group);
}

void WorkerGroupPool::send_run(Group& group) {
  group.state = Group::State::kBusy;
  send_message(group.fd, {{"type", "run"}, {"trial", group.trial->to_json()}});
  // If the send failed the reader sees EOF and reports the group's exit.
}

void WorkerGroupPool::on_connected(int id, int fd) {
  Group* group = nullptr;
  for (auto& g : groups_) {
    if (g->id == id && g->state == Group::State::kStarting) group = g.get();
  }
  if (!group) {
    ::close(fd);
    return;
  }
  group->fd = fd;
  group->state = Group::State::kIdle;
  const int group_id = group->id;
  const pid_t pid = group->pid;
  group->reader = std::thread([this, group, fd, group_id, pid] {
    while (auto message = receive_message(fd)) {
      Event event;
      event.group = group_id;
      // trial/attempt are read by the driver thread under its own bookkeeping;
      // the reader only forwards what rank 0 said.
      const std::string type = message->value("type", "");
      if (type == "result") {
        event.kind = Event::Kind::kResult;
        event.payload = std::move(*message);
        event.reply = [fd](const std::string& action) {
          send_message(fd, {{"type", "decision"}, {"action", action}});
        };
      } else if (type == "done") {
        event.kind = Event::Kind::kDone;
        event.payload = std::move(*message);
      } else if (type == "error") {
        event.kind = Event::Kind::kError;
        event.message = message->value("message", "worker error");
      } else {
        continue;
      }
      events_.push(std::move(event));
    }
    ::close(fd);
    Event exited;
    exited.kind = Event::Kind::kGroupExited;
    exited.group = group_id;
    exited.status = reap(pid, std::chrono::milliseconds(1000));
    events_.push(std::move(exited));
    (void)group;
  });
  if (group->trial) send_run(*group);
}

std::optional<int64_t> WorkerGroupPool::on_exited(int id, int status, std::string* log_tail) {
  for (auto it = groups_.begin(); it != groups_.end(); ++it) {
    Group& group = **it;
    if (group.id != id) continue;
    std::optional<int64_t> trial;
    if (group.state == Group::State::kBusy || group.state == Group::State::kStarting) {
      if (group.trial) trial = group.trial->trial_index;
    }
    if (log_tail) {
      *log_tail = "worker group exited with status " + std::to_string(status);
      std::string tail = last_lines(group.log_path, 3);
      if (!tail.empty()) *log_tail += ": " + tail;
    }
    if (group.reader.joinable()) group.reader.join();
    groups_.erase(it);
    return trial;
  }
  return std::nullopt;
}

void WorkerGroupPool::release(int id) {
  for (auto& group : groups_) {
    if (group->state == Group::State::kBusy && group->id == id) {
      group->state = Group::State::kIdle;
      group->trial.reset();
      return;
    }
  }
}

std::optional<std::pair<int64_t, int>> WorkerGroupPool::trial_on(int id) const {
  for (const auto& group : groups_) {
    if (group->id == id && group->trial) return std::make_pair(group->trial->trial_index, group->attempt);
  }
  return std::nullopt;
}

void WorkerGroupPool::poll_starting() {
  for (auto& group : groups_) {
    if (group->state != Group::State::kStarting) continue;
    int status = 0;
    if (::waitpid(group->pid, &status, WNOHANG) == group->pid) {
      Event exited;
      exited.kind = Event::Kind::kGroupExited;
      exited.group = group->id;
      exited.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      group->state = Group::State::kBusy;  // so on_exited reports its trial
      events_.push(std::move(exited));
    }
  }
}

int WorkerGroupPool::live_groups() const {
  int live = 0;
  for (const auto& group : groups_) live += group->state != Group::State::kDead;
  return live;
}

void WorkerGroupPool::trim_idle() {
  int idle_ranks = 0;
  for (auto& group : groups_) {
    if (group->state == Group::State::kIdle) idle_ranks += group->ranks;
  }
  for (auto& group : groups_) {
    if (idle_ranks < idle_rank_limit_) break;
    if (group->state == Group::State::kIdle) {
      idle_ranks -= group->ranks;
      shutdown(*group);
    }
  }
}

}  // namespace tune::internal
