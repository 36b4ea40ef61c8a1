// The resource pool: placement never oversubscribes a host (slots or GPUs),
// kPack uses as few hosts as it can (best fit), kSpread as many, released
// resources come back, and a host that keeps losing attempts is taken out.
#include "tuner/exec/resource_pool.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <map>
#include <set>

namespace tune::internal {
namespace {

Host host(const std::string& name, int slots, int gpus = 0, bool local = false) {
  return Host{name, slots, gpus, local};
}

PlacementRequest pack(int ranks, int cpus = 1, int gpus = 0) {
  return {ranks, cpus, gpus, PlacementPolicy::kPack};
}
PlacementRequest spread(int ranks, int cpus = 1, int gpus = 0) {
  return {ranks, cpus, gpus, PlacementPolicy::kSpread};
}

// host -> ranks of a placement.
std::map<std::string, int> ranks_by_host(const Placement& placement) {
  std::map<std::string, int> out;
  for (const auto& share : placement.hosts) out[share.host] += share.ranks;
  return out;
}

TEST(ResourcePool, PackPutsAGroupOnTheFullestHostThatFits) {
  ResourcePool pool({host("a", 8), host("b", 4), host("c", 2)});
  EXPECT_EQ(pool.total(), 14);
  auto first = pool.acquire(pack(2));
  ASSERT_TRUE(first);
  EXPECT_EQ(ranks_by_host(*first), (std::map<std::string, int>{{"c", 2}}));
  auto second = pool.acquire(pack(3));
  ASSERT_TRUE(second);
  EXPECT_EQ(ranks_by_host(*second), (std::map<std::string, int>{{"b", 3}}));
  auto third = pool.acquire(pack(1));  // b has 1 left: the fullest that fits
  ASSERT_TRUE(third);
  EXPECT_EQ(ranks_by_host(*third), (std::map<std::string, int>{{"b", 1}}));
  auto fourth = pool.acquire(pack(4));
  ASSERT_TRUE(fourth);
  EXPECT_EQ(ranks_by_host(*fourth), (std::map<std::string, int>{{"a", 4}}));
  EXPECT_EQ(pool.used(), 10);
  EXPECT_EQ(first->slots, 2);
  EXPECT_EQ(fourth->ranks(), 4);
}

TEST(ResourcePool, PackSpansAsFewHostsAsPossible) {
  ResourcePool pool({host("small", 2), host("big", 4), host("mid", 3)});
  auto placement = pool.acquire(pack(6));  // no host holds 6: big (4) + mid (2)
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->ranks(), 6);
  EXPECT_EQ(ranks_by_host(*placement), (std::map<std::string, int>{{"big", 4}, {"mid", 2}}));
  EXPECT_EQ(pool.used(), 6);
  // 3 slots are left (mid 1, small 2): 3 ranks fit, 4 do not.
  EXPECT_FALSE(pool.acquire(pack(4)));
  EXPECT_EQ(pool.used(), 6);  // a failed acquire takes nothing
  auto rest = pool.acquire(pack(3));
  ASSERT_TRUE(rest);
  EXPECT_EQ(ranks_by_host(*rest), (std::map<std::string, int>{{"small", 2}, {"mid", 1}}));
  EXPECT_EQ(pool.used(), pool.total());
}

TEST(ResourcePool, SpreadUsesAsManyHostsAsPossibleEmptiestFirst) {
  ResourcePool pool({host("a", 2), host("b", 8), host("c", 4), host("d", 1)});
  auto two = pool.acquire(spread(2));
  ASSERT_TRUE(two);
  EXPECT_EQ(ranks_by_host(*two), (std::map<std::string, int>{{"b", 1}, {"c", 1}}));
  pool.release(*two);

  auto four = pool.acquire(spread(4));
  ASSERT_TRUE(four);
  EXPECT_EQ(ranks_by_host(*four), (std::map<std::string, int>{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}}));
  pool.release(*four);

  // More ranks than hosts: round after round, never beyond a host's room.
  auto nine = pool.acquire(spread(9));
  ASSERT_TRUE(nine);
  EXPECT_EQ(nine->ranks(), 9);
  const auto by_host = ranks_by_host(*nine);
  EXPECT_EQ(by_host.size(), 4u);
  EXPECT_EQ(by_host.at("d"), 1);
  EXPECT_LE(by_host.at("a"), 2);
  EXPECT_EQ(pool.used(), 9);
}

