// DistributedSampler and shard_indices (declared in distributed.h).
#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "base/error.h"
#include "trainer/torch/distributed.h"

namespace tune::torch_dp {

DistributedSampler::DistributedSampler(int64_t n, int rank, int size, uint64_t seed, bool shuffle, bool drop_last)
    : n_(n), rank_(rank), size_(size), seed_(seed), shuffle_(shuffle), drop_last_(drop_last) {
  if (n < 0 || size < 1 || rank < 0 || rank >= size) {
    throw ConfigError("DistributedSampler: need n >= 0 and 0 <= rank < size, got n=" + std::to_string(n) +
                                " rank=" + std::to_string(rank) + " size=" + std::to_string(size));
  }
}

DistributedSampler::DistributedSampler(int64_t n, MPI_Comm comm, uint64_t seed, bool shuffle, bool drop_last)
    : DistributedSampler(n, rank_of(comm), size_of(comm), seed, shuffle, drop_last) {}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> order(static_cast<size_t>(n_));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle_) {
    std::seed_seq seq{static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32),
                      static_cast<uint32_t>(epoch_), static_cast<uint32_t>(static_cast<uint64_t>(epoch_) >> 32)};
    std::mt19937_64 rng(seq);
    // Fisher-Yates with our own index draw: std::shuffle's distribution use is
    // implementation-defined, this one is the same on every standard library.
    for (int64_t i = n_ - 1; i > 0; --i) {
      const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
      std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
    }
  }
  const int64_t per_rank = drop_last_ ? n_ / size_ : (n_ + size_ - 1) / size_;
  std::vector<int64_t> shard;
  if (n_ == 0) return shard;
  shard.reserve(static_cast<size_t>(per_rank));
  for (int64_t i = 0; i < per_rank; ++i) {
    const int64_t position = rank_ + i * size_;
    shard.push_back(order[static_cast<size_t>(position % n_)]);
  }
  return shard;
}

std::vector<torch::Tensor> DistributedSampler::batches(int64_t batch_size) const {
  if (batch_size < 1) throw ConfigError("batch size must be >= 1, got " + std::to_string(batch_size));
  std::vector<int64_t> all = indices();
  torch::Tensor index = torch::tensor(all, torch::kLong);
  std::vector<torch::Tensor> out;
  for (int64_t start = 0; start < index.size(0); start += batch_size) {
    out.push_back(index.slice(0, start, std::min<int64_t>(start + batch_size, index.size(0))));
  }
  return out;
}

std::vector<int64_t> shard_indices(int64_t n, int rank, int size, int64_t epoch, uint64_t seed) {
  DistributedSampler sampler(n, rank, size, seed);
  sampler.set_epoch(epoch);
  return sampler.indices();
}

}  // namespace tune::torch_dp
