#include "tuner/exec/worker.h"

#include <mpi.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/json.h"
#include "storage/store.h"
#include "tuner/exec/checkpoint_transfer.h"
#include "tuner/exec/host_check.h"
#include "tuner/exec/command_trainable.h"
#include "tuner/exec/protocol.h"
#include "tuner/exec/session_base.h"
#include "tuner/exec/mpi_broadcast.h"
#include "tuner/exec/transport.h"

namespace tune::internal {
namespace {

namespace fs = std::filesystem;

// Rank 0's text on every rank: rank 0 waits on MPI, the others sleep between
// tests while rank 0 waits for the driver.
std::string broadcast(MPI_Comm comm, int rank, std::string text) {
  Backoff backoff;
  return broadcast_text(comm, rank, std::move(text), [&] {
    if (rank != 0) backoff();
  });
}

// The group's view of MPI: this rank, the group's size, and the leaders
// (the lowest rank of each host), who keep a host's copy of streamed files.
struct Ranks {
  int rank = 0, size = 1;
  bool leader = true;
  MPI_Comm leaders = MPI_COMM_NULL;  // valid on leaders only
  int hosts = 1;
};

Ranks mpi_ranks() {
  Ranks r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, r.rank, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  r.leader = local == 0;
  MPI_Comm_split(MPI_COMM_WORLD, r.leader ? 0 : MPI_UNDEFINED, r.rank, &r.leaders);
  int leader = r.leader ? 1 : 0;
  MPI_Allreduce(&leader, &r.hosts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return r;
}

// This group's mark, drawn once by rank 0 and part of every scratch folder
// it names: a group given up that has not ended yet (a host cut off) and a
// later attempt of the same trial on the same host never share a folder.
const std::string& group_mark() {
  static const std::string mark = [] {
    std::random_device random;
    char text[9];
    std::snprintf(text, sizeof text, "%08x", static_cast<unsigned>(random()));
    return std::string(text);
  }();
  return mark;
}

// Where a streaming trial keeps its files on this host.
std::string scratch_dir(const TrialStart& start) {
  const fs::path root = scratch_root();
  return (root / start.experiment / (trial_folder_name(start.trial_index) + "." + group_mark())).string();
}

// Removes a trial's scratch folder, and the experiment's once no other trial
// uses it; again if a rank still writing there refilled it.
void remove_scratch(const std::string& dir) {
  std::error_code ec;
  for (int i = 0; i < 3 && fs::exists(dir, ec); ++i) fs::remove_all(dir, ec);
  fs::remove(fs::path(dir).parent_path(), ec);
}

// A streaming trial's folder on this host while its attempt runs (leaders
// only). A group that ends because the driver gave it up or is gone removes
// it first, as a trial's normal end does: the driver's clean at the end of
// the experiment cannot reach a host that is cut off.
class ScratchInUse {
 public:
  void set(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    dir_ = dir;
  }
  void remove() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (dir_.empty()) return;
    remove_scratch(dir_);
    dir_.clear();
  }

 private:
  std::mutex mutex_;
  std::string dir_;
};

ScratchInUse& scratch_in_use() {
  static ScratchInUse scratch;
  return scratch;
}

// The group ends without the driver (it gave the group up, or is gone).
[[noreturn]] void end_group(int code) {
  scratch_in_use().remove();
  std::_Exit(code);
}

// Rank 0 holds a restored checkpoint in `dir`; the leaders of the other
// hosts write their own copy (every rank restores from the same path).
void share_checkpoint(const Ranks& r, const std::string& dir) {
  if (r.hosts == 1 || !r.leader) return;
  int me = 0;
  MPI_Comm_rank(r.leaders, &me);
  std::string manifest = me == 0 ? manifest_json(list_checkpoint(dir)).dump() : "";
  manifest = broadcast(r.leaders, me, manifest);
  const auto files = manifest_from_json(parse_json(manifest));
  if (!files) return;
  std::string chunk(kCheckpointChunk, '\0');
  for (const auto& file : *files) {
    const fs::path path = fs::path(dir) / file.path;
    if (me != 0) fs::create_directories(path.parent_path());
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), me == 0 ? "rb" : "wb"), std::fclose);
    for (uint64_t left = file.size; left > 0;) {
      const auto n = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
      if (me == 0 && f) (void)!std::fread(chunk.data(), 1, n, f.get());
      MPI_Bcast(chunk.data(), static_cast<int>(n), MPI_CHAR, 0, r.leaders);
      if (me != 0 && f) (void)!std::fwrite(chunk.data(), 1, n, f.get());
      left -= n;
    }
  }
}

