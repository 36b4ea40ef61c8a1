#include "tuner/exec/transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "tuner/exec/clock.h"
#include "tuner/exec/owned_folders.h"
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

// `key` of a frame whose "type" is `type`, if it is a string; "" otherwise.
std::string field(const std::optional<Json>& frame, const char* type, const char* key) {
  if (!frame || !frame->is_object()) return "";
  auto kind = frame->find("type");
  if (kind == frame->end() || !kind->is_string() || kind->get<std::string>() != type) return "";
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



void set_blocking(int fd, bool blocking) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK);
}

std::string frame_of(const Json& message) {
  const std::string body = message.dump();
  const auto n = static_cast<uint32_t>(body.size());
  std::string frame = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                       static_cast<char>((n >> 16) & 0xff), static_cast<char>(n >> 24)};
  return frame + body;
}

std::string peer_address(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return "?";
  char text[INET6_ADDRSTRLEN] = "local";
  if (address.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&address)->sin_addr, text, sizeof text);
  else if (address.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr, text, sizeof text);
  return text;
}

}  // namespace

std::string random_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw Error("cannot draw a random token");
  return hex(bytes, sizeof bytes);
}

std::string key_fingerprint(const std::string& key) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest);
  return hex(digest, 8);
}

Secret Secret::random() {
  Secret s;
  s.key = random_token();
  return s;
}

Secret Secret::from_key_file(const std::string& key_file, std::string nonce) {
  Secret s;
  const std::string cluster_key = read_cluster_key(key_file);
  s.nonce = nonce.empty() ? random_token() : std::move(nonce);
  s.key = hmac(cluster_key, "tune session " + s.nonce);
  s.key_file = key_file;
  s.fingerprint = key_fingerprint(cluster_key);
  return s;
}

std::vector<std::pair<std::string, std::string>> secret_environment(const Secret& secret) {
  if (secret.nonce.empty()) return {{kTokenEnv, secret.key}};
  return {{kSecretFileEnv, secret.key_file}, {kSessionNonceEnv, secret.nonce}, {kKeyFingerprintEnv, secret.fingerprint}};
}

Secret secret_from_environment() {
  const char* nonce = std::getenv(kSessionNonceEnv);
  if (nonce && *nonce) {
    const char* file = std::getenv(kSecretFileEnv);
    Secret secret = Secret::from_key_file(file ? file : "", nonce);
    const char* expected = std::getenv(kKeyFingerprintEnv);
    if (expected && *expected && secret.fingerprint != expected) {
      throw Error("this host's cluster key " + secret.key_file + " (" + secret.fingerprint + ") is not the driver's (" +
                  expected + "): copy the driver's key here");
    }
    return secret;
  }
  const char* token = std::getenv(kTokenEnv);
  Secret secret;
  secret.key = token ? token : "";
  return secret;
}

std::string read_cluster_key(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0)
    throw Error("no cluster key at " + path + " (" + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode)) throw Error("the cluster key " + path + " is not a regular file");
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw Error("the cluster key " + path + " may be read by others (mode " + mode + "): chmod 600 " + path);
  }
  if (st.st_size > 4096) throw Error("the cluster key " + path + " is larger than 4096 bytes");
  std::ifstream in(path, std::ios::binary);
  std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) throw Error("cannot read the cluster key " + path);
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
  if (key.size() < 32) throw Error("the cluster key " + path + " is shorter than 32 bytes");
  return key;
}

void write_cluster_key(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path file(path);
  if (file.has_parent_path()) {
    fs::create_directories(file.parent_path());
    ::chmod(file.parent_path().c_str(), 0700);
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw Error("cannot create the cluster key " + path + ": " + std::strerror(errno));
  const std::string text = random_token() + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) throw Error("cannot write the cluster key " + path);
}

std::string default_cluster_key_path() {
  if (const char* path = std::getenv("TUNE_SECRET_FILE"); path && *path) return path;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.config/tune/cluster.key";
}

bool prove_as_driver(int fd, const std::string& key) {
  const std::string mine = random_token();
  if (!send_message(fd, {{"type", "challenge"}, {"nonce", mine}})) return false;
  const auto answer = receive_message(fd);
  const std::string theirs = field(answer, "answer", "nonce");
  if (theirs.size() != 64 || !same(field(answer, "answer", "proof"), hmac(key, "worker:" + mine + ":" + theirs)))
    return false;
  return send_message(fd, {{"type", "accepted"}, {"proof", hmac(key, "driver:" + theirs + ":" + mine)}});
}

