// The connection loop's turn: accepting within the limits, deadlines and
// stopping (serve_loop.h). One connection's requests and answers are in
// serve_exchange.cpp.
#include "tuner/serve/serve_loop.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "base/error.h"
#include "tuner/serve/serve_connection.h"
#include "tuner/serve/serve_routes.h"

namespace tune::serve_detail {

using namespace loop;

namespace {

int phase_rank(Phase phase) {  // which connection is replaced first at a limit; -1: never
  switch (phase) {
    case Phase::kLingering: return 0;
    case Phase::kIdle: return 1;
    case Phase::kReading: return 2;
    default: return -1;
  }
}

size_t descriptor_room() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  return limit.rlim_cur > kDescriptorsKept * 2 ? static_cast<size_t>(limit.rlim_cur) - kDescriptorsKept : 1;
}

}  // namespace

ConnectionLoop::Impl::Impl(int listener_fd, const Routes& routes_, Metrics& metrics_, LoopOptions options_)
    : listener(listener_fd), routes(routes_), metrics(metrics_), options(std::move(options_)) {
  epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  int error = errno;
  wake_fd = epoll_fd < 0 ? -1 : ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd < 0 || wake_fd < 0) {
    if (wake_fd < 0) error = errno;
    for (int fd : {listener, epoll_fd}) {
      if (fd >= 0) ::close(fd);
    }
    throw Error(std::string("tune serve: cannot create an epoll or eventfd (") + std::strerror(error) + ")");
  }
}

ConnectionLoop::Impl::~Impl() {
  if (workers) workers->shutdown();  // their jobs use the members below
  for (auto& [id, connection] : connections) {
    if (connection->phase != Phase::kClosed) ::close(connection->fd);
  }
  connections.clear();
  for (int* fd : {&listener, &epoll_fd, &wake_fd}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

Connection* ConnectionLoop::Impl::find(uint64_t id) {
  auto found = connections.find(id);
  return found == connections.end() || found->second->phase == Phase::kClosed ? nullptr : found->second.get();
}

void ConnectionLoop::Impl::reap() {
  for (uint64_t id : closed) connections.erase(id);
  closed.clear();
}

void ConnectionLoop::Impl::run() {
  if (stopping.load()) return begin_stop();
  max_total = std::max<size_t>(1, std::min(options.max_connections, descriptor_room()));
  max_per_client = std::max<size_t>(1, std::min(options.max_connections_per_client, max_total));
  workers = std::make_unique<WorkerPool>(options.threads);
  epoll_event listen_event = interest(EPOLLIN, kListenerId);
  epoll_event wake_event = interest(EPOLLIN, kWakeId);
  ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &listen_event);
  ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &wake_event);
  std::array<epoll_event, 256> events;
  Clock::time_point next_tick = Clock::now() + kTick;
  while (!(stop_begun && open == 0)) {
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - Clock::now()).count();
    int count = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()),
                             ready.empty() ? static_cast<int>(std::clamp<long>(wait, 0, 100)) : 0);
    if (count < 0 && errno != EINTR) {
      throw Error(std::string("tune serve: waiting for connections failed (") + std::strerror(errno) + ")");
    }
    now = Clock::now();
    for (int i = 0; i < count; ++i) handle(events[static_cast<size_t>(i)]);
    take_completions();
    std::vector<uint64_t> pipelined;
    pipelined.swap(ready);
    for (uint64_t id : pipelined) {
      if (Connection* c = find(id); c != nullptr && c->phase == Phase::kIdle && !c->pending.empty()) {
        std::string bytes = std::move(c->pending);
        c->pending.clear();
        read_request_bytes(*c, bytes.data(), bytes.size());
      }
    }
    if (stopping.load() && !stop_begun) begin_stop();
    if (now >= next_tick) {
      expire();
      next_tick = now + kTick;
    }
    reap();
  }
  workers->shutdown();
}

void ConnectionLoop::Impl::handle(const epoll_event& event) {
  if (event.data.u64 == kListenerId) return accept_connections();
  if (event.data.u64 == kWakeId) {
    uint64_t count = 0;
    [[maybe_unused]] ssize_t n = ::read(wake_fd, &count, sizeof count);
    return;
  }
  Connection* c = find(event.data.u64);
  if (c == nullptr || c->phase == Phase::kAnswering) return;  // a worker has it (serve_exchange.cpp)
  if (c->phase == Phase::kWriting) {
    if (event.events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) flush(*c);
    return;
  }
  if (event.events & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(*c);
}

void ConnectionLoop::Impl::accept_connections() {
  for (int i = 0; i < 64 && !stop_begun; ++i) {
    sockaddr_storage address{};
    socklen_t size = sizeof address;
    int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&address), &size, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        if (!evict_one(nullptr)) {  // nothing to replace: stop listening a moment
          ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listener, nullptr);
          accepting_again = now + kAcceptPause;
        }
      } else if (errno == EBADF || errno == EINVAL || errno == ENOTSOCK || errno == EOPNOTSUPP) {
        throw Error(std::string("tune serve: accepting connections failed (") + std::strerror(errno) + ")");
      }
      return;  // EAGAIN, or a connection that failed before it was accepted
    }
    std::string client = client_key(address);
    if (!make_room(client)) {
      metrics.add_dropped(Drop::kRefused);
      ::close(fd);
      continue;
    }
    int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    uint64_t id = next_id++;
    auto connection = std::make_unique<Connection>(id, fd, client, options.limits);
    connection->since = now;
    connection->deadline = now + options.idle_timeout;
    epoll_event event = interest(EPOLLIN, id);
    if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) {
      ::close(fd);
      continue;
    }
    by_client[client].push_back(id);
    connections.emplace(id, std::move(connection));
    ++open;
    metrics.connections().fetch_add(1, std::memory_order_relaxed);
  }
}

