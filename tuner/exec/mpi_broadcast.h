// Internal: rank 0's string on every rank of a worker group, any length (the
// worker's trial start, a command trainable's rendezvous address). Both
// broadcasts are non-blocking and polled, calling `idle()` between tests: a
// rank waiting for rank 0 (which may wait for the driver for minutes) sleeps
// or watches its child instead of spinning in MPI_Bcast, which busy-waits in
// OpenMPI and would burn a core per idle rank.
//
//   std::string start = broadcast_text(comm, rank, text, Backoff{});
#pragma once

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <string>
#include <thread>

#include "base/error.h"

namespace tune::internal {

// Polls `request` until it completes, calling idle() between tests (idle may throw).
template <typename Idle>
void wait_request(MPI_Request& request, Idle&& idle) {
  int done = 0;
  while (MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done) idle();
}

// An idle step that sleeps 5 µs, doubling up to 2 ms: quick when rank 0
// answers at once, nearly free when it waits long.
class Backoff {
 public:
  void operator()() {
    std::this_thread::sleep_for(pause_);
    if (pause_ < std::chrono::milliseconds(2)) pause_ *= 2;
  }

 private:
  std::chrono::microseconds pause_{5};
};

// Every rank calls it (a collective); rank 0's `text` is returned on all.
template <typename Idle>
std::string broadcast_text(MPI_Comm comm, int rank, std::string text, Idle&& idle) {
  uint64_t size = text.size();
  MPI_Request request;
  MPI_Ibcast(&size, 1, MPI_UINT64_T, 0, comm, &request);
  wait_request(request, idle);
  if (size > static_cast<uint64_t>(INT_MAX)) throw Error("a broadcast of " + std::to_string(size) + " bytes is too long");
  if (rank != 0) text.assign(size, '\0');
  if (size == 0) return text;
  MPI_Ibcast(text.data(), static_cast<int>(size), MPI_CHAR, 0, comm, &request);
  wait_request(request, idle);
  return text;
}

}  // namespace tune::internal