bool prove_as_worker(int fd, const std::string& key) {
  const std::string challenge = field(receive_message(fd), "challenge", "nonce");
  if (challenge.size() != 64) return false;
  const std::string mine = random_token();
  if (!send_message(fd, {{"type", "answer"}, {"nonce", mine}, {"proof", hmac(key, "worker:" + challenge + ":" + mine)}}))
    return false;
  return same(field(receive_message(fd), "accepted", "proof"), hmac(key, "driver:" + mine + ":" + challenge));
}

// One connection mid-handshake: challenge out, answer in, proof out, first
// frame in; all non-blocking, all before `deadline`.
struct Listener::Pending {
  enum class Step { kChallenge, kAnswer, kAccepted, kFirst };
  int fd = -1;
  std::string peer;
  double deadline = 0;
  Step step = Step::kChallenge;
  std::string nonce;  // the challenge
  std::string out;    // bytes still to write
  std::string in;     // bytes of the frame being read
};

std::unique_ptr<Listener> Listener::unix_socket(Secret secret, ListenerLimits limits) {
  std::unique_ptr<Listener> l(new Listener());
  // TEMP/tune-driver-XXXXXX/driver.sock: removed with the listener, or by a
  // later driver if this one is killed first.
  l->dir_ = make_owned_folder("tune-driver-", [](const std::filesystem::directory_entry& entry) {
    std::error_code ec;
    return entry.path().filename() == "driver.sock" && entry.is_socket(ec);
  });
  const std::string path = l->dir_ + "/driver.sock";
  l->fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (l->fd_ < 0) throw Error(std::string("socket: ") + std::strerror(errno));
  sockaddr_un address = unix_address(path);
  if (::bind(l->fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || ::listen(l->fd_, 128) != 0)
    throw Error("cannot listen on " + path + ": " + std::strerror(errno));
  l->endpoint_ = "unix:" + path;
  l->secret_ = std::move(secret);
  l->limits_ = limits;
  return l;
}

std::unique_ptr<Listener> Listener::tcp(const std::string& address, Secret secret, ListenerLimits limits) {
  std::unique_ptr<Listener> l(new Listener());
  addrinfo hints{}, *found = nullptr;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  if (address.empty() || ::getaddrinfo(address.c_str(), "0", &hints, &found) != 0)
    throw Error("the driver's listening address '" + address + "' is not an IP address");
  l->fd_ = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const bool ok = l->fd_ >= 0 && ::bind(l->fd_, found->ai_addr, found->ai_addrlen) == 0 && ::listen(l->fd_, 128) == 0;
  ::freeaddrinfo(found);
  if (!ok) throw Error("cannot listen on " + address + ": " + std::strerror(errno));
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  ::getsockname(l->fd_, reinterpret_cast<sockaddr*>(&bound), &size);
  const int port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  const std::string host = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  l->endpoint_ = "tcp:" + host + ":" + std::to_string(port);
  l->tcp_ = true;
  l->secret_ = std::move(secret);
  l->limits_ = limits;
  return l;
}

Listener::~Listener() {
  for (auto& p : pending_) ::close(p->fd);
  if (fd_ >= 0) ::close(fd_);
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

void Listener::drop(Pending& p) {
  ::close(p.fd);
  p.fd = -1;
  dropped_ += 1;
}

void Listener::accept_new(double now) {
  while (true) {
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;  // EAGAIN: no more for now
    auto p = std::make_unique<Pending>();
    p->fd = fd;
    p->peer = tcp_ ? peer_address(fd) : "local";
    p->deadline = now + limits_.handshake_s;
    p->nonce = random_token();
    p->out = frame_of({{"type", "challenge"}, {"nonce", p->nonce}});
    if (tcp_) {
      const int on = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }
    pending_.push_back(std::move(p));
    evict_over_limits();
  }
}

// Too many handshakes from one peer, or in all: the oldest go. A worker that
// holds the secret finishes its handshake within a round trip of arriving,
// so it is never the oldest for long.
void Listener::evict_over_limits() {
  std::map<std::string, size_t> per_peer;
  for (auto& p : pending_) per_peer[p->peer] += 1;
  for (auto& p : pending_) {
    if (per_peer[p->peer] <= limits_.max_pending_per_peer) continue;
    per_peer[p->peer] -= 1;
    drop(*p);
  }
  size_t live = 0;
  for (auto& p : pending_) live += p->fd >= 0;
  for (auto it = pending_.begin(); live > limits_.max_pending && it != pending_.end(); ++it) {
    if ((*it)->fd < 0) continue;
    drop(**it);
    live -= 1;
  }
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const auto& p) { return p->fd < 0; }),
                 pending_.end());
}