TEST(ResourcePool, NeverOversubscribes) {
  ResourcePool pool(4);
  EXPECT_TRUE(pool.single_host());
  auto all = pool.acquire(pack(4));
  ASSERT_TRUE(all);
  ASSERT_EQ(all->hosts.size(), 1u);
  EXPECT_EQ(all->hosts[0].host, "");
  EXPECT_FALSE(pool.fits(pack(1)));
  EXPECT_FALSE(pool.acquire(pack(1)));
  EXPECT_FALSE(pool.acquire(spread(1)));
  EXPECT_TRUE(pool.could_ever_fit(pack(4)));
  EXPECT_FALSE(pool.could_ever_fit(pack(5)));
  EXPECT_FALSE(ResourcePool(4).acquire(pack(5)));
  pool.release(*all);
  EXPECT_EQ(pool.used(), 0);
  EXPECT_TRUE(pool.fits(pack(4)));
  EXPECT_TRUE(pool.acquire(spread(4)));
}

TEST(ResourcePool, CpusPerRankTakeSeveralSlotsEach) {
  ResourcePool pool({host("a", 8)});
  auto three = pool.acquire(pack(3, 2));
  ASSERT_TRUE(three);
  EXPECT_EQ(three->slots, 6);
  EXPECT_EQ(three->ranks(), 3);
  EXPECT_EQ(pool.used(), 6);
  EXPECT_FALSE(pool.fits(pack(2, 2)));  // 2 slots left: one 2-CPU rank
  EXPECT_FALSE(pool.acquire(pack(2, 2)));
  EXPECT_FALSE(pool.could_ever_fit(pack(3, 3)));  // 8 / 3 = 2 ranks at most
  EXPECT_TRUE(pool.could_ever_fit(pack(2, 3)));
  auto one = pool.acquire(pack(1, 2));
  ASSERT_TRUE(one);
  EXPECT_EQ(pool.used(), 8);
  pool.release(*three);
  EXPECT_EQ(pool.used(), 2);
  EXPECT_TRUE(pool.acquire(pack(3, 2)));
  EXPECT_EQ(pool.used(), 8);
}

TEST(ResourcePool, EachRankGetsItsOwnGpus) {
  ResourcePool pool({host("a", 8, 4)});
  auto first = pool.acquire(pack(2, 1, 1));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->gpus_per_rank, 1);
  ASSERT_EQ(first->hosts.size(), 1u);
  EXPECT_EQ(first->hosts[0].gpus, (std::vector<int>{0, 1}));
  auto second = pool.acquire(pack(2, 1, 1));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->hosts[0].gpus, (std::vector<int>{2, 3}));
  // Slots are left, GPUs are not.
  EXPECT_FALSE(pool.fits(pack(1, 1, 1)));
  EXPECT_FALSE(pool.acquire(pack(1, 1, 1)));
  EXPECT_TRUE(pool.acquire(pack(1)));  // a CPU-only group still fits
  EXPECT_TRUE(pool.could_ever_fit(pack(2, 1, 2)));
  EXPECT_FALSE(pool.could_ever_fit(pack(1, 1, 5)));
  EXPECT_FALSE(pool.could_ever_fit(pack(5, 1, 1)));
  // Released GPUs are handed out again.
  pool.release(*first);
  auto again = pool.acquire(pack(1, 1, 2));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->hosts[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(again->gpus_per_rank, 2);
}

TEST(ResourcePool, GpuIdsAreDistinctPerHostAcrossHosts) {
  // No single host holds 3 ranks x 2 GPUs: a (1 rank) + b (2 ranks).
  ResourcePool pool({host("a", 4, 2), host("b", 4, 4)});
  auto placement = pool.acquire(pack(3, 1, 2));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->ranks(), 3);
  EXPECT_EQ(ranks_by_host(*placement), (std::map<std::string, int>{{"a", 1}, {"b", 2}}));
  for (const auto& share : placement->hosts) {
    SCOPED_TRACE(share.host);
    EXPECT_EQ(share.gpus.size(), static_cast<size_t>(share.ranks * 2));
    EXPECT_EQ(std::set<int>(share.gpus.begin(), share.gpus.end()).size(), share.gpus.size());
  }
  EXPECT_FALSE(pool.acquire(spread(1, 1, 1)));  // every GPU is taken
  pool.release(*placement);
  auto spread_gpus = pool.acquire(spread(2, 1, 1));
  ASSERT_TRUE(spread_gpus);
  EXPECT_EQ(ranks_by_host(*spread_gpus), (std::map<std::string, int>{{"a", 1}, {"b", 1}}));
}