// Room for one more connection from `client`: false when there is none.
bool ConnectionLoop::Impl::make_room(const std::string& client) {
  auto mine = by_client.find(client);
  if (mine != by_client.end() && mine->second.size() >= max_per_client && !evict_one(&mine->second)) return false;
  if (open < max_total) return true;
  const std::vector<uint64_t>* largest = nullptr;
  for (const auto& [key, ids] : by_client) {
    if (largest == nullptr || ids.size() > largest->size()) largest = &ids;
  }
  return evict_one(largest) || evict_one(nullptr);
}

// Closes the connection that is replaced first among `among` (all if null);
// false if none may be.
bool ConnectionLoop::Impl::evict_one(const std::vector<uint64_t>* among) {
  Connection* victim = nullptr;
  auto consider = [&](Connection* c) {
    int rank = c == nullptr ? -1 : phase_rank(c->phase);
    if (rank < 0) return;
    if (victim == nullptr || rank < phase_rank(victim->phase) ||
        (rank == phase_rank(victim->phase) && c->since < victim->since)) {
      victim = c;
    }
  };
  if (among != nullptr) {
    for (uint64_t id : *among) consider(find(id));
  } else {
    for (auto& [id, c] : connections) consider(c.get());
  }
  if (victim == nullptr) return false;
  if (victim->phase != Phase::kLingering) metrics.add_dropped(Drop::kEvicted);
  close_connection(*victim);
  return true;
}










void ConnectionLoop::Impl::close_connection(Connection& c) {
  release_body(c);
  ::close(c.fd);  // also leaves the epoll set
  c.phase = Phase::kClosed;
  closed.push_back(c.id);
  --open;
  auto mine = by_client.find(c.client);
  if (mine != by_client.end()) {
    auto& ids = mine->second;
    ids.erase(std::remove(ids.begin(), ids.end(), c.id), ids.end());
    if (ids.empty()) by_client.erase(mine);
  }
  metrics.connections().fetch_sub(1, std::memory_order_relaxed);
}


void ConnectionLoop::Impl::set_events(Connection& c, uint32_t events) {
  if (c.events == events) return;
  epoll_event event = interest(events, c.id);
  if (events == 0) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
  } else {
    ::epoll_ctl(epoll_fd, c.events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c.fd, &event);
  }
  c.events = events;
}

void ConnectionLoop::Impl::expire() {
  if (accepting_again && now >= *accepting_again && !stop_begun) {
    epoll_event event = interest(EPOLLIN, kListenerId);
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &event);
    accepting_again.reset();
  }
  std::vector<uint64_t> late;
  for (auto& [id, c] : connections) {
    if (phase_rank(c->phase) >= 0 || c->phase == Phase::kWriting) {
      if (now >= c->deadline) late.push_back(id);
    }
  }
  for (uint64_t id : late) {
    Connection* c = find(id);
    if (c == nullptr) continue;
    if (c->phase == Phase::kReading) {
      metrics.add_dropped(Drop::kTimeout);
      auto seconds = std::chrono::duration_cast<std::chrono::duration<double>>(options.request_timeout).count();
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", seconds);
      respond(*c, error_response(408, std::string("the request did not arrive whole within ") + limit + " s"), true);
    } else {
      if (c->phase == Phase::kWriting) metrics.add_dropped(Drop::kTimeout);
      close_connection(*c);
    }
  }
}

void ConnectionLoop::Impl::begin_stop() {
  stop_begun = true;
  if (listener >= 0) {
    ::close(listener);  // a late client is refused at once
    listener = -1;
  }
  std::vector<uint64_t> unanswered;
  for (auto& [id, c] : connections) {
    if (c->phase == Phase::kIdle || c->phase == Phase::kReading) unanswered.push_back(id);
    if (c->phase == Phase::kWriting) c->close_after_output = true;
  }
  for (uint64_t id : unanswered) {
    if (Connection* c = find(id)) close_connection(*c);
  }
}

ConnectionLoop::ConnectionLoop(int listener, const Routes& routes, Metrics& metrics, LoopOptions options)
    : impl_(std::make_unique<Impl>(listener, routes, metrics, std::move(options))) {}

ConnectionLoop::~ConnectionLoop() = default;

void ConnectionLoop::run() { impl_->run(); }

void ConnectionLoop::stop() {
  impl_->stopping.store(true);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(impl_->wake_fd, &one, sizeof one);
}

bool ConnectionLoop::stopping() const { return impl_->stopping.load(); }

}  // namespace tune::serve_detail
