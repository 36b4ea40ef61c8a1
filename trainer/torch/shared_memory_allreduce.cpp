#include "trainer/torch/shared_memory_allreduce.h"

#include <sched.h>

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

void SharedMemoryAllreduce::reduce(int64_t offset, int64_t n, float scale) {
  barrier();  // every rank's input for the range is in the window
  const int64_t begin = offset + n * rank_ / size_, end = offset + n * (rank_ + 1) / size_;
  float* out = result_ + begin;
  const float* first = segments_ + begin;
  const int64_t count = end - begin;
  if (size_ == 1) {
    for (int64_t i = 0; i < count; ++i) out[i] = first[i] * scale;
  }
  // One pass per further rank; the last one applies the scale. Only this
  // rank sums this share, so every rank reads the same bits.
  for (int r = 1; r < size_; ++r) {
    const float* a = r == 1 ? first : out;
    const float* b = segments_ + r * capacity_ + begin;
    if (r + 1 < size_) {
      for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
    } else {
      for (int64_t i = 0; i < count; ++i) out[i] = (a[i] + b[i]) * scale;
    }
  }
  barrier();  // every share is summed
  // Inputs of the range are read by other ranks only between the two
  // barriers, so a rank may overwrite its input once it is past the second;
  // the result of the range is written again only after the first barrier
  // of the next reduce() over it, which every rank enters only after reading
  // this result: no third barrier is needed.
}

}  // namespace tune::torch_dp::internal