class WorkerSession : public SessionBase {
 public:
  WorkerSession(TrialStart start, int fd, const Ranks& ranks)
      : SessionBase(std::move(start)), fd_(fd), ranks_(ranks) {}

  const void* mpi_communicator_handle() const override { return &comm_; }
  int rank() const override { return ranks_.rank; }
  int world_size() const override { return ranks_.size; }

 protected:
  // Rank 0 sends; the other ranks only count the result.
  bool send(const Json& metrics, const std::string& checkpoint_dir) override {
    if (ranks_.rank != 0) return true;
    const bool stream = start_.stream_checkpoints && !checkpoint_dir.empty();
    // The driver gone, or not speaking the protocol: nothing to report to.
    if (!send_result(metrics, checkpoint_dir, stream)) end_group(kExitLostDriver);
    sent_streamed_ = stream ? checkpoint_dir : "";
    return true;
  }

  // Rank 0 reads the answer and broadcasts it: every rank learns it at once.
  Verdict await_answer(int64_t iteration) override {
    std::string verdict;
    if (ranks_.rank == 0) {
      auto frame = receive_message(fd_);
      auto reply = frame ? decode_down(*frame) : std::nullopt;
      if (!reply || !std::holds_alternative<VerdictMessage>(*reply)) end_group(kExitLostDriver);
      const Verdict answer = std::get<VerdictMessage>(*reply).verdict;
      verdict = answer == Verdict::kStop ? "s" : answer == Verdict::kRunAhead ? "a" : "c";
      log_ack(start_, iteration, answer);
      std::error_code ec;
      if (!sent_streamed_.empty()) fs::remove_all(sent_streamed_, ec);  // the driver has it now
      sent_streamed_.clear();
    }
    verdict = broadcast(MPI_COMM_WORLD, ranks_.rank, verdict);
    return verdict == "s" ? Verdict::kStop : verdict == "a" ? Verdict::kRunAhead : Verdict::kContinue;
  }

 private:
  bool send_result(const Json& metrics, const std::string& dir, bool stream) {
    if (!stream) return send_message(fd_, encode(UpMessage{ResultMessage{metrics, dir}}));
    std::vector<CheckpointFile> files;
    try {
      files = list_checkpoint(dir);
    } catch (const std::exception& e) {
      std::cerr << "tune worker: " << e.what() << "\n";
      return send_message(fd_, encode(UpMessage{ResultMessage{metrics, ""}}));
    }
    return send_message(fd_, encode(UpMessage{ResultMessage{metrics, dir, manifest_json(files)}})) &&
           send_checkpoint(fd_, dir, files);
  }

  MPI_Comm comm_ = MPI_COMM_WORLD;
  int fd_;
  Ranks ranks_;
  std::string sent_streamed_;  // rank 0: the streamed checkpoint of the result sent last
};

// Rank 0: the next command from the driver (with a streamed checkpoint
// received into this host's scratch and the command rewritten to point at
// it), as JSON; shutdown when the driver is gone.
std::string next_command(int fd) {
  const std::string shutdown = encode(DownMessage{ShutdownMessage{}}).dump();
  auto frame = receive_message(fd);
  auto command = frame ? decode_down(*frame) : std::nullopt;
  if (!command) return shutdown;
  auto* run = std::get_if<RunMessage>(&*command);
  if (!run || !run->trial.stream_checkpoints) return frame->dump();
  TrialStart& trial = run->trial;
  trial.trial_dir = scratch_dir(trial);
  if (trial.checkpoint && !trial.checkpoint_files.is_null()) {
    auto files = manifest_from_json(trial.checkpoint_files);
    if (!files) return shutdown;
    const std::string dir = trial.trial_dir + "/restore_" + std::to_string(trial.checkpoint->iteration);
    const std::string error = receive_checkpoint(fd, *files, dir).error;
    if (!error.empty()) {
      std::cerr << "tune worker: " << error << "\n";
      remove_scratch(trial.trial_dir);
      return shutdown;
    }
    trial.checkpoint->path = dir;
  }
  return encode(DownMessage{*run}).dump();
}

}  // namespace

bool started_as_worker() { return std::getenv(kEndpointEnv) && std::getenv(kGroupEnv); }

