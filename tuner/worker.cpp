#include "tuner/worker.h"

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "tuner/group_executor.h"
#include "tuner/protocol.h"
#include "tuner/session_base.h"

namespace tune::internal {
namespace {

// Broadcast of a string from rank 0. Ranks != 0 poll with a growing sleep
// instead of blocking in MPI_Bcast, which busy-waits in OpenMPI and would burn
// a core per idle rank while rank 0 waits for the driver.
std::string broadcast(MPI_Comm comm, int rank, std::string text) {
  uint64_t size = text.size();
  MPI_Request request;
  MPI_Ibcast(&size, 1, MPI_UINT64_T, 0, comm, &request);
  if (rank == 0) {
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  } else {
    int done = 0;
    auto pause = std::chrono::microseconds(5);
    while (MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done) {
      std::this_thread::sleep_for(pause);
      if (pause < std::chrono::milliseconds(2)) pause *= 2;
    }
  }
  text.resize(size);
  MPI_Bcast(text.data(), static_cast<int>(size), MPI_CHAR, 0, comm);
  return text;
}

class WorkerSession : public SessionBase {
 public:
  WorkerSession(TrialStart start, int fd, int rank, int size)
      : SessionBase(std::move(start)), fd_(fd), rank_(rank), size_(size) {}

  const void* mpi_communicator_handle() const override { return &comm_; }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }

 protected:
  Verdict exchange(const Json& metrics, const std::string& checkpoint_dir) override {
    std::string verdict;
    if (rank_ == 0) {
      // The driver gone, or not speaking the protocol: nothing to report to.
      if (!send_message(fd_, encode(UpMessage{ResultMessage{metrics, checkpoint_dir}}))) std::_Exit(70);
      auto frame = receive_message(fd_);
      auto reply = frame ? decode_down(*frame) : std::nullopt;
      if (!reply || !std::holds_alternative<VerdictMessage>(*reply)) std::_Exit(70);
      verdict = std::get<VerdictMessage>(*reply).verdict == Verdict::kContinue ? "c" : "s";
    }
    return broadcast(MPI_COMM_WORLD, rank_, verdict) == "c" ? Verdict::kContinue : Verdict::kStop;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_WORLD;
  int fd_, rank_, size_;
};

}  // namespace

bool started_as_worker() { return std::getenv(kSocketEnv) && std::getenv(kGroupEnv); }

void run_worker() {
  int provided = 0;
  int argc = 0;
  char** argv = nullptr;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int fd = -1;
  if (rank == 0) {
    try {
      fd = connect_unix(std::getenv(kSocketEnv));
    } catch (const std::exception& e) {
      std::cerr << "tune worker: " << e.what() << "\n";
      MPI_Abort(MPI_COMM_WORLD, 71);
    }
    const char* group = std::getenv(kGroupEnv);
    send_message(fd, encode(UpMessage{HelloMessage{std::atoi(group ? group : "0"), static_cast<int>(getpid()), size}}));
  }

  while (true) {
    // Rank 0 reads the driver's command; every rank gets it by broadcast.
    std::string command_text = R"({"type":"shutdown"})";
    if (rank == 0) {
      auto frame = receive_message(fd);
      if (frame && decode_down(*frame)) command_text = frame->dump();
    }
    auto command = decode_down(Json::parse(broadcast(MPI_COMM_WORLD, rank, command_text)));
    if (!command || !std::holds_alternative<RunMessage>(*command)) break;
    const TrialStart& start = std::get<RunMessage>(*command).trial;

    UpMessage outcome = DoneMessage{};
    bool fatal = false;
    const RegisteredTrainable* trainable = find_trainable(start.trainable);
    if (!trainable) {
      outcome = ErrorMessage{"unknown trainable '" + start.trainable + "' in worker"};
    } else {
      WorkerSession session(start, fd, rank, size);
      try {
        trainable->function(session);
      } catch (const TrialStopped&) {
        outcome = DoneMessage{true};
      } catch (const std::exception& e) {
        outcome = ErrorMessage{e.what()};
        fatal = size > 1;
      } catch (...) {
        outcome = ErrorMessage{"unknown exception"};
        fatal = size > 1;
      }
    }
    if (fatal) {
      // Other ranks may be blocked in a collective with this one; the only
      // clean way out is to end the group. The driver starts a fresh one.
      if (rank == 0) send_message(fd, encode(outcome));
      else std::cerr << "tune worker rank " << rank << ": " << std::get<ErrorMessage>(outcome).message << "\n";
      MPI_Abort(MPI_COMM_WORLD, 72);
    }
    if (rank == 0 && !send_message(fd, encode(outcome))) break;
  }
  if (fd >= 0) ::close(fd);
  MPI_Finalize();
  std::_Exit(0);
}

}  // namespace tune::internal