bool Listener::advance(Pending& p, double now, std::optional<Accepted>& ready) {
  if (now >= p.deadline) {
    drop(p);
    return true;
  }
  // Write what is due.
  while (!p.out.empty()) {
    const ssize_t n = ::send(p.fd, p.out.data(), p.out.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (n <= 0) {
      drop(p);
      return true;
    }
    p.out.erase(0, static_cast<size_t>(n));
  }
  if (p.step == Pending::Step::kChallenge) p.step = Pending::Step::kAnswer;
  if (p.step == Pending::Step::kAccepted) p.step = Pending::Step::kFirst;
  // Read the frame that is due: its 4-byte size, then its body.
  const size_t limit = p.step == Pending::Step::kFirst ? limits_.max_first_frame : limits_.max_frame;
  while (true) {
    size_t want = 4;
    if (p.in.size() >= 4) {
      const auto* h = reinterpret_cast<const unsigned char*>(p.in.data());
      const uint32_t size = h[0] | (h[1] << 8) | (h[2] << 16) | (static_cast<uint32_t>(h[3]) << 24);
      if (size > limit) {
        drop(p);
        return true;
      }
      want = 4 + size;
    }
    if (p.in.size() == want && want > 4) break;
    char buffer[4096];
    const ssize_t n = ::recv(p.fd, buffer, std::min(sizeof buffer, want - p.in.size()), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (n <= 0) {
      drop(p);
      return true;
    }
    p.in.append(buffer, static_cast<size_t>(n));
  }
  Json frame = parse_json(std::string_view(p.in).substr(4));
  p.in.clear();
  if (!frame.is_object()) {
    drop(p);
    return true;
  }
  if (p.step == Pending::Step::kAnswer) {
    const std::string theirs = field(frame, "answer", "nonce");
    if (theirs.size() != 64 ||
        !same(field(frame, "answer", "proof"), hmac(secret_.key, "worker:" + p.nonce + ":" + theirs))) {
      drop(p);
      return true;
    }
    p.out = frame_of({{"type", "accepted"}, {"proof", hmac(secret_.key, "driver:" + theirs + ":" + p.nonce)}});
    p.step = Pending::Step::kAccepted;
    return advance(p, now, ready);
  }
  set_blocking(p.fd, true);
  ready = Accepted{p.fd, std::move(frame), p.peer};
  p.fd = -1;  // handed over
  return true;
}

std::optional<Accepted> Listener::accept_one(int timeout_ms) {
  const double end = steady_seconds() + timeout_ms / 1000.0;
  while (true) {
    const double now = steady_seconds();
    std::optional<Accepted> ready;
    for (auto it = pending_.begin(); it != pending_.end() && !ready;) {
      if (advance(**it, now, ready)) {
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    if (ready) return ready;
    if (now >= end) return std::nullopt;
    // Wait for the listening socket, a pending connection, or the nearest deadline.
    std::vector<pollfd> fds = {{fd_, POLLIN, 0}};
    double wake = end;
    for (auto& p : pending_) {
      fds.push_back({p->fd, static_cast<short>(p->out.empty() ? POLLIN : POLLOUT), 0});
      wake = std::min(wake, p->deadline);
    }
    const int wait_ms = std::max(0, static_cast<int>((wake - now) * 1000) + 1);
    if (::poll(fds.data(), fds.size(), wait_ms) > 0 && (fds[0].revents & POLLIN)) accept_new(steady_seconds());
  }
}

int connect_driver(const std::string& endpoint, const Secret& secret) {
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
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  } else {
    throw Error("bad driver endpoint '" + endpoint + "'");
  }
  set_timeout(fd, 30);
  if (!prove_as_worker(fd, secret.key)) {
    ::close(fd);
    throw Error("the driver at " + endpoint + " did not accept this worker's key" +
                (secret.fingerprint.empty() ? std::string(" (or is not tune)")
                                            : " (cluster key " + secret.fingerprint + " at " + secret.key_file +
                                                  ": is it the driver's?)"));
  }
  set_timeout(fd, 0);
  return fd;
}

void set_liveness(int fd, double timeout_s) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0 ||
      (address.ss_family != AF_INET && address.ss_family != AF_INET6))
    return;
  const int on = 1;
  const int idle = std::max(1, static_cast<int>(timeout_s / 4));
  const int interval = std::max(1, static_cast<int>(timeout_s / 8));
  const int count = 4;
  const unsigned user_timeout = static_cast<unsigned>(std::max(1.0, timeout_s) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
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
