// Data-parallel helpers for libtorch models inside a tune worker group.
//
//   tune::torch_dp::broadcast_parameters(model, session.communicator());  // same start on every rank
//   for (auto index : tune::torch_dp::shard_indices(n, rank, size, epoch, seed)) ...
//   loss.backward();
//   tune::torch_dp::allreduce_gradients(model, session.communicator());   // average over ranks
//   optimizer.step();
//
// Every function is collective: all ranks of the communicator call it in the
// same order. With MPI_COMM_NULL (in-process trials) or one rank they are
// no-ops. Tensors must be float32 on the CPU.
#pragma once

#include <cstdint>
#include <vector>

#include <mpi.h>
#include <torch/torch.h>

namespace tune::torch_dp {

// Copies rank 0's parameters and buffers to every rank (one flattened MPI_Bcast).
void broadcast_parameters(torch::nn::Module& module, MPI_Comm comm);

// Averages the gradients of all parameters across ranks, flattened into one
// buffer per call (one MPI_Allreduce instead of one per tensor).
void allreduce_gradients(torch::nn::Module& module, MPI_Comm comm);

// Sums `values` element-wise across ranks (e.g. {loss_sum, correct, count}).
std::vector<double> allreduce_sum(std::vector<double> values, MPI_Comm comm);

// DistributedSampler semantics: a permutation of [0, n) seeded by
// (seed, epoch), padded by wrapping so every rank gets ceil(n / size) indices;
// rank r takes positions r, r + size, r + 2 size, ...
std::vector<int64_t> shard_indices(int64_t n, int rank, int size, int64_t epoch, uint64_t seed);

int rank_of(MPI_Comm comm);
int size_of(MPI_Comm comm);

}  // namespace tune::torch_dp
