#include "tuner/resource_pool.h"

namespace tune::internal {

std::optional<Placement> ResourcePool::acquire(int ranks, int cpus_per_rank) {
  if (!fits(ranks, cpus_per_rank)) return std::nullopt;
  Placement placement;
  placement.hosts.push_back({"", ranks});
  placement.slots = ranks * cpus_per_rank;
  used_ += placement.slots;
  return placement;
}

void ResourcePool::release(const Placement& placement) { used_ -= placement.slots; }

}  // namespace tune::internal
