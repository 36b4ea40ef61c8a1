// Data-parallel training of libtorch models inside a tune worker group (the
// Ray Train `prepare_model` / `prepare_data_loader` idea, C++-native).
//
//   tune::torch_dp::use_session_threads(session);             // cpus_per_worker intra-op threads
//   MPI_Comm comm = tune::communicator(session);              // trainer/communicator.h
//   auto sync = tune::torch_dp::prepare_model(*model, comm);   // broadcast rank 0's weights
//   tune::torch_dp::DistributedSampler sampler(n, comm, /*seed=*/0);
//   for (int64_t epoch = start; epoch < epochs; ++epoch) {
//     sampler.set_epoch(epoch);
//     for (auto& rows : sampler.batches(batch_size)) {
//       optimizer.zero_grad();
//       loss_fn(model->forward(x.index_select(0, rows)), ...).backward();
//       sync->synchronize();                                              // averaged gradients
//       optimizer.step();
//     }
//     tune::torch_dp::MeanMetrics m; m.add("val_loss", loss_sum, count); ...
//     Json metrics = m.reduce(comm);                         // same on every rank
//     std::string dir = session.make_checkpoint_dir();
//     tune::torch_dp::save_checkpoint(dir, *model, optimizer, epoch + 1, comm);  // rank 0 writes
//     session.report(metrics, dir);
//   }
//
// Every function taking a communicator is collective: all ranks call it in
// the same order. With MPI_COMM_NULL or a one-rank communicator they do no MPI
// calls. Parameters and gradients must be float32 tensors, on the CPU or a
// CUDA device (they are staged through CPU buffers for MPI). Errors throw
// tune::Error (c10::Error from libtorch itself); an MPI error aborts.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <mpi.h>
#include <torch/torch.h>

#include "trainer/communicator.h"
#include "trainer/session.h"
#include "trainer/torch/process.h"

namespace tune::torch_dp {

// The device a trainable trains on, from its config key `device`: "auto"
// (default: this rank's GPU when the libtorch build has CUDA and a GPU is
// visible, CUDA_VISIBLE_DEVICES being the rank's own, else the CPU), "cpu",
// or "cuda" (an error without CUDA).
torch::Device training_device(const Json& config);

int rank_of(MPI_Comm comm);
int size_of(MPI_Comm comm);

// Copies rank 0's parameters and buffers to every rank (one flattened MPI_Bcast).
void broadcast_parameters(torch::nn::Module& module, MPI_Comm comm);

// Averages the gradients of all parameters across ranks in one flattened,
// blocking MPI_Allreduce. Simple and correct; GradientSync overlaps instead.
void allreduce_gradients(torch::nn::Module& module, MPI_Comm comm);

struct GradientSyncOptions {
  // Without the shared window (below): gradients are packed into flat
  // buckets of about this many bytes, in reverse parameter order (the order
  // backward produces them); one MPI_Iallreduce per bucket. Default: 1 MiB.
  int64_t bucket_bytes = 1 << 20;
  // Without the shared window: start a bucket's allreduce from a gradient
  // hook as soon as all its gradients exist, overlapping communication with
  // the rest of backward. False: all buckets are reduced in synchronize().
  // Default: true.
  bool overlap = true;
  // When every rank is on one node, average through an MPI-3 shared memory
  // window instead of MPI_Iallreduce, whose fragment-by-fragment handshakes
  // are slow on oversubscribed cores. The gradients of CPU parameters become
  // views of the rank's region of the window, so backward writes them there,
  // and synchronize() averages them in place (one pass, two barriers); no
  // hooks, no buckets. Default: true.
  bool shared_memory = true;
};

// Gradient averaging for one module (what DDP does after backward). Build it
// with prepare_model(); keep it alive while training. Each backward must be
// followed by synchronize() before the optimizer step. Within one step, a
// parameter's gradient is the sum of this backward's contributions (call
// optimizer.zero_grad() before backward; gradient accumulation over several
// backward passes is not supported). Parameters that get no gradient in a
// backward count as zero on that rank. Not thread safe.
class GradientSync {
 public:
  GradientSync(torch::nn::Module& module, MPI_Comm comm, GradientSyncOptions options = {});
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // Completes the allreduce and leaves the averaged gradient in each
  // parameter's .grad(). Collective. On the shared window, .grad() of a CPU
  // parameter is afterwards a view of the window (valid, and kept as a copy,
  // after the GradientSync is destroyed).
  void synchronize();

