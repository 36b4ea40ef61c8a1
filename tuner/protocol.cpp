#include "tuner/protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "tuner/error.h"

namespace tune::internal {
namespace {

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) throw Error("socket path too long: " + path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

}  // namespace

bool send_message(int fd, const Json& message) {
  const std::string body = message.dump();
  const uint32_t size = static_cast<uint32_t>(body.size());
  char header[4] = {static_cast<char>(size & 0xff), static_cast<char>((size >> 8) & 0xff),
                    static_cast<char>((size >> 16) & 0xff), static_cast<char>(size >> 24)};
  std::string frame(header, 4);
  frame += body;  // one write per message: fewer syscalls, no interleaving
  return write_all(fd, frame.data(), frame.size());
}

std::optional<Json> receive_message(int fd) {
  unsigned char header[4];
  if (!read_all(fd, reinterpret_cast<char*>(header), 4)) return std::nullopt;
  const uint32_t size = header[0] | (header[1] << 8) | (header[2] << 16) |
                        (static_cast<uint32_t>(header[3]) << 24);
  if (size > (256u << 20)) return std::nullopt;  // a corrupt frame, not a message
  std::string body(size, '\0');
  if (!read_all(fd, body.data(), size)) return std::nullopt;
  Json message = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded() || !message.is_object()) return std::nullopt;
  return message;
}

UnixListener::UnixListener() {
  std::string pattern = (std::filesystem::temp_directory_path() / "tune-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw Error(std::string("cannot create socket dir: ") + strerror(errno));
  dir_ = pattern;
  ::chmod(dir_.c_str(), 0700);
  path_ = dir_ + "/driver.sock";
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw Error(std::string("socket: ") + strerror(errno));
  sockaddr_un address = address_of(path_);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd_, 64) != 0) {
    throw Error(std::string("cannot listen on ") + path_ + ": " + strerror(errno));
  }
}

UnixListener::~UnixListener() {
  if (fd_ >= 0) ::close(fd_);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

int UnixListener::accept_one(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  int ready = ::poll(&p, 1, timeout_ms);
  if (ready <= 0) return -1;
  return ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
}

int connect_unix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(std::string("socket: ") + strerror(errno));
  sockaddr_un address = address_of(path);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    throw Error("cannot connect to driver at " + path + ": " + strerror(errno));
  }
  return fd;
}

}  // namespace tune::internal
