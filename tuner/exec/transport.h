// Internal: the connection between the driver and each worker group's rank 0.
// One machine: a Unix socket in a fresh private (0700) directory. Several
// hosts: TCP on one address of the driver (the interface the user names, or
// the one that reaches the hosts), never a wildcard. Either way the listener
// has a random token, and a connection counts only once it proves the token
// (challenge-response with HMAC-SHA256 both ways: the token itself never
// crosses the connection).
//
//   auto listener = Listener::tcp("10.77.0.1");
//   // worker side, from the environment mpirun passed on:
//   int fd = connect_driver(listener->endpoint(), listener->token());
//   // driver side:
//   int fd = listener->accept_one(100);   // -1: nothing (or an impostor) within 100 ms
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace tune::internal {

class Listener {
 public:
  static std::unique_ptr<Listener> unix_socket();
  // Binds `address` (an IPv4/IPv6 literal) on a port the kernel picks.
  static std::unique_ptr<Listener> tcp(const std::string& address);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // "unix:/tmp/tune-x/driver.sock" or "tcp:10.77.0.1:41234" ("tcp:[::1]:4123").
  const std::string& endpoint() const { return endpoint_; }
  const std::string& token() const { return token_; }
  // The next authenticated connection within `timeout_ms`, or -1. A peer
  // that fails the handshake (within 5 s) is dropped.
  int accept_one(int timeout_ms);

 private:
  Listener() = default;
  int fd_ = -1;
  std::string endpoint_, token_, dir_;
};

// Connects to a Listener's endpoint and proves the token; checks the
// driver's proof too. Throws tune::Error.
int connect_driver(const std::string& endpoint, const std::string& token);

// Either side of the handshake on a connected socket (tests).
bool prove_as_driver(int fd, const std::string& token);
bool prove_as_worker(int fd, const std::string& token);

// 32 random bytes, hex.
std::string random_token();

// The address of this machine's interface `name` ("eth0"), or `name` itself
// when it is an address; "" if there is none.
std::string interface_address(const std::string& name);
// The local address this machine uses to reach `host` (a name or address):
// the source address of a route to it. "" when unreachable.
std::string address_toward(const std::string& host);
// "10.77.0.0/24": the network of a local address (for OpenMPI's if_include).
std::string network_of(const std::string& address);

}  // namespace tune::internal
