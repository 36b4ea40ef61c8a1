#include "trainer/torch/shared_memory_allreduce.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <new>
#include <vector>

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
  // Every rank makes the same calls in the same order and releases windows
  // at the same points, so every rank's pool holds the same windows in the
  // same states and takes the same branch here. A window is free when the
  // pool holds the only reference to it.
  static std::mutex mutex;
  static std::map<MPI_Comm, std::vector<std::shared_ptr<SharedMemoryAllreduce>>> pools;
  std::lock_guard<std::mutex> lock(mutex);
  auto& pool = pools[comm];
  for (auto& window : pool) {
    if (window.use_count() == 1 && window->capacity_ >= capacity) return window;
  }
  std::shared_ptr<SharedMemoryAllreduce> created = create(comm, capacity);
  if (created) pool.push_back(created);
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
      s->rank_ == 0 ? static_cast<MPI_Aint>(kHeaderBytes + node_size * capacity * static_cast<int64_t>(sizeof(float)))
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

namespace {
// The passes over a share, in blocks of 8 with no aliasing so that -O2 turns
// each block into vector instructions (GCC 12 at -O2 vectorizes only loops
// without a scalar remainder, hence the fixed-size inner loops).

// x[i] = y[i] = (x[i] + y[i]) * scale: the whole reduce for two ranks.
void add_scale_to_both(float* __restrict x, float* __restrict y, int64_t n, float scale) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) x[i + j] = y[i + j] = (x[i + j] + y[i + j]) * scale;
  }
  for (; i < n; ++i) x[i] = y[i] = (x[i] + y[i]) * scale;
}

// x[i] += y[i].
void add_to(float* __restrict x, const float* __restrict y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) x[i + j] += y[i + j];
  }
  for (; i < n; ++i) x[i] += y[i];
}

// x[i] *= scale.
void scale_by(float* __restrict x, int64_t n, float scale) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) x[i + j] *= scale;
  }
  for (; i < n; ++i) x[i] *= scale;
}
}  // namespace

void SharedMemoryAllreduce::reduce(int64_t offset, int64_t n, float scale) {
  barrier();  // every rank's values for the range are in its region
  // This rank's share of the range, in every rank's region. Only this rank
  // touches these shares until the second barrier, so it sums them in rank
  // order (the partial sum in rank 0's region) and writes the same bits
  // into every region.
  const int64_t begin = offset + n * rank_ / size_, end = offset + n * (rank_ + 1) / size_;
  const int64_t count = end - begin;
  auto share = [&](int r) { return segments_ + r * capacity_ + begin; };
  if (size_ == 2) {
    add_scale_to_both(share(0), share(1), count, scale);
  } else {
    float* sum = share(0);
    for (int r = 1; r < size_; ++r) add_to(sum, share(r), count);
    scale_by(sum, count, scale);
    for (int r = 1; r < size_; ++r) std::copy_n(sum, count, share(r));
  }
  barrier();  // every share is in every region
  // A rank writes its region again only after passing the second barrier,
  // and other ranks touch it only between the two: no third barrier is
  // needed.
}

}  // namespace tune::torch_dp::internal