TEST(ResourcePool, HostThatKeepsLosingIsExcluded) {
  ResourcePool pool({host("a", 4), host("b", 2)});
  pool.set_failure_limit(2);
  pool.record_loss("a");
  EXPECT_TRUE(pool.excluded().empty());
  pool.record_success("a");  // clears the count
  pool.record_loss("a");
  EXPECT_TRUE(pool.excluded().empty());
  pool.record_loss("a");
  EXPECT_EQ(pool.excluded(), (std::vector<std::string>{"a"}));
  pool.record_success("a");  // does not bring it back
  EXPECT_EQ(pool.excluded(), (std::vector<std::string>{"a"}));
  pool.record_loss("nobody");  // unknown hosts are ignored
  EXPECT_EQ(pool.excluded().size(), 1u);

  // a takes no placement: only b's 2 slots are left.
  EXPECT_FALSE(pool.fits(pack(3)));
  EXPECT_FALSE(pool.could_ever_fit(pack(3)));
  EXPECT_TRUE(pool.could_ever_fit(pack(2)));
  EXPECT_FALSE(pool.acquire(pack(3)));
  auto placement = pool.acquire(spread(2));
  ASSERT_TRUE(placement);
  EXPECT_EQ(ranks_by_host(*placement), (std::map<std::string, int>{{"b", 2}}));
  EXPECT_FALSE(pool.acquire(pack(1)));
}

TEST(ResourcePool, ExcludingAHostThatHoldsAPlacementThenReleasingIt) {
  ResourcePool pool({host("a", 4), host("b", 4)});
  pool.set_failure_limit(1);
  auto on_a = pool.acquire(pack(4));
  ASSERT_TRUE(on_a);
  const std::string held = on_a->hosts.at(0).host;
  const std::string other = held == "a" ? "b" : "a";
  pool.record_loss(held);
  EXPECT_EQ(pool.excluded(), (std::vector<std::string>{held}));
  pool.release(*on_a);
  EXPECT_EQ(pool.used(), 0);
  // Freed, but still excluded: new groups go to the other host only.
  for (int i = 0; i < 4; ++i) {
    auto one = pool.acquire(pack(1));
    ASSERT_TRUE(one);
    EXPECT_EQ(one->hosts.at(0).host, other);
  }
  EXPECT_FALSE(pool.acquire(pack(1)));
}

TEST(ResourcePool, TheOnlyHostIsNeverExcluded) {
  ResourcePool machine(2);
  machine.set_failure_limit(1);
  for (int i = 0; i < 5; ++i) machine.record_loss("");
  EXPECT_TRUE(machine.excluded().empty());
  EXPECT_TRUE(machine.acquire(pack(2)));

  ResourcePool one({host("remote", 2)});
  one.set_failure_limit(1);
  one.record_loss("remote");
  one.record_loss("remote");
  EXPECT_TRUE(one.excluded().empty());
  EXPECT_TRUE(one.could_ever_fit(pack(2)));
  EXPECT_TRUE(one.acquire(pack(2)));
}

TEST(ResourcePool, SingleHostMeansEveryHostIsThisMachine) {
  EXPECT_TRUE(ResourcePool(8).single_host());
  EXPECT_EQ(ResourcePool(8).total(), 8);
  EXPECT_TRUE(ResourcePool({host("localhost", 2, 0, true)}).single_host());
  EXPECT_FALSE(ResourcePool({host("remote", 2)}).single_host());
  EXPECT_FALSE(ResourcePool({host("localhost", 2, 0, true), host("remote", 2)}).single_host());
  const ResourcePool pool({host("x", 3, 1), host("y", 5)});
  EXPECT_EQ(pool.total(), 8);
  EXPECT_EQ(pool.used(), 0);
  ASSERT_EQ(pool.hosts().size(), 2u);
  EXPECT_EQ(pool.hosts()[1].name, "y");
}