  // Buckets over MPI_Iallreduce; 1 on the shared window (the whole gradient).
  int num_buckets() const;
  // True when gradients go through the shared memory window.
  bool uses_shared_memory() const;
  // Seconds spent in MPI calls for gradients (starting, progressing and
  // waiting for allreduces) since construction, and in synchronize() only
  // (the part not hidden behind backward).
  double communication_seconds() const;
  double exposed_seconds() const;
  int64_t steps() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// Broadcasts rank 0's parameters and buffers, then returns the gradient
// averaging for `module` (nullptr-free even for one rank: synchronize() is
// then a no-op). `module` must outlive the result. Also applies
// keep_freed_memory() and flush_denormals() (process.h) to this process.
std::unique_ptr<GradientSync> prepare_model(torch::nn::Module& module, MPI_Comm comm,
                                            GradientSyncOptions options = {});

// DistributedSampler semantics (as torch.utils.data.DistributedSampler): a
// permutation of [0, n) seeded by (seed, epoch) (identity when shuffle is
// false). Without drop_last it is padded by wrapping around to a multiple of
// the group size, so every rank gets ceil(n / size) indices (uneven last
// shard: a few samples are seen twice per epoch); with drop_last the tail is
// dropped and every rank gets floor(n / size). Rank r takes positions
// r, r + size, r + 2 size, ... Every rank thus does the same number of steps.
class DistributedSampler {
 public:
  DistributedSampler(int64_t n, int rank, int size, uint64_t seed, bool shuffle = true, bool drop_last = false);
  DistributedSampler(int64_t n, MPI_Comm comm, uint64_t seed, bool shuffle = true, bool drop_last = false);

  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  // This rank's indices for the current epoch.
  std::vector<int64_t> indices() const;
  // indices() cut into batches of `batch_size` (the last may be smaller), as
  // int64 tensors for index_select.
  std::vector<torch::Tensor> batches(int64_t batch_size) const;

 private:
  int64_t n_;
  int rank_, size_;
  uint64_t seed_;
  bool shuffle_, drop_last_;
  int64_t epoch_ = 0;
};

// Same as DistributedSampler(n, rank, size, seed).set_epoch(epoch).indices().
std::vector<int64_t> shard_indices(int64_t n, int rank, int size, int64_t epoch, uint64_t seed);

// Sums `values` element-wise across ranks (e.g. {loss_sum, correct, count}).
std::vector<double> allreduce_sum(std::vector<double> values, MPI_Comm comm);

// Means of per-rank sums: add(key, sum, count) on each rank, then reduce()
// gives {key: total sum / total count} on every rank (one MPI_Allreduce).
// All ranks must add the same keys.
class MeanMetrics {
 public:
  void add(const std::string& key, double sum, double count);
  Json reduce(MPI_Comm comm) const;

 private:
  std::map<std::string, std::pair<double, double>> sums_;
};

// Checkpoints: `dir` holds model.pt (parameters and buffers), optimizer.pt
// and state.json ({"epoch": E, ...extra}).
//
// Rank 0 writes the files; other ranks only wait at a barrier so that the
// files exist when the call returns on any rank. Collective.
void save_checkpoint(const std::string& dir, torch::nn::Module& module, torch::optim::Optimizer* optimizer,
                     int64_t epoch, MPI_Comm comm, const Json& extra = Json::object());
// Every rank loads the files written by save_checkpoint (the optimizer if
// given) and returns state.json. Throws tune::Error naming the file
// if one is missing or does not match the module.
// Tensors are loaded onto `device` (the module's device when training on a
// GPU); without one, where they were saved from.
Json load_checkpoint(const std::string& dir, torch::nn::Module& module, torch::optim::Optimizer* optimizer = nullptr,
                     std::optional<torch::Device> device = std::nullopt);

}  // namespace tune::torch_dp
