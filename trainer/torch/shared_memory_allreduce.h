// Internal: allreduce (sum) of float32 buffers among ranks on one node
// through an MPI-3 shared memory window, used by GradientSync.
//
// Why: OpenMPI's shared-memory transport moves a large message in 32 KiB
// fragments, each a handshake between the ranks; on oversubscribed cores
// (ranks busy-waiting while the peer is descheduled) a 1 MiB allreduce then
// costs tens of milliseconds. Here each rank copies its buffer into the
// window once, sums its 1/size share of every rank's buffer (reduce-scatter)
// and copies the whole result back (allgather): two barriers per call, and
// the barrier's waiters spin briefly then yield the core.
#pragma once

#include <cstdint>
#include <memory>

#include <mpi.h>

namespace tune::torch_dp::internal {

class SharedMemoryAllreduce {
 public:
  ~SharedMemoryAllreduce();
  // Collective over `comm`. nullptr (on every rank) when the ranks do not all
  // share one node or the window cannot be created. `capacity` floats is the
  // largest buffer sum() takes in one piece (larger ones go in pieces).
  //
  // Windows are cached per communicator for the life of the process and
  // reused by later calls asking for no more capacity; they are never freed
  // (MPI_Win_free is collective, and a GradientSync is often destroyed while
  // unwinding from an exception on one rank only: freeing there would hang
  // the group instead of letting the worker abort it). A larger request
  // creates a new window and leaves the old one until exit.
  static std::shared_ptr<SharedMemoryAllreduce> acquire(MPI_Comm comm, int64_t capacity);

  // data[i] = sum over ranks of data[i]. Collective; identical results on
  // every rank (the same summation order everywhere).
  void sum(float* data, int64_t n);

  struct Header;

 private:
  SharedMemoryAllreduce() = default;
  static std::unique_ptr<SharedMemoryAllreduce> create(MPI_Comm comm, int64_t capacity);
  void barrier();
  void sum_piece(float* data, int64_t n);

  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win window_ = MPI_WIN_NULL;
  int rank_ = 0, size_ = 1;
  int64_t capacity_ = 0;
  Header* header_ = nullptr;
  float* segments_ = nullptr;  // size_ x capacity_
  float* result_ = nullptr;    // capacity_
};

}  // namespace tune::torch_dp::internal
