// Internal: the slots (and GPUs) of every host the sweep may use, and which
// attempts hold them. The driver asks for a placement before it starts an
// attempt and gives it back when the attempt has ended; a host that keeps
// losing attempts is taken out.
//
//   ResourcePool pool(hosts);                                  // or ResourcePool(8): this machine
//   PlacementRequest request{/*ranks=*/4, /*cpus_per_rank=*/1};
//   if (auto placement = pool.acquire(request))                // 2 + 2 ranks on two hosts, say
//     executor.start(attempt, trial, *placement);
//   ...
//   pool.release(*placement);
//
// Placement never oversubscribes a host: a rank takes cpus_per_rank slots and
// gpus_per_rank GPUs of its host. kPack puts a group on as few hosts as
// possible (the fullest host that fits it: best fit); kSpread puts its ranks
// on as many hosts as possible, emptiest first. Each decision costs
// O(log hosts) per host it uses or looks at, and fits() on a full cluster
// looks at one host (hosts are kept ordered by free slots; a walk stops at the
// first with too few for a rank). Not thread safe (the driver's thread only).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tuner/exec/executor.h"
#include "tuner/exec/hosts.h"

namespace tune::internal {

enum class PlacementPolicy { kPack, kSpread };

struct PlacementRequest {
  int ranks = 1;
  int cpus_per_rank = 1;
  int gpus_per_rank = 0;
  PlacementPolicy policy = PlacementPolicy::kPack;
};

class ResourcePool {
 public:
  // This machine alone, with `slots` slots and no GPUs.
  explicit ResourcePool(int slots);
  explicit ResourcePool(std::vector<Host> hosts);

  std::optional<Placement> acquire(const PlacementRequest& request);
  void release(const Placement& placement);
  // Would the request fit now / on the healthy hosts when all is free?
  bool fits(const PlacementRequest& request) const;
  bool could_ever_fit(const PlacementRequest& request) const;

  // Host health: a lost attempt counts against each host it ran on; a
  // successful one clears the count. After `limit` failures in a row a host
  // is excluded: it takes no new placement.
  // Returns true when this loss took the host out.
  bool record_loss(const std::string& host);
  void record_success(const std::string& host);
  void set_failure_limit(int limit) { failure_limit_ = limit; }
  std::vector<std::string> excluded() const;
  // An excluded host found healthy again (a host check passed): it takes
  // placements again, its failure count cleared. False if it was not excluded.
  bool readmit(const std::string& host);

  // Hosts joining or leaving a running sweep (`tune hosts EXP add|drain`).
  // add_host: a new host, or a drained one back with its new counts; false
  // when the name is taken by a host that is not drained. drain: the host
  // takes no new placement; what runs there finishes. False if unknown.
  bool add_host(const Host& host);
  bool drain(const std::string& host);
  // A host under suspicion (a check is finding out whether it is at fault):
  // no new placement meanwhile, but it still counts for could_ever_fit.
  void suspend(const std::string& host, bool suspended);
  bool drained(const std::string& host) const;
  bool knows(const std::string& host) const { return index_.count(host) > 0; }

  int used() const { return used_; }
  int total() const { return total_; }
  const std::vector<Host>& hosts() const { return hosts_; }
  // True when every host is this machine (one-host sweeps keep Unix sockets
  // and write checkpoints in place).
  bool single_host() const;

 private:
  struct State {
    int free_slots = 0;
    std::vector<int> free_gpus;  // ids
    int failures = 0;
    bool excluded = false;
    bool drained = false;
    bool suspended = false;
    // Gone for good (until readmitted or added again): excluded or drained.
    bool gone() const { return excluded || drained; }
    // Takes no placement now.
    bool out() const { return gone() || suspended; }
  };
  // Ranks that fit on host h for `request`.
  int capacity(size_t h, const PlacementRequest& request) const;
  static bool has_room(const std::pair<int, size_t>& entry, const PlacementRequest& request);
  void take(size_t h, int ranks, const PlacementRequest& request, Placement& placement);
  void set_free(size_t h, int free_slots);

  std::vector<Host> hosts_;
  std::vector<State> state_;
  std::unordered_map<std::string, size_t> index_;
  std::set<std::pair<int, size_t>> by_free_;  // (free slots, host) of healthy hosts
  int total_ = 0, used_ = 0;
  int failure_limit_ = 2;
};

}  // namespace tune::internal
