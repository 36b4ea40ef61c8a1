#include "trainer/torch/distributed.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace tune::torch_dp {

int rank_of(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return 0;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

int size_of(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return 1;
  int size = 1;
  MPI_Comm_size(comm, &size);
  return size;
}

namespace {

std::vector<torch::Tensor> state_tensors(torch::nn::Module& module) {
  std::vector<torch::Tensor> tensors;
  for (auto& p : module.parameters()) tensors.push_back(p);
  for (auto& b : module.buffers()) tensors.push_back(b);
  return tensors;
}

}  // namespace

void broadcast_parameters(torch::nn::Module& module, MPI_Comm comm) {
  if (size_of(comm) <= 1) return;
  torch::NoGradGuard no_grad;
  auto tensors = state_tensors(module);
  std::vector<torch::Tensor> flat_parts;
  for (auto& t : tensors) flat_parts.push_back(t.detach().to(torch::kFloat32).reshape(-1));
  torch::Tensor flat = torch::cat(flat_parts).contiguous();
  MPI_Bcast(flat.data_ptr<float>(), static_cast<int>(flat.numel()), MPI_FLOAT, 0, comm);
  int64_t offset = 0;
  for (auto& t : tensors) {
    const int64_t n = t.numel();
    t.copy_(flat.slice(0, offset, offset + n).view_as(t));
    offset += n;
  }
}

void allreduce_gradients(torch::nn::Module& module, MPI_Comm comm) {
  const int size = size_of(comm);
  if (size <= 1) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (auto& p : module.parameters()) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  std::vector<torch::Tensor> parts;
  for (auto& g : grads) parts.push_back(g.reshape(-1));
  torch::Tensor flat = torch::cat(parts).contiguous();
  MPI_Allreduce(MPI_IN_PLACE, flat.data_ptr<float>(), static_cast<int>(flat.numel()), MPI_FLOAT, MPI_SUM, comm);
  flat.div_(static_cast<double>(size));
  int64_t offset = 0;
  for (auto& g : grads) {
    const int64_t n = g.numel();
    g.copy_(flat.slice(0, offset, offset + n).view_as(g));
    offset += n;
  }
}

std::vector<double> allreduce_sum(std::vector<double> values, MPI_Comm comm) {
  if (size_of(comm) <= 1) return values;
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM, comm);
  return values;
}

std::vector<int64_t> shard_indices(int64_t n, int rank, int size, int64_t epoch, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed * 1000003ULL + static_cast<uint64_t>(epoch));
  std::shuffle(order.begin(), order.end(), rng);
  const int64_t per_rank = (n + size - 1) / size;
  std::vector<int64_t> shard;
  shard.reserve(static_cast<size_t>(per_rank));
  for (int64_t i = 0; i < per_rank; ++i) {
    const int64_t position = rank + i * size;
    shard.push_back(order[static_cast<size_t>(position % n)]);
  }
  return shard;
}

}  // namespace tune::torch_dp
