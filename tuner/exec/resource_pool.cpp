#include "tuner/exec/resource_pool.h"

#include <algorithm>
#include <numeric>

namespace tune::internal {

ResourcePool::ResourcePool(int slots) : ResourcePool(std::vector<Host>{Host{"", slots, 0, true}}) {}

ResourcePool::ResourcePool(std::vector<Host> hosts) : hosts_(std::move(hosts)) {
  state_.resize(hosts_.size());
  for (size_t h = 0; h < hosts_.size(); ++h) {
    state_[h].free_slots = hosts_[h].slots;
    state_[h].free_gpus.resize(static_cast<size_t>(hosts_[h].gpus));
    std::iota(state_[h].free_gpus.begin(), state_[h].free_gpus.end(), 0);
    index_[hosts_[h].name] = h;
    by_free_.emplace(hosts_[h].slots, h);
    total_ += hosts_[h].slots;
  }
}

bool ResourcePool::single_host() const {
  return std::all_of(hosts_.begin(), hosts_.end(), [](const Host& h) { return h.local; });
}

int ResourcePool::capacity(size_t h, const PlacementRequest& r) const {
  const State& s = state_[h];
  int n = s.free_slots / std::max(1, r.cpus_per_rank);
  if (r.gpus_per_rank > 0) n = std::min(n, static_cast<int>(s.free_gpus.size()) / r.gpus_per_rank);
  return n;
}

// by_free_ is ordered by free slots: once a host has fewer than one rank
// needs, so do all the hosts after it (from rbegin), and a walk over them can
// stop. Without it a full cluster cost a walk over every host per question.
bool ResourcePool::has_room(const std::pair<int, size_t>& entry, const PlacementRequest& r) {
  return entry.first >= std::max(1, r.cpus_per_rank);
}

void ResourcePool::set_free(size_t h, int free_slots) {
  State& s = state_[h];
  if (!s.out()) {
    by_free_.erase({s.free_slots, h});
    by_free_.emplace(free_slots, h);
  }
  s.free_slots = free_slots;
}

void ResourcePool::take(size_t h, int ranks, const PlacementRequest& r, Placement& placement) {
  Placement::Share share;
  share.host = hosts_[h].name;
  share.ranks = ranks;
  auto& gpus = state_[h].free_gpus;
  const size_t n = static_cast<size_t>(ranks * r.gpus_per_rank);
  share.gpus.assign(gpus.begin(), gpus.begin() + static_cast<std::ptrdiff_t>(n));
  gpus.erase(gpus.begin(), gpus.begin() + static_cast<std::ptrdiff_t>(n));
  set_free(h, state_[h].free_slots - ranks * r.cpus_per_rank);
  placement.hosts.push_back(std::move(share));
}

std::optional<Placement> ResourcePool::acquire(const PlacementRequest& r) {
  std::vector<std::pair<size_t, int>> plan;  // (host, ranks)
  int left = r.ranks;
  if (r.policy == PlacementPolicy::kPack) {
    // One host if any can hold the whole group: the fullest that fits.
    for (auto it = by_free_.lower_bound({r.ranks * r.cpus_per_rank, 0}); it != by_free_.end(); ++it) {
      if (capacity(it->second, r) >= r.ranks) {
        plan.emplace_back(it->second, r.ranks);
        left = 0;
        break;
      }
    }
    // Else across hosts, the emptiest first: as few hosts as possible.
    for (auto it = by_free_.rbegin(); left > 0 && it != by_free_.rend() && has_room(*it, r); ++it) {
      const int n = std::min(left, capacity(it->second, r));
      if (n <= 0) continue;
      plan.emplace_back(it->second, n);
      left -= n;
    }
  } else {
    // One rank per host, emptiest first; more rounds while ranks are left.
    std::vector<std::pair<size_t, int>> room;  // (host, capacity)
    for (auto it = by_free_.rbegin();
         it != by_free_.rend() && has_room(*it, r) && static_cast<int>(room.size()) < r.ranks; ++it)
      if (int c = capacity(it->second, r); c > 0) room.emplace_back(it->second, c);
    std::vector<int> given(room.size(), 0);
    for (bool progress = true; left > 0 && progress;) {
      progress = false;
      for (size_t i = 0; i < room.size() && left > 0; ++i) {
        if (given[i] >= room[i].second) continue;
        ++given[i], --left, progress = true;
      }
    }
    for (size_t i = 0; i < room.size(); ++i)
      if (given[i] > 0) plan.emplace_back(room[i].first, given[i]);
  }
  if (left > 0) return std::nullopt;
  Placement placement;
  placement.gpus_per_rank = r.gpus_per_rank;
  placement.slots = r.ranks * r.cpus_per_rank;
  for (const auto& [h, n] : plan) take(h, n, r, placement);
  used_ += placement.slots;
  return placement;
}

void ResourcePool::release(const Placement& placement) {
  const int cpus = placement.ranks() > 0 ? placement.slots / placement.ranks() : 0;
  for (const auto& share : placement.hosts) {
    auto it = index_.find(share.host);
    if (it == index_.end()) continue;
    State& s = state_[it->second];
    s.free_gpus.insert(s.free_gpus.end(), share.gpus.begin(), share.gpus.end());
    std::sort(s.free_gpus.begin(), s.free_gpus.end());
    set_free(it->second, s.free_slots + share.ranks * cpus);
  }
  used_ -= placement.slots;
}

bool ResourcePool::fits(const PlacementRequest& r) const {
  int room = 0;
  for (auto it = by_free_.rbegin(); it != by_free_.rend() && has_room(*it, r) && room < r.ranks; ++it)
    room += capacity(it->second, r);
  return room >= r.ranks;
}

bool ResourcePool::could_ever_fit(const PlacementRequest& r) const {
  int room = 0;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (state_[h].gone()) continue;
    int n = hosts_[h].slots / std::max(1, r.cpus_per_rank);
    if (r.gpus_per_rank > 0) n = std::min(n, hosts_[h].gpus / r.gpus_per_rank);
    room += n;
  }
  return room >= r.ranks;
}

