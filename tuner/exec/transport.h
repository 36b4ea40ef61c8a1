// Internal: the connections between the driver and its worker groups. One
// machine: a Unix socket in a fresh private (0700) directory. Several hosts:
// TCP on one address of the driver (the interface the user names, or the one
// that reaches the hosts), never a wildcard. Either way a connection counts
// only once it proves the secret (challenge-response with HMAC-SHA256 both
// ways), and the secret itself never crosses a network:
//
// - one machine: a random 256-bit key, handed to the group in its
//   environment (mpirun starts local ranks itself: nothing leaves the host);
// - several hosts: a key derived from the cluster key file every host holds
//   (`--secret-file`, docs/CLUSTER.md) and a random per-run nonce; only the
//   nonce and the key's fingerprint travel (in mpirun's launch message).
//
//   Secret secret = Secret::random();
//   auto listener = Listener::tcp("10.77.0.1", secret);
//   // worker side, from the environment mpirun passed on:
//   int fd = connect_driver(listener->endpoint(), secret);
//   // driver side (one thread):
//   if (auto peer = listener->accept_one(100)) use(peer->fd, peer->first);
//
// The listener authenticates any number of connections at once, without
// threads: each has a deadline for its whole handshake (secret and first
// frame), handshake frames are at most 4 KiB, and pending connections are
// capped per peer address and in total (the oldest is dropped), so silent,
// trickling or flooding peers never delay a worker that holds the secret.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/json.h"

namespace tune::internal {

// The key both sides prove they hold.
struct Secret {
  std::string key;         // raw bytes; never sent
  std::string nonce;       // several hosts: the public per-run nonce the key was derived with ("" else)
  std::string key_file;    // several hosts: where every host keeps the cluster key
  std::string fingerprint; // several hosts: 16 hex digits of SHA-256(cluster key), to tell keys apart

  // One machine: 32 random bytes.
  static Secret random();
  // Several hosts: HMAC-SHA256(cluster key, "tune session " + nonce), the
  // cluster key read from `key_file` (read_cluster_key). A new random nonce
  // when `nonce` is "".
  static Secret from_key_file(const std::string& key_file, std::string nonce = "");
};

// What a re-executed program needs in its environment to prove `secret`
// (protocol.h's names): one machine, the key; several hosts, the key file's
// path, the nonce and the key's fingerprint, never the key.
std::vector<std::pair<std::string, std::string>> secret_environment(const Secret& secret);
// The secret of secret_environment(), in this process's environment.
// Throws tune::Error (e.g. this host has no cluster key).
Secret secret_from_environment();

// The cluster key in `path`: 32 to 4096 bytes (trailing whitespace ignored),
// a regular file that only its owner may read. Throws tune::Error saying
// which rule it breaks.
std::string read_cluster_key(const std::string& path);
// Writes a new random key (64 hex digits) to `path` with mode 0600, creating
// its folder (0700). Throws tune::Error if `path` exists.
void write_cluster_key(const std::string& path);
// $TUNE_SECRET_FILE, else ~/.config/tune/cluster.key.
std::string default_cluster_key_path();
// 16 hex digits of SHA-256(key).
std::string key_fingerprint(const std::string& key);

// A connection that proved the secret, and the first frame it sent (a JSON
// object, parsed with bounded nesting).
struct Accepted {
  int fd = -1;  // blocking, close-on-exec; the caller owns it
  Json first;
  std::string peer;  // its address ("10.77.0.12"; "local" for a Unix socket)
};

struct ListenerLimits {
  double handshake_s = 5;        // for the whole handshake, first frame included
  size_t max_pending = 128;      // connections mid-handshake, in total
  size_t max_pending_per_peer = 16;
  size_t max_frame = 4096;       // bytes of a handshake frame
  size_t max_first_frame = 1u << 16;
};

class Listener {
 public:
  static std::unique_ptr<Listener> unix_socket(Secret secret, ListenerLimits limits = {});
  // Binds `address` (an IPv4/IPv6 literal) on a port the kernel picks.
  static std::unique_ptr<Listener> tcp(const std::string& address, Secret secret, ListenerLimits limits = {});
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // "unix:/tmp/tune-driver-x1Y2z3/driver.sock" or "tcp:10.77.0.1:41234" ("tcp:[::1]:4123").
  const std::string& endpoint() const { return endpoint_; }
  const Secret& secret() const { return secret_; }
  // The next connection that proved the secret and sent its first frame
  // within `timeout_ms`, or nullopt. Meanwhile it accepts new connections and
  // moves every pending handshake on; one that fails, breaks a limit or runs
  // past its deadline is dropped. Call from one thread.
  std::optional<Accepted> accept_one(int timeout_ms);

  // Handshakes dropped so far (failed, too slow, evicted): tests, benches.
  size_t dropped() const { return dropped_; }
  size_t pending() const { return pending_.size(); }

 private:
  struct Pending;
  Listener() = default;
  void accept_new(double now);
  void evict_over_limits();
  // Moves one handshake on; true when it is done (ready or dropped).
  bool advance(Pending& p, double now, std::optional<Accepted>& ready);
  void drop(Pending& p);

  int fd_ = -1;
  bool tcp_ = false;
  std::string endpoint_, dir_;
  Secret secret_;
  ListenerLimits limits_;
  std::deque<std::unique_ptr<Pending>> pending_;  // oldest first
  std::atomic<size_t> dropped_{0};
};

// Connects to a Listener's endpoint and proves the secret; checks the
// driver's proof too. Throws tune::Error.
int connect_driver(const std::string& endpoint, const Secret& secret);

// Either side of the handshake on a connected blocking socket (the worker
// side of connect_driver; tests).
bool prove_as_driver(int fd, const std::string& key);
bool prove_as_worker(int fd, const std::string& key);

// 32 random bytes, hex.
std::string random_token();

// Makes a dead peer visible within about `timeout_s` on a TCP socket: TCP
// keepalive probes while the connection is idle, and TCP_USER_TIMEOUT for
// data left unacknowledged (a host whose link went down). A read or poll then
// fails with ETIMEDOUT. No-op on other sockets.
void set_liveness(int fd, double timeout_s);

// The address of this machine's interface `name` ("eth0"), or `name` itself
// when it is an address; "" if there is none.
std::string interface_address(const std::string& name);
// The local address this machine uses to reach `host` (a name or address):
// the source address of a route to it. "" when unreachable.
std::string address_toward(const std::string& host);
// "10.77.0.0/24": the network of a local address (for OpenMPI's if_include).
std::string network_of(const std::string& address);

}  // namespace tune::internal
