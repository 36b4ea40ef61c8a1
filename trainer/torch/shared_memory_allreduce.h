// Internal: allreduce (sum) of float32 buffers among ranks on one node
// through an MPI-3 shared memory window, used by GradientSync.
//
// Why: OpenMPI's shared-memory transport moves a large message in 32 KiB
// fragments, each a handshake between the ranks; on oversubscribed cores
// (ranks busy-waiting while the peer is descheduled) a 1 MiB allreduce then
// costs tens of milliseconds.
//
// How: the window holds one region per rank, `capacity` floats each. A
// rank writes its values into its own region (GradientSync makes the
// parameters' gradients views of it, so backward writes them there), then
// reduce() is an in-place allreduce: each rank sums its 1/size share of the
// range over every rank's region and writes the scaled sum into that share
// of every region (reduce-scatter and allgather in one pass). Two barriers
// per reduce(); their waiters spin briefly then yield the core.
#pragma once

#include <cstdint>
#include <memory>

#include <mpi.h>

namespace tune::torch_dp::internal {

class SharedMemoryAllreduce {
 public:
  ~SharedMemoryAllreduce();
  // Collective over `comm`. nullptr (on every rank) when the ranks do not all
  // share one node or the window cannot be created. The window has room for
  // `capacity` floats per rank.
  //
  // A window belongs to its caller for as long as the returned pointer (and
  // its copies) live; then it goes back to a per-communicator pool, and a
  // later acquire() asking for no more capacity reuses it. Windows are never
  // freed (MPI_Win_free is collective, and a GradientSync is often destroyed
  // while unwinding from an exception on one rank only: freeing there would
  // hang the group instead of letting the worker abort it); the OS reclaims
  // them at exit.
  static std::shared_ptr<SharedMemoryAllreduce> acquire(MPI_Comm comm, int64_t capacity);

  int64_t capacity() const { return capacity_; }
  // This rank's region (capacity() floats). The rank may write it outside
  // reduce() only: other ranks read and write it inside reduce() alone.
  float* region() { return segments_ + rank_ * capacity_; }
  // Collective; every rank passes the same arguments in the same order. After
  // it returns on this rank: region()[offset + i] = scale * the sum over ranks
  // (in rank order) of their region()[offset + i] before the call, the same
  // bits on every rank.
  void reduce(int64_t offset, int64_t n, float scale);

  struct Header;

 private:
  SharedMemoryAllreduce() = default;
  static std::unique_ptr<SharedMemoryAllreduce> create(MPI_Comm comm, int64_t capacity);
  void barrier();

  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win window_ = MPI_WIN_NULL;
  int rank_ = 0, size_ = 1;
  int64_t capacity_ = 0;
  Header* header_ = nullptr;
  float* segments_ = nullptr;  // size_ x capacity_
};

}  // namespace tune::torch_dp::internal