// Random hosts, random acquire/release/loss sequences, checked against a
// model of every host's free slots and GPUs.
TEST(ResourcePool, PropertyNeverOversubscribesAndReleasesEverything) {
  EXPECT_TRUE(rc::check([] {
    const int n = *rc::gen::inRange(1, 6);
    std::vector<Host> hosts;
    for (int i = 0; i < n; ++i)
      hosts.push_back(host("h" + std::to_string(i), *rc::gen::inRange(1, 9), *rc::gen::inRange(0, 5)));
    ResourcePool pool(hosts);
    pool.set_failure_limit(*rc::gen::inRange(1, 4));

    std::map<std::string, size_t> index;
    for (size_t i = 0; i < hosts.size(); ++i) index[hosts[i].name] = i;
    std::vector<int> free_slots;
    std::vector<std::set<int>> free_gpus;
    for (const auto& h : hosts) {
      free_slots.push_back(h.slots);
      std::set<int> ids;
      for (int g = 0; g < h.gpus; ++g) ids.insert(g);
      free_gpus.push_back(ids);
    }
    auto capacity = [&](size_t h, const PlacementRequest& r) {
      int c = free_slots[h] / r.cpus_per_rank;
      if (r.gpus_per_rank > 0) c = std::min(c, static_cast<int>(free_gpus[h].size()) / r.gpus_per_rank);
      return c;
    };

    std::vector<Placement> held;
    const int steps = *rc::gen::inRange(0, 60);
    for (int step = 0; step < steps; ++step) {
      const int op = *rc::gen::inRange(0, 10);
      if (op < 6) {
        PlacementRequest r{*rc::gen::inRange(1, 7), *rc::gen::inRange(1, 4), *rc::gen::inRange(0, 3),
                           *rc::gen::inRange(0, 2) == 0 ? PlacementPolicy::kPack : PlacementPolicy::kSpread};
        const auto excluded = pool.excluded();
        const std::set<std::string> out(excluded.begin(), excluded.end());
        int room = 0, hosts_with_room = 0;
        bool one_host_holds_it = false;
        for (size_t h = 0; h < hosts.size(); ++h) {
          if (out.count(hosts[h].name)) continue;
          room += capacity(h, r);
          hosts_with_room += capacity(h, r) > 0;
          one_host_holds_it = one_host_holds_it || capacity(h, r) >= r.ranks;
        }
        const bool fits = pool.fits(r);
        RC_ASSERT(fits == (room >= r.ranks));
        const auto placement = pool.acquire(r);
        RC_ASSERT(placement.has_value() == fits);
        if (!placement) continue;
        RC_ASSERT(placement->ranks() == r.ranks);
        RC_ASSERT(placement->slots == r.ranks * r.cpus_per_rank);
        RC_ASSERT(placement->gpus_per_rank == r.gpus_per_rank);
        std::set<std::string> used_hosts;
        for (const auto& share : placement->hosts) {
          RC_ASSERT(share.ranks > 0);
          RC_ASSERT(index.count(share.host) == 1u);
          RC_ASSERT(out.count(share.host) == 0u);
          RC_ASSERT(used_hosts.insert(share.host).second);  // one share per host
          const size_t h = index[share.host];
          if (r.policy == PlacementPolicy::kPack && placement->hosts.size() == 1) {
            // Best fit: no host that could hold the group has fewer free slots.
            for (size_t o = 0; o < hosts.size(); ++o)
              if (!out.count(hosts[o].name) && capacity(o, r) >= r.ranks) RC_ASSERT(free_slots[h] <= free_slots[o]);
          }
          free_slots[h] -= share.ranks * r.cpus_per_rank;
          RC_ASSERT(free_slots[h] >= 0);
          RC_ASSERT(share.gpus.size() == static_cast<size_t>(share.ranks * r.gpus_per_rank));
          for (int g : share.gpus) RC_ASSERT(free_gpus[h].erase(g) == 1u);  // free, in range, not twice
        }
        if (r.policy == PlacementPolicy::kPack && one_host_holds_it) RC_ASSERT(placement->hosts.size() == 1u);
        if (r.policy == PlacementPolicy::kSpread)
          RC_ASSERT(static_cast<int>(placement->hosts.size()) == std::min(r.ranks, hosts_with_room));
        held.push_back(*placement);
      } else if (op < 9) {
        if (held.empty()) continue;
        const size_t k = *rc::gen::inRange<size_t>(0, held.size());
        pool.release(held[k]);
        for (const auto& share : held[k].hosts) {
          const size_t h = index[share.host];
          free_slots[h] += held[k].slots / held[k].ranks() * share.ranks;
          for (int g : share.gpus) free_gpus[h].insert(g);
        }
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        pool.record_loss(hosts[*rc::gen::inRange<size_t>(0, hosts.size())].name);
      }
      int used = 0;
      for (size_t h = 0; h < hosts.size(); ++h) used += hosts[h].slots - free_slots[h];
      RC_ASSERT(pool.used() == used);
      RC_ASSERT(pool.used() <= pool.total());
    }
    for (const auto& placement : held) pool.release(placement);
    RC_ASSERT(pool.used() == 0);
    if (hosts.size() == 1) RC_ASSERT(pool.excluded().empty());
    // Everything is free again: what could ever fit fits now.
    for (int ranks = 1; ranks <= 8; ++ranks)
      for (int gpus = 0; gpus <= 1; ++gpus) RC_ASSERT(pool.fits(pack(ranks, 1, gpus)) == pool.could_ever_fit(pack(ranks, 1, gpus)));
  }));
}

