// The driver's lease on its experiment: one live driver per experiment,
// taken when it opens, renewed every few seconds, checked inside each write
// transaction, released at the end.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <thread>

#include "base/error.h"
#include "tuner/driver/driver_impl.h"
#include "tuner/driver/progress.h"

namespace tune::internal {

namespace {

// A zombie (killed, not yet reaped: containers whose init does not reap)
// counts as dead.
bool process_alive(int64_t pid) {
  if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

}  // namespace

// One live driver per experiment: a lease in the store (host, pid, start,
// heartbeat). A holder is gone when its process is dead on this host, or
// (another host) when its heartbeat reads kLeaseTimeout old here and stood
// still for kFrozenS of this machine's own clock: the heartbeat is the other
// machine's time, and a clock that differs by minutes must not make a live
// driver look dead. --force takes it in any case.
void Driver::take_lease() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const double now = clock_.unix_time();
  lease_ = LeaseRecord{host, static_cast<int64_t>(::getpid()), now, now};
  std::optional<double> frozen;  // another host's heartbeat seen standing still for kFrozenS
  auto take = [&] {
    const double at = clock_.unix_time();
    lease_->heartbeat_at = at;
    return store_->take_lease(experiment_.id, *lease_, [&](const LeaseRecord& h) {
      if (run_.force) return true;
      if (h.host == lease_->host) return at - h.heartbeat_at > kLeaseTimeout || !process_alive(h.pid);
      return at - h.heartbeat_at > kLeaseTimeout && frozen == h.heartbeat_at;
    });
  };
  auto holder = take();
  // A driver on another machine whose heartbeat stands still (its machine
  // died, or lost the store: a batch job requeued onto another node) is
  // watched until it counts as gone; one whose heartbeat moves on runs, and
  // is refused below. Without --resume-if-exists only a heartbeat that
  // already reads old is watched (for kFrozenS).
  bool moved_though_old = false;
  if (holder && holder->host != lease_->host) {
    const double beat = holder->heartbeat_at;
    const bool old_here = clock_.unix_time() - beat > kLeaseTimeout;
    if (old_here || run_.wait_for_stale_lease) {
      std::cerr << "tune: experiment '" << sweep_.spec.name << "' is leased to pid " << holder->pid << " on "
                << holder->host;
      const std::string age = format_duration(clock_.unix_time() - beat);
      if (!old_here) {
        std::cerr << ", last heartbeat " << age << " ago: waiting until it is " << static_cast<int>(kLeaseTimeout)
                  << " s old (a driver on a machine that is gone) or moves on (one that runs)\n";
      } else {
        std::cerr << ", whose last heartbeat reads " << age << " old here: taking it over if it stands still for "
                  << static_cast<int>(kFrozenS) << " s\n";
      }
      const double since = clock_.now();
      while (holder && holder->heartbeat_at == beat && !interrupt_requested()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        if (clock_.now() - since >= kFrozenS) frozen = beat;
        holder = take();
      }
      if (holder && holder->heartbeat_at == beat) {
        lease_.reset();
        throw Error("interrupted while waiting for the lease of experiment '" + sweep_.spec.name + "'; nothing changed");
      }
      moved_though_old = holder && old_here;
    }
  }
  if (holder) {
    lease_.reset();
    const double at = clock_.unix_time();
    throw ConfigError("experiment '" + sweep_.spec.name + "' is being run by another driver (pid " +
                      std::to_string(holder->pid) + " on " + holder->host + ", started " +
                      format_duration(at - holder->started_at) + " ago, last heartbeat " +
                      format_duration(at - holder->heartbeat_at) + " ago" +
                      (moved_though_old ? " by this machine's clock, but it moves on: the two clocks differ" : "") +
                      "): let it finish or stop it; if it is gone, `tune resume " + sweep_.spec.name + " --force`");
  }
  last_heartbeat_ = clock_.now();
}

// Every few seconds. A lease taken over (--force elsewhere) ends this driver
// at once, writing nothing more: its trials belong to the other one now
// (the destructor stops the attempts still running here).
// The interval is this machine's steady clock: a wall clock set back
// (NTP, a VM restored) must not stop the heartbeats.
void Driver::renew_lease() {
  const double now = clock_.now();
  if (!lease_ || now - last_heartbeat_ < kHeartbeatInterval) return;
  last_heartbeat_ = now;
  bool held = true;
  try {
    held = store_->renew_lease(experiment_.id, *lease_, clock_.unix_time());
  } catch (const StoreBusyError&) {
    return;  // a reader holds the store (Driver::commit): the next heartbeat tries again
  }
  if (!held) lost_lease();
}

// Inside each write transaction: a driver that lost its lease writes nothing.
void Driver::hold_lease() {
  if (lease_ && !store_->holds_lease(experiment_.id, *lease_)) lost_lease();
}

void Driver::lost_lease() {
  lease_lost_ = true;
  throw Error("another driver took experiment '" + sweep_.spec.name + "' over (tune resume --force); this one stopped");
}

void Driver::release_lease() {
  if (!lease_ || !store_) return;
  try {
    if (!lease_lost_) store_->release_lease(experiment_.id, *lease_);
  } catch (const std::exception&) {
    // the store is gone: the lease expires
  }
  lease_.reset();
}

}  // namespace tune::internal
