// Internal: the slots the sweep may use and which attempts hold them. The
// driver asks for a placement before it starts an attempt and gives it back
// when the attempt has ended.
//
//   ResourcePool pool(8);                        // this machine, 8 slots
//   if (auto placement = pool.acquire(2, 1))     // 2 ranks x 1 cpu
//     executor.start(attempt, trial, *placement);
//   ...
//   pool.release(*placement);
//
// Not thread safe (the driver's thread only).
#pragma once

#include <optional>

#include "tuner/executor.h"

namespace tune::internal {

class ResourcePool {
 public:
  explicit ResourcePool(int slots) : total_(slots) {}

  // A placement of `ranks` ranks of `cpus_per_rank` slots each, or nullopt
  // when they do not fit now.
  std::optional<Placement> acquire(int ranks, int cpus_per_rank);
  void release(const Placement& placement);

  bool fits(int ranks, int cpus_per_rank) const { return used_ + ranks * cpus_per_rank <= total_; }
  int used() const { return used_; }
  int total() const { return total_; }

 private:
  int total_ = 1;
  int used_ = 0;
};

}  // namespace tune::internal