bool ResourcePool::record_loss(const std::string& host) {
  auto it = index_.find(host);
  if (it == index_.end() || hosts_.size() < 2) return false;  // the only host is never taken out
  State& s = state_[it->second];
  if (s.out() || ++s.failures < failure_limit_) return false;
  s.excluded = true;
  by_free_.erase({s.free_slots, it->second});
  return true;
}

void ResourcePool::record_success(const std::string& host) {
  auto it = index_.find(host);
  if (it != index_.end() && !state_[it->second].excluded) state_[it->second].failures = 0;
}

bool ResourcePool::readmit(const std::string& host) {
  auto it = index_.find(host);
  if (it == index_.end() || !state_[it->second].excluded) return false;
  State& s = state_[it->second];
  s.excluded = false;
  s.failures = 0;
  if (!s.out()) by_free_.emplace(s.free_slots, it->second);
  return true;
}

void ResourcePool::suspend(const std::string& host, bool suspended) {
  auto it = index_.find(host);
  if (it == index_.end()) return;
  State& s = state_[it->second];
  if (s.suspended == suspended) return;
  const bool was_out = s.out();
  s.suspended = suspended;
  if (!was_out && s.out()) by_free_.erase({s.free_slots, it->second});
  if (was_out && !s.out()) by_free_.emplace(s.free_slots, it->second);
}

bool ResourcePool::add_host(const Host& host) {
  auto it = index_.find(host.name);
  if (it != index_.end()) {
    State& s = state_[it->second];
    if (!s.drained) return false;
    // Back from a drain, with its new counts; what still runs there keeps
    // its share until it is released.
    const int busy = hosts_[it->second].slots - s.free_slots;
    total_ += host.slots - hosts_[it->second].slots;
    hosts_[it->second].slots = host.slots;
    hosts_[it->second].gpus = host.gpus;
    s.free_slots = host.slots - busy;
    s.drained = false;
    s.failures = 0;
    if (!s.out()) by_free_.emplace(s.free_slots, it->second);
    return true;
  }
  const size_t h = hosts_.size();
  hosts_.push_back(host);
  state_.emplace_back();
  state_[h].free_slots = host.slots;
  state_[h].free_gpus.resize(static_cast<size_t>(host.gpus));
  std::iota(state_[h].free_gpus.begin(), state_[h].free_gpus.end(), 0);
  index_[host.name] = h;
  by_free_.emplace(host.slots, h);
  total_ += host.slots;
  return true;
}

bool ResourcePool::drain(const std::string& host) {
  auto it = index_.find(host);
  if (it == index_.end()) return false;
  State& s = state_[it->second];
  if (!s.out()) by_free_.erase({s.free_slots, it->second});
  s.drained = true;
  return true;
}

bool ResourcePool::drained(const std::string& host) const {
  auto it = index_.find(host);
  return it != index_.end() && state_[it->second].drained;
}

std::vector<std::string> ResourcePool::excluded() const {
  std::vector<std::string> out;
  for (size_t h = 0; h < hosts_.size(); ++h)
    if (state_[h].excluded) out.push_back(hosts_[h].name);
  return out;
}

}  // namespace tune::internal
