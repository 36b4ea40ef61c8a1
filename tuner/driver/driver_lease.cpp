// The driver's lease on its experiment: one live driver per experiment,
// taken when it opens, renewed every few seconds, checked inside each write
// transaction, released at the end.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <string>

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
// heartbeat). A holder is gone when its process is dead on this host or its
// heartbeat is older than kLeaseTimeout (another host), or with --force.
void Driver::take_lease() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const double now = clock_.unix_time();
  lease_ = LeaseRecord{host, static_cast<int64_t>(::getpid()), now, now};
  auto holder = store_->take_lease(experiment_.id, *lease_, [&](const LeaseRecord& h) {
    if (run_.force || now - h.heartbeat_at > kLeaseTimeout) return true;
    return h.host == lease_->host && !process_alive(h.pid);
  });
  if (holder) {
    lease_.reset();
    throw ConfigError("experiment '" + sweep_.spec.name + "' is being run by another driver (pid " +
                      std::to_string(holder->pid) + " on " + holder->host + ", started " +
                      format_duration(now - holder->started_at) + " ago, last heartbeat " +
                      format_duration(now - holder->heartbeat_at) + " ago): let it finish or stop it; if it is gone, " +
                      "`tune resume " + sweep_.spec.name + " --force`");
  }
  last_heartbeat_ = now;
}

// Every few seconds. A lease taken over (--force elsewhere) ends this driver
// at once, writing nothing more: its trials belong to the other one now
// (the destructor stops the attempts still running here).
void Driver::renew_lease() {
  const double now = clock_.unix_time();
  if (!lease_ || now - last_heartbeat_ < kHeartbeatInterval) return;
  last_heartbeat_ = now;
  if (!store_->renew_lease(experiment_.id, *lease_, now)) lost_lease();
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
