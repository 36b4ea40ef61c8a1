// The "command" trainable (contract in tuner/exec/command_trainable.h): one
// child process per rank, its stdout read line by line for `@tune` results,
// its stderr kept for the failure message. Ranks of a worker group agree on
// each step through a one-byte broadcast from rank 0 ('r' a result follows,
// 'a' the answer to the last one is read, 'e' the program ended, 'f' it
// failed), so every rank calls report() and settle() as often as rank 0
// does, while each still watches its own child.
#include "tuner/exec/command_trainable.h"

#include <mpi.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "base/error.h"
#include "trainer/communicator.h"
#include "trainer/session.h"
#include "tuner/exec/mpi_broadcast.h"
#include "tuner/exec/checkpoint_handoff.h"
#include "tuner/exec/child_process.h"
#include "tuner/exec/clock.h"
#include "tuner/spec/command_spec.h"
#include "tuner/exec/protocol.h"
#include "tuner/exec/result_line.h"
#include "tuner/exec/session_base.h"
#include "tuner/exec/transport.h"

extern char** environ;

namespace tune::internal {
namespace {

namespace fs = std::filesystem;

constexpr const char* kResultPrefix = "@tune ";
constexpr double kQuietBeforeSettle = 0.2;  // s without a result before an answer that ran ahead is read

// A free TCP port on `address`, bound and released (as torchrun picks one).
int free_port(const std::string& address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 && is_out_of_descriptors(errno))
    throw OutOfDescriptorsError("cannot find a free TCP port on " + address + ": " + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (::inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1) a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int port = 0;
  socklen_t size = sizeof a;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  if (port == 0) throw Error("cannot find a free TCP port on " + address + ": " + std::strerror(errno));
  return port;
}

// ---- the environment ------------------------------------------------------

bool is_internal_variable(const std::string& name) {
  // The driver's endpoint and token are the worker's, not the program's; an
  // MPI program started by a rank must not take itself for part of tune's job.
  static const std::vector<std::string> list = worker_environment_names();
  static const std::set<std::string> names(list.begin(), list.end());
  return names.count(name) || name.rfind("OMPI_", 0) == 0 || name.rfind("PMIX_", 0) == 0 ||
         name.rfind("OPAL_", 0) == 0 || name.rfind("PRTE_", 0) == 0;
}

std::vector<std::string> child_environment(const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (is_internal_variable(name) || set.count(name)) continue;
    env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

// ---- the trainable ----------------------------------------------------------

void run_command(Session& session) {
  const CommandSpec spec = CommandSpec::from_json(session.setup().at("command"));
  const Json& config = session.config();
  const int rank = session.rank(), world = session.world_size();
  const MPI_Comm comm = communicator(session);
  const bool group = world > 1 && comm != MPI_COMM_NULL;

  std::vector<std::string> argv;
  for (const auto& a : spec.argv) argv.push_back(substitute(a, config));
  std::map<std::string, std::string> env;
  for (const auto& [name, value] : spec.env) env[name] = substitute(value, config);

  // Absolute: the program runs in its own folder (trainable.cwd), and a
  // relative --storage would name another place from there.
  const std::string trial_dir = fs::absolute(session.trial_dir()).lexically_normal().string();
  const std::string handoff = (fs::path(trial_dir) / "checkpoint_next").string();
  std::unique_ptr<ChildProcess> child;
  auto idle = [&] {
    if (!child) return;
    child->pump(20, nullptr);
  };

  // Rendezvous, as torchrun gives it: rank 0's address and a free port.
  std::string master = "127.0.0.1";
  if (rank == 0) {
    const char* node = std::getenv(kNodeAddressEnv);
    if (group && node && *node) master = node;
    std::error_code ec;
    fs::remove_all(handoff, ec);
  }
  std::string rendezvous = master + " " + std::to_string(rank == 0 ? free_port(master) : 0);
  if (group) rendezvous = broadcast_text(comm, rank, rendezvous, idle);
  master = rendezvous.substr(0, rendezvous.find(' '));
  const std::string port = rendezvous.substr(rendezvous.find(' ') + 1);
  // TF_CONFIG: every rank's host:port.
  std::string self = master.rfind("127.", 0) == 0 ? "127.0.0.1" : address_toward(master);
  if (self.empty()) self = "127.0.0.1";
  char mine[64] = {0};
  std::snprintf(mine, sizeof mine, "%s:%d", self.c_str(), free_port(self));
  std::vector<char> all(static_cast<size_t>(64) * world, 0);
  if (group) {
    MPI_Request request;
    MPI_Iallgather(mine, 64, MPI_CHAR, all.data(), 64, MPI_CHAR, comm, &request);
    wait_request(request, idle);
  } else {
    std::memcpy(all.data(), mine, 64);
  }
  Json workers = Json::array();
  for (int r = 0; r < world; ++r) workers.push_back(std::string(all.data() + 64 * r));
  const Json tf_config = {{"cluster", {{"worker", workers}}}, {"task", {{"type", "worker"}, {"index", rank}}}};

  std::error_code ec;
  fs::create_directories(handoff, ec);
  env["TUNE_CONFIG"] = config.dump();
  env["TUNE_TRIAL_DIR"] = trial_dir;
  env["TUNE_CHECKPOINT_DIR"] = handoff;
  env["TUNE_ITERATION"] = std::to_string(session.iteration());
  env["TUNE_EXPERIMENT"] = session.experiment_name();
  env["TUNE_TRIAL_NAME"] = session.trial_name();
  if (session.checkpoint()) env["TUNE_RESTORE_FROM"] = fs::absolute(session.checkpoint()->path).string();
  env["RANK"] = std::to_string(rank);
  env["WORLD_SIZE"] = std::to_string(world);
  env["LOCAL_RANK"] = std::to_string(env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0));
  env["LOCAL_WORLD_SIZE"] = std::to_string(env_int("OMPI_COMM_WORLD_LOCAL_SIZE", world));
  env["GROUP_RANK"] = std::to_string(env_int("OMPI_COMM_WORLD_NODE_RANK", 0));
  env["MASTER_ADDR"] = master;
  env["MASTER_PORT"] = port;
  env["TF_CONFIG"] = tf_config.dump();
  std::vector<std::string> environment = child_environment(env);
  if (!session.checkpoint()) {
    environment.erase(std::remove_if(environment.begin(), environment.end(),
                                     [](const std::string& e) { return e.rfind("TUNE_RESTORE_FROM=", 0) == 0; }),
                      environment.end());
  }

  const std::string logs = (fs::path(trial_dir) / (rank == 0 ? "" : "rank" + std::to_string(rank) + ".")).string();
  child = std::make_unique<ChildProcess>(argv, spec.cwd, environment, logs, kResultPrefix,
                                         static_cast<uint64_t>(spec.log_max_mb * 1024 * 1024));
  const std::string shown = "`" + argv[0] + "`";

  // Every rank: the verdict stops the program (pause, stop, sweep end).
  auto report = [&](const Json& metrics, const std::string& checkpoint) {
    try {
      session.report(metrics, checkpoint);
    } catch (const TrialStopped&) {
      child->stop(spec.stop_grace_s);
      throw;
    }
  };
  auto flag = [&](char value) {
    MPI_Request request;
    MPI_Ibcast(&value, 1, MPI_CHAR, 0, comm, &request);
    wait_request(request, idle);
  };
  // A result that ran ahead is answered at the next report(), and a program
  // may stay quiet for long (or for good): its answer is read once it has
  // been quiet a moment, so that a stop nothing foresaw (a non-finite
  // metric, the sweep's end) does not wait for the program's next line.
  // Collective in a group, like report() ('a' on the other ranks).
  auto* base = dynamic_cast<SessionBase*>(&session);
  auto settle = [&] {
    if (base && base->settle() == Verdict::kStop) {
      child->stop(spec.stop_grace_s);
      throw TrialStopped{};
    }
  };

  if (rank == 0) {
    std::vector<std::string> results;
    bool open = true;
    double last_report = steady_seconds();
    while (open) {
      if (session.stop_requested()) {
        child->stop(spec.stop_grace_s);
        throw TrialStopped{};
      }
      results.clear();
      open = child->pump(100, &results);
      for (const auto& text : results) {
        Json metrics;
        std::string checkpoint;
        try {
          metrics = parse_result_line(text);
          if (metrics.contains("checkpoint")) {
            checkpoint = take_checkpoint(metrics["checkpoint"], {spec.cwd, trial_dir, handoff},
                                         [&] { return session.make_checkpoint_dir(); });
            metrics.erase("checkpoint");
          }
        } catch (const Error&) {
          child->stop(spec.stop_grace_s);
          if (group) flag('f');
          throw;
        }
        if (group) flag('r');
        report(metrics, checkpoint);
        last_report = steady_seconds();
      }
      if (base && base->answer_pending() && steady_seconds() - last_report >= kQuietBeforeSettle) {
        if (group) flag('a');
        settle();
      }
    }
    const int status = *child->reap(true);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (group) flag(ok ? 'e' : 'f');
    if (!ok) throw Error(shown + " " + child->describe(status));
    return;
  }

  // Ranks != 0 follow rank 0, watching their own program meanwhile.
  auto watch = [&] {
    child->pump(20, nullptr);
    if (auto status = child->reap(false); status && !(WIFEXITED(*status) && WEXITSTATUS(*status) == 0))
      throw Error("rank " + std::to_string(rank) + ": " + shown + " " + child->describe(*status));
  };
  while (true) {
    char value = 0;
    MPI_Request request;
    MPI_Ibcast(&value, 1, MPI_CHAR, 0, comm, &request);
    wait_request(request, watch);
    if (value == 'r') {
      report(Json::object(), "");
    } else if (value == 'a') {
      settle();
    } else if (value == 'e') {
      // Rank 0's program is done; this one should be too (bounded wait).
      const double start = steady_seconds();
      while (!child->reap(false) && steady_seconds() - start < spec.stop_grace_s + 30) child->pump(20, nullptr);
      child->stop(spec.stop_grace_s);
      return;
    } else {
      child->stop(spec.stop_grace_s);  // rank 0 failed and says why
      return;
    }
  }
}

// Before anything runs: the folder exists and the program can be found.
void check_command_setup(const Json& setup) {
  if (!setup.contains("command") || setup["command"].is_null())
    throw ConfigError::at("trainable", "trainable 'command' needs its program: trainable: {command: [program, args...]}");
  if (!setup["data"].is_null() || !setup["preprocess"].is_null())
    throw ConfigError::at(setup["data"].is_null() ? "preprocess" : "data",
                          "a command trainable takes no data: or preprocess: block (pass files through its arguments)");
  const CommandSpec spec = CommandSpec::from_json(setup["command"]);
  std::error_code ec;
  if (!fs::is_directory(spec.cwd, ec))
    throw ConfigError::at("trainable.cwd", "trainable.cwd " + spec.cwd + " is not a folder");
  const std::string& program = spec.argv.at(0);
  if (program.find('{') != std::string::npos) return;  // a placeholder: known per trial
  auto executable = [](const fs::path& p) {
    std::error_code e;
    return fs::is_regular_file(p, e) && ::access(p.c_str(), X_OK) == 0;
  };
  bool found = false;
  if (program.find('/') != std::string::npos) {
    fs::path p(program);
    found = executable(p.is_relative() ? fs::path(spec.cwd) / p : p);
  } else if (const char* path = std::getenv("PATH")) {
    std::string dirs = path;
    for (size_t start = 0; start <= dirs.size() && !found;) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      const std::string dir = dirs.substr(start, end - start);
      found = executable(fs::path(dir.empty() ? "." : dir) / program);
      start = end + 1;
    }
  }
  if (!found)
    throw ConfigError::at("trainable.command[0]",
                          "program '" + program + "' not found" +
                              (program.find('/') != std::string::npos ? " (or not executable) in " + spec.cwd
                                                                      : " on PATH") +
                              "; a script needs its interpreter first: [python3, train.py, ...]");
}

}  // namespace

void register_command_trainable() {
  static std::once_flag once;
  std::call_once(once, [] {
    TrainableInfo info;
    info.in_process = true;  // a thread that waits on a child process; groups run it per rank
    info.description = "any program: `trainable: {command: [...]}` (results on stdout as @tune {json})";
    info.check_setup = check_command_setup;
    register_trainable("command", run_command, info);
  });
}

}  // namespace tune::internal