void select_rank_gpus() {
  const char* lists = std::getenv(kRankGpusEnv);
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");  // set by mpirun before MPI_Init
  if (!lists || !rank) return;
  if (std::string(lists) == kNoGpus) {
    ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
    return;
  }
  std::vector<std::string> per_rank;
  std::string item;
  for (std::istringstream in(lists); std::getline(in, item, '|');) per_rank.push_back(item);
  const size_t r = static_cast<size_t>(std::atoi(rank));
  if (r < per_rank.size()) ::setenv("CUDA_VISIBLE_DEVICES", per_rank[r].c_str(), 1);
}

namespace {

// Rank 0 watches its driver connection while a trial runs: if the driver
// dies (kill -9, a lost host), the group must not train on until its next
// report, possibly beside the group a `tune resume` started for the same
// trial and over that trial's checkpoint directory. Exiting without
// MPI_Finalize makes mpirun end every rank of the group. Between trials a
// closed connection is the driver's normal "shut down", read by the main
// thread.
class DriverWatch {
 public:
  explicit DriverWatch(int fd) : fd_(fd) {
    if (fd_ >= 0) thread_ = std::thread([this] { watch(); });
  }
  ~DriverWatch() { stop(); }
  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  void set_in_trial(bool in_trial) { in_trial_ = in_trial; }

 private:
  void watch() {
    bool gone = false;
    while (!done_) {
      pollfd p{fd_, POLLRDHUP, 0};
      if (!gone && ::poll(&p, 1, 100) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) gone = true;
      if (gone && in_trial_) {
        std::cerr << "tune worker: the driver is gone; ending the group\n";
        end_group(kExitDriverGone);
      }
      if (gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  int fd_;
  std::atomic<bool> done_{false}, in_trial_{false};
  std::thread thread_;
};

}  // namespace

// The address this host reaches the driver from (TCP across hosts; a
// local socket means one machine: loopback), for trainables that open their
// own connections between ranks (command trainables' MASTER_ADDR).
void publish_node_address(int fd) {
  sockaddr_storage local{};
  socklen_t size = sizeof local;
  char text[INET6_ADDRSTRLEN] = "127.0.0.1";
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) == 0) {
    if (local.ss_family == AF_INET)
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&local)->sin_addr, text, sizeof text);
    else if (local.ss_family == AF_INET6)
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr, text, sizeof text);
  }
  ::setenv(kNodeAddressEnv, text, 1);
}

// How long a host's connection to the driver may show no life
// (failure.host_timeout_s, passed by the driver); 0 on one machine.
double host_timeout() {
  const char* value = std::getenv(kHostTimeoutEnv);
  return value ? std::atof(value) : 0;
}

// The lowest rank of a host other than rank 0's, in a group that spans hosts:
// a connection of its own to the driver, which says nothing. If this host
// dies or becomes unreachable, the driver sees it break (and blames this
// host); if the driver goes away or gives the group up, this rank sees it
// break and ends, so that the group's processes here end too.
class HostWatch {
 public:
  HostWatch(const Ranks& ranks, const Secret& secret) {
    const char* endpoint = std::getenv(kEndpointEnv);
    if (ranks.rank == 0 || !ranks.leader || ranks.hosts < 2 || !endpoint || std::string(endpoint).rfind("tcp:", 0) != 0)
      return;
    try {
      fd_ = connect_driver(endpoint, secret);
      set_liveness(fd_, host_timeout());
      const char* group = std::getenv(kGroupEnv);
      if (!send_message(fd_, encode(UpMessage{WatchMessage{std::atoi(group ? group : "0"), ranks.rank}})))
        throw Error("the driver closed the connection");
    } catch (const std::exception& e) {
      std::cerr << "tune worker rank " << ranks.rank << ": cannot watch the driver: " << e.what() << "\n";
      std::_Exit(kExitNoDriver);
    }
    thread_ = std::thread([this] {
      while (!done_) {
        pollfd p{fd_, POLLRDHUP, 0};
        if (::poll(&p, 1, 100) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) && !done_) {
          std::cerr << "tune worker: the driver gave this group up or is gone; ending it\n";
          end_group(kExitDriverGone);
        }
      }
    });
  }
  ~HostWatch() { stop(); }
  // Before MPI_Finalize: the group ends normally.
  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

namespace {

// Bytes of the files under `dir`.
uint64_t folder_bytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto size = it->file_size(size_ec);
      if (!size_ec) total += size;
    }
  }
  return total;
}

