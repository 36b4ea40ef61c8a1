#include "trainer/torch/shared_memory_allreduce.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

namespace tune::torch_dp::internal {

struct SharedMemoryAllreduce::Header {
  alignas(64) std::atomic<uint32_t> arrived;
  alignas(64) std::atomic<uint32_t> generation;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "process-shared atomics must be lock free");

namespace {
constexpr int64_t kHeaderBytes = 256;
}

std::shared_ptr<SharedMemoryAllreduce> SharedMemoryAllreduce::acquire(MPI_Comm comm, int64_t capacity) {
  // Every rank makes the same calls in the same order, so every rank's cache
  // holds the same windows and takes the same branch here.
  static std::mutex mutex;
  static std::map<MPI_Comm, std::shared_ptr<SharedMemoryAllreduce>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(comm);
  if (it != cache.end() && it->second->capacity_ >= capacity) return it->second;
  std::shared_ptr<SharedMemoryAllreduce> created = create(comm, capacity);
  if (created) cache[comm] = created;
  return created;
}

std::unique_ptr<SharedMemoryAllreduce> SharedMemoryAllreduce::create(MPI_Comm comm, int64_t capacity) {
  int comm_size = 1;
  MPI_Comm_size(comm, &comm_size);
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return nullptr;
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  // Same answer on every rank: all share one node or none uses the window.
  if (node_size != comm_size || capacity < 1) {
    MPI_Comm_free(&node);
    return nullptr;
  }
  std::unique_ptr<SharedMemoryAllreduce> s(new SharedMemoryAllreduce());
  s->node_ = node;
  MPI_Comm_rank(node, &s->rank_);
  s->size_ = node_size;
  s->capacity_ = capacity;
  const MPI_Aint bytes =
      s->rank_ == 0 ? static_cast<MPI_Aint>(kHeaderBytes + (node_size + 1) * capacity * static_cast<int64_t>(sizeof(float)))
                    : 0;
  void* base = nullptr;
  int ok = MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, node, &base, &s->window_);
  int all_ok = ok == MPI_SUCCESS;
  MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_LAND, node);
  if (!all_ok) {
    if (ok == MPI_SUCCESS) MPI_Win_free(&s->window_);
    MPI_Comm_free(&s->node_);
    return nullptr;
  }
  MPI_Aint size = 0;
  int unit = 0;
  MPI_Win_shared_query(s->window_, 0, &size, &unit, &base);
  char* bytes0 = static_cast<char*>(base);
  s->header_ = reinterpret_cast<Header*>(bytes0);
  s->segments_ = reinterpret_cast<float*>(bytes0 + kHeaderBytes);
  s->result_ = s->segments_ + node_size * capacity;
  if (s->rank_ == 0) {
    new (&s->header_->arrived) std::atomic<uint32_t>(0);
    new (&s->header_->generation) std::atomic<uint32_t>(0);
  }
  MPI_Barrier(node);
  return s;
}

// Never frees the window or communicator (see acquire()); the OS reclaims
// the shared segment at exit. Only a failed create() frees its communicator.
SharedMemoryAllreduce::~SharedMemoryAllreduce() = default;

// Sense-reversing counter barrier in the window. Waiters spin ~a few
// microseconds, then sched_yield() so a descheduled peer can run.
void SharedMemoryAllreduce::barrier() {
  const uint32_t generation = header_->generation.load(std::memory_order_acquire);
  if (header_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(size_)) {
    header_->arrived.store(0, std::memory_order_relaxed);
    header_->generation.fetch_add(1, std::memory_order_release);
    return;
  }
  for (int spins = 0; header_->generation.load(std::memory_order_acquire) == generation; ++spins) {
    if (spins < 1000) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      sched_yield();
    }
  }
}

void SharedMemoryAllreduce::sum_piece(float* data, int64_t n) {
  std::memcpy(segments_ + rank_ * capacity_, data, static_cast<size_t>(n) * sizeof(float));
  barrier();  // every rank's input is in the window
  const int64_t begin = n * rank_ / size_, end = n * (rank_ + 1) / size_;
  float* out = result_ + begin;
  std::memcpy(out, segments_ + begin, static_cast<size_t>(end - begin) * sizeof(float));
  for (int r = 1; r < size_; ++r) {
    const float* in = segments_ + r * capacity_ + begin;
    for (int64_t i = 0; i < end - begin; ++i) out[i] += in[i];
  }
  barrier();  // every share is summed
  std::memcpy(data, result_, static_cast<size_t>(n) * sizeof(float));
  // The next call writes segments (read only before the second barrier) and
  // the result only after its first barrier, which every rank reaches after
  // this copy: no third barrier is needed.
}

void SharedMemoryAllreduce::sum(float* data, int64_t n) {
  for (int64_t offset = 0; offset < n; offset += capacity_) sum_piece(data + offset, std::min(capacity_, n - offset));
}

}  // namespace tune::torch_dp::internal
