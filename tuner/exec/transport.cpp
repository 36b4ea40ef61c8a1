#include "tuner/exec/transport.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "tuner/exec/protocol.h"

namespace tune::internal {
namespace {

std::string hex(const unsigned char* data, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[data[i] >> 4];
    out[2 * i + 1] = digits[data[i] & 15];
  }
  return out;
}

std::string hmac(const std::string& key, const std::string& message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), out, &n);
  return hex(out, n);
}

bool same(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string field(const std::optional<Json>& frame, const char* type, const char* key) {
  if (!frame || frame->value("type", "") != type) return "";
  auto it = frame->find(key);
  return it != frame->end() && it->is_string() ? it->get<std::string>() : "";
}

void set_timeout(int fd, int seconds) {
  timeval t{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
}

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) throw Error("socket path too long: " + path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

// host and port of "tcp:HOST:PORT" / "tcp:[V6]:PORT".
std::pair<std::string, std::string> split_tcp(const std::string& endpoint) {
  std::string rest = endpoint.substr(4);
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos) throw Error("bad driver endpoint '" + endpoint + "'");
  std::string host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return {host, rest.substr(colon + 1)};
}

}  // namespace

std::string random_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw Error("cannot draw a random token");
  return hex(bytes, sizeof bytes);
}

bool prove_as_driver(int fd, const std::string& token) {
  const std::string mine = random_token();
  if (!send_message(fd, {{"type", "challenge"}, {"nonce", mine}})) return false;
  const auto answer = receive_message(fd);
  const std::string theirs = field(answer, "answer", "nonce");
  if (theirs.size() != 64 || !same(field(answer, "answer", "proof"), hmac(token, "worker:" + mine + ":" + theirs)))
    return false;
  return send_message(fd, {{"type", "accepted"}, {"proof", hmac(token, "driver:" + theirs + ":" + mine)}});
}

bool prove_as_worker(int fd, const std::string& token) {
  const std::string challenge = field(receive_message(fd), "challenge", "nonce");
  if (challenge.size() != 64) return false;
  const std::string mine = random_token();
  if (!send_message(fd, {{"type", "answer"}, {"nonce", mine}, {"proof", hmac(token, "worker:" + challenge + ":" + mine)}}))
    return false;
  return same(field(receive_message(fd), "accepted", "proof"), hmac(token, "driver:" + mine + ":" + challenge));
}

std::unique_ptr<Listener> Listener::unix_socket() {
  std::unique_ptr<Listener> l(new Listener());
  std::string pattern = (std::filesystem::temp_directory_path() / "tune-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw Error(std::string("cannot create socket dir: ") + std::strerror(errno));
  l->dir_ = pattern;
  ::chmod(l->dir_.c_str(), 0700);
  const std::string path = l->dir_ + "/driver.sock";
  l->fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l->fd_ < 0) throw Error(std::string("socket: ") + std::strerror(errno));
  sockaddr_un address = unix_address(path);
  if (::bind(l->fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || ::listen(l->fd_, 64) != 0)
    throw Error("cannot listen on " + path + ": " + std::strerror(errno));
  l->endpoint_ = "unix:" + path;
  l->token_ = random_token();
  return l;
}

std::unique_ptr<Listener> Listener::tcp(const std::string& address) {
  std::unique_ptr<Listener> l(new Listener());
  addrinfo hints{}, *found = nullptr;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  if (address.empty() || ::getaddrinfo(address.c_str(), "0", &hints, &found) != 0)
    throw Error("the driver's listening address '" + address + "' is not an IP address");
  l->fd_ = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  ::setsockopt(l->fd_, IPPROTO_TCP, 1 /* TCP_NODELAY */, &on, sizeof on);
  const bool ok = l->fd_ >= 0 && ::bind(l->fd_, found->ai_addr, found->ai_addrlen) == 0 && ::listen(l->fd_, 64) == 0;
  ::freeaddrinfo(found);
  if (!ok) throw Error("cannot listen on " + address + ": " + std::strerror(errno));
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  ::getsockname(l->fd_, reinterpret_cast<sockaddr*>(&bound), &size);
  const int port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  const std::string host = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  l->endpoint_ = "tcp:" + host + ":" + std::to_string(port);
  l->token_ = random_token();
  return l;
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

int Listener::accept_one(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return -1;
  const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return -1;
  if (endpoint_.rfind("tcp:", 0) == 0) {
    const int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, 1 /* TCP_NODELAY */, &on, sizeof on);
  }
  set_timeout(fd, 5);  // a stray peer cannot hold the acceptor
  if (!prove_as_driver(fd, token_)) {
    ::close(fd);
    return -1;
  }
  set_timeout(fd, 0);
  return fd;
}

int connect_driver(const std::string& endpoint, const std::string& token) {
  int fd = -1;
  if (endpoint.rfind("unix:", 0) == 0) {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address = unix_address(endpoint.substr(5));
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      if (fd >= 0) ::close(fd);
      throw Error("cannot connect to the driver at " + endpoint + ": " + std::strerror(errno));
    }
  } else if (endpoint.rfind("tcp:", 0) == 0) {
    const auto [host, port] = split_tcp(endpoint);
    addrinfo hints{}, *found = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) throw Error("cannot resolve " + endpoint);
    fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool ok = fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0;
    ::freeaddrinfo(found);
    if (!ok) {
      if (fd >= 0) ::close(fd);
      throw Error("cannot connect to the driver at " + endpoint + ": " + std::strerror(errno));
    }
    const int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, 1 /* TCP_NODELAY */, &on, sizeof on);
  } else {
    throw Error("bad driver endpoint '" + endpoint + "'");
  }
  set_timeout(fd, 30);
  if (!prove_as_worker(fd, token)) {
    ::close(fd);
    throw Error("the driver at " + endpoint + " did not accept this worker's token (or is not tune)");
  }
  set_timeout(fd, 0);
  return fd;
}

std::string interface_address(const std::string& name) {
  in6_addr probe6;
  in_addr probe4;
  if (::inet_pton(AF_INET, name.c_str(), &probe4) == 1 || ::inet_pton(AF_INET6, name.c_str(), &probe6) == 1) return name;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i && found.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || name != i->ifa_name || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
    found = text;
  }
  ::freeifaddrs(list);
  return found;
}

std::string address_toward(const std::string& host) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0) return "";
  // A UDP "connect" sends nothing: the kernel only picks the route.
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  std::string address;
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t size = sizeof local;
    char text[INET_ADDRSTRLEN];
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text))
      address = text;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  return address;
}

std::string network_of(const std::string& address) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string network;
  for (ifaddrs* i = list; i && network.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    const in_addr a = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr;
    ::inet_ntop(AF_INET, &a, text, sizeof text);
    if (address != text) continue;
    const uint32_t mask = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr);
    in_addr net{htonl(ntohl(a.s_addr) & mask)};
    ::inet_ntop(AF_INET, &net, text, sizeof text);
    network = std::string(text) + "/" + std::to_string(__builtin_popcount(mask));
  }
  ::freeifaddrs(list);
  return network;
}

}  // namespace tune::internal