TEST(ResourcePoolHosts, ReadmittedHostsTakePlacementsAgainWithACleanCount) {
  ResourcePool pool({Host{"a", 2, 0, false}, Host{"b", 2, 0, false}});
  pool.set_failure_limit(2);
  EXPECT_FALSE(pool.record_loss("a"));
  EXPECT_TRUE(pool.record_loss("a"));  // this one took it out
  EXPECT_FALSE(pool.record_loss("a"));  // already out
  auto only_b = pool.acquire(pack(2));
  ASSERT_TRUE(only_b);
  EXPECT_EQ(only_b->hosts.at(0).host, "b");
  EXPECT_FALSE(pool.fits(pack(1)));
  EXPECT_FALSE(pool.readmit("b"));  // not out
  EXPECT_TRUE(pool.readmit("a"));
  EXPECT_TRUE(pool.excluded().empty());
  auto on_a = pool.acquire(pack(2));
  ASSERT_TRUE(on_a);
  EXPECT_EQ(on_a->hosts.at(0).host, "a");
  EXPECT_FALSE(pool.record_loss("a")) << "its count started again from zero";
  pool.release(*only_b);
  pool.release(*on_a);
  EXPECT_EQ(pool.used(), 0);
}

TEST(ResourcePoolHosts, HostsJoinDrainAndComeBack) {
  ResourcePool pool({Host{"a", 2, 0, false}});
  EXPECT_FALSE(pool.add_host(Host{"a", 4, 0, false})) << "a name already in the pool";
  EXPECT_TRUE(pool.add_host(Host{"b", 4, 0, false}));
  EXPECT_EQ(pool.total(), 6);
  EXPECT_TRUE(pool.could_ever_fit(pack(4)));
  auto held = pool.acquire(pack(2));  // the fullest host that fits: a
  ASSERT_TRUE(held);
  EXPECT_EQ(held->hosts.at(0).host, "a");
  EXPECT_TRUE(pool.drain("a"));
  EXPECT_FALSE(pool.drain("nobody"));
  EXPECT_TRUE(pool.drained("a"));
  auto next = pool.acquire(pack(1));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->hosts.at(0).host, "b") << "a drained host takes no new placement";
  pool.release(*held);  // what ran there finishes and frees its share
  EXPECT_EQ(pool.used(), 1);
  EXPECT_TRUE(pool.add_host(Host{"a", 1, 0, false})) << "a drained host comes back with new counts";
  EXPECT_FALSE(pool.drained("a"));
  EXPECT_EQ(pool.total(), 5);
  pool.release(*next);
  EXPECT_EQ(pool.used(), 0);
  EXPECT_TRUE(pool.fits(pack(4)));
}

TEST(ResourcePoolHosts, ASuspendedHostTakesNothingButStillCountsAsPossible) {
  ResourcePool pool({Host{"a", 2, 0, false}, Host{"b", 2, 0, false}});
  pool.suspend("a", true);
  pool.suspend("b", true);
  EXPECT_FALSE(pool.fits(pack(1)));
  EXPECT_TRUE(pool.could_ever_fit(pack(4))) << "a suspect is being checked: it may come back";
  pool.suspend("a", false);
  auto placement = pool.acquire(pack(2));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->hosts.at(0).host, "a");
  pool.release(*placement);
  pool.suspend("b", false);
  EXPECT_TRUE(pool.fits(pack(4)));
}

}  // namespace
}  // namespace tune::internal