// A trainable that failed while this host's scratch folder had no room left
// failed for the host's want of space (a checkpoint it could not write), not
// its own: the driver retries it elsewhere. Checked before the trial's files
// there are removed.
std::string host_fault(const TrialStart& start) {
  if (!start.stream_checkpoints) return "";  // a shared filesystem is no one host's
  std::string short_of = scratch_short_of_space(kScratchFullBytes);
  if (short_of.empty()) return "";
  // A trial whose own files take half the filesystem filled it itself: its
  // own failure (else it would take every host out in turn).
  struct statvfs info {};
  if (::statvfs(scratch_root().c_str(), &info) == 0 &&
      folder_bytes(start.trial_dir) * 2 >= static_cast<uint64_t>(info.f_blocks) * info.f_frsize)
    return "";
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return short_of + " (on " + host + ")";
}

}  // namespace

void run_worker() {
  int provided = 0, argc = 0;
  char** argv = nullptr;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  const Ranks ranks = mpi_ranks();

  Secret secret;
  try {
    secret = secret_from_environment();
  } catch (const std::exception& e) {
    std::cerr << "tune worker rank " << ranks.rank << ": " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, kExitNoDriver);
  }
  int fd = -1;
  if (ranks.rank == 0) {
    try {
      fd = connect_driver(std::getenv(kEndpointEnv), secret);
      set_liveness(fd, host_timeout());
      publish_node_address(fd);
    } catch (const std::exception& e) {
      std::cerr << "tune worker: " << e.what() << "\n";
      MPI_Abort(MPI_COMM_WORLD, kExitNoDriver);
    }
    const char* group = std::getenv(kGroupEnv);
    send_message(fd, encode(UpMessage{HelloMessage{std::atoi(group ? group : "0"), static_cast<int>(getpid()), ranks.size}}));
  }
  HostWatch host_watch(ranks, secret);

  DriverWatch watch(fd);
  while (true) {
    const std::string text = broadcast(MPI_COMM_WORLD, ranks.rank, ranks.rank == 0 ? next_command(fd) : "");
    auto command = decode_down(parse_json(text));
    if (!command || !std::holds_alternative<RunMessage>(*command)) break;
    const TrialStart& start = std::get<RunMessage>(*command).trial;
    if (start.stream_checkpoints && ranks.leader) scratch_in_use().set(start.trial_dir);
    if (start.stream_checkpoints) {
      if (ranks.leader) fs::create_directories(start.trial_dir);
      if (start.checkpoint) share_checkpoint(ranks, start.checkpoint->path);
      MPI_Barrier(MPI_COMM_WORLD);
    }

    UpMessage outcome = DoneMessage{};
    bool fatal = false;
    if (start.trainable == "command") register_command_trainable();
    const RegisteredTrainable* trainable = find_trainable(start.trainable);
    if (!trainable) {
      outcome = ErrorMessage{"unknown trainable '" + start.trainable + "' in worker", ""};
    } else {
      WorkerSession session(start, fd, ranks);
      watch.set_in_trial(true);
      try {
        trainable->function(session);
      } catch (const TrialStopped&) {
        outcome = DoneMessage{true};
      } catch (const std::exception& e) {
        outcome = ErrorMessage{e.what(), host_fault(start)};
        fatal = ranks.size > 1;
      } catch (...) {
        outcome = ErrorMessage{"unknown exception", host_fault(start)};
        fatal = ranks.size > 1;
      }
      // The answer to a result that ran ahead comes before the next command.
      if (!fatal) session.settle();
    }
    watch.set_in_trial(false);
    if (fatal) {
      // Other ranks may be blocked in a collective with this one; the only
      // clean way out is to end the group. The driver starts a fresh one.
      if (ranks.rank == 0) send_message(fd, encode(outcome));
      else {
        // One write, so that mpirun's own messages cannot split the line
        // the driver looks for (group_executor.cpp, rank_error).
        const std::string line =
            "tune worker rank " + std::to_string(ranks.rank) + ": " + std::get<ErrorMessage>(outcome).message + "\n";
        std::cerr << line << std::flush;
      }
      if (ranks.leader) scratch_in_use().remove();  // the driver retries from its own copy
      MPI_Abort(MPI_COMM_WORLD, kExitFatalTrial);
    }
    if (start.stream_checkpoints) {
      MPI_Barrier(MPI_COMM_WORLD);  // every rank is done with the trial's files
      // This host's scratch: the driver has what matters. The experiment's
      // folder goes too once no other trial of it uses this host.
      if (ranks.leader) scratch_in_use().remove();
    }
    if (ranks.rank == 0 && !send_message(fd, encode(outcome))) break;
  }
  watch.stop();  // before its descriptor closes
  host_watch.stop();
  if (fd >= 0) ::close(fd);
  MPI_Finalize();
  std::_Exit(0);
}

}  // namespace tune::internal
