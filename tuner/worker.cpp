#include "tuner/worker.h"

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

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

  MPI_Comm communicator() const override { return MPI_COMM_WORLD; }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }

 protected:
  std::string exchange(const Json& metrics, const std::string& checkpoint_dir) override {
    std::string action;
    if (rank_ == 0) {
      Json message = {{"type", "result"}, {"metrics", metrics}, {"checkpoint", checkpoint_dir}};
      if (!send_message(fd_, message)) std::_Exit(70);  // driver gone: nothing to report to
      auto reply = receive_message(fd_);
      if (!reply) std::_Exit(70);
      action = reply->value("action", "stop");
    }
    return broadcast(MPI_COMM_WORLD, rank_, action);
  }

 private:
  int fd_, rank_, size_;
};

}  // namespace

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
    send_message(fd, {{"type", "hello"}, {"group", std::atoi(group ? group : "0")},
                      {"pid", static_cast<int>(getpid())}, {"world_size", size}});
  }

  while (true) {
    std::string command_text;
    if (rank == 0) {
      auto command = receive_message(fd);
      command_text = command ? command->dump() : R"({"type":"shutdown"})";
    }
    const Json command = Json::parse(broadcast(MPI_COMM_WORLD, rank, command_text));
    const std::string type = command.value("type", "");
    if (type != "run") break;

    TrialStart start = TrialStart::from_json(command.at("trial"));
    const RegisteredTrainable* trainable = find_trainable(start.trainable);
    Json outcome = {{"type", "done"}};
    bool fatal = false;
    if (!trainable) {
      outcome = {{"type", "error"}, {"message", "unknown trainable '" + start.trainable + "' in worker"}};
    } else {
      WorkerSession session(start, fd, rank, size);
      try {
        trainable->function(session);
      } catch (const TrialStopped&) {
        outcome["stopped"] = true;
      } catch (const std::exception& e) {
        outcome = {{"type", "error"}, {"message", std::string(e.what())}};
        fatal = size > 1;
      } catch (...) {
        outcome = {{"type", "error"}, {"message", "unknown exception"}};
        fatal = size > 1;
      }
    }
    if (fatal) {
      // Other ranks may be blocked in a collective with this one; the only
      // clean way out is to end the group. The driver starts a fresh one.
      if (rank == 0) send_message(fd, outcome);
      else std::cerr << "tune worker rank " << rank << ": " << outcome["message"].get<std::string>() << "\n";
      MPI_Abort(MPI_COMM_WORLD, 72);
    }
    if (rank == 0 && !send_message(fd, outcome)) break;
  }
  if (fd >= 0) ::close(fd);
  MPI_Finalize();
  std::_Exit(0);
}

}  // namespace tune::internal
