/* Preloaded (LD_PRELOAD) into mpirun and orted only: Open MPI 4.1 binds its
 * runtime's listeners to the wildcard address whatever oob_tcp_if_include
 * says (fixed only in PRRTE, Open MPI 5). tune wants nothing listening beyond
 * loopback on one machine, and only on the chosen interface across hosts, so
 * a wildcard bind() of those two programs is rewritten:
 *   IPv4 0.0.0.0 -> the local address that routes to TUNE_BIND_TOWARD, or
 *                   TUNE_BIND_ADDRESS, or 127.0.0.1;
 *   IPv6 ::      -> ::1.
 * Across hosts the MPI ranks' own TCP listeners (the tcp BTL binds the
 * wildcard whatever btl_tcp_if_include says) are rewritten the same way:
 * tune sets TUNE_BIND_RANKS=1 for multi-host groups. Otherwise any other
 * process (the ranks inherit LD_PRELOAD) is left alone. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int active = -1;

static int is_runtime(void) {
  if (active < 0) {
    const char* name = program_invocation_short_name;
    active = strcmp(name, "mpirun") == 0 || strcmp(name, "mpiexec") == 0 || strcmp(name, "orterun") == 0 ||
             strcmp(name, "orted") == 0;
    const char* ranks = getenv("TUNE_BIND_RANKS");
    if (ranks && strcmp(ranks, "1") == 0) active = 1;
  }
  return active;
}

/* The IPv4 address to bind instead of 0.0.0.0. */
static struct in_addr ipv4_target(void) {
  struct in_addr out;
  out.s_addr = htonl(INADDR_LOOPBACK);
  /* TOWARD first: a remote host's orted has it, and may also have inherited
   * the driver host's ADDRESS through the launcher. */
  const char* toward = getenv("TUNE_BIND_TOWARD");
  struct sockaddr_in peer;
  memset(&peer, 0, sizeof peer);
  peer.sin_family = AF_INET;
  peer.sin_port = htons(9);
  if (toward && inet_pton(AF_INET, toward, &peer.sin_addr) == 1) {
    /* A UDP connect sends nothing: the kernel only picks the route. */
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in local;
    socklen_t size = sizeof local;
    if (fd >= 0 && connect(fd, (struct sockaddr*)&peer, sizeof peer) == 0 &&
        getsockname(fd, (struct sockaddr*)&local, &size) == 0)
      out = local.sin_addr;
    if (fd >= 0) close(fd);
    return out;
  }
  const char* address = getenv("TUNE_BIND_ADDRESS");
  if (address && *address) inet_pton(AF_INET, address, &out);
  return out;
}

int bind(int fd, const struct sockaddr* addr, socklen_t len) {
  static int (*real_bind)(int, const struct sockaddr*, socklen_t) = NULL;
  if (!real_bind) real_bind = (int (*)(int, const struct sockaddr*, socklen_t))dlsym(RTLD_NEXT, "bind");
  if (!real_bind) {
    errno = ENOSYS;
    return -1;
  }
  if (addr && is_runtime()) {
    if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in) &&
        ((const struct sockaddr_in*)addr)->sin_addr.s_addr == htonl(INADDR_ANY)) {
      struct sockaddr_in a;
      memcpy(&a, addr, sizeof a);
      a.sin_addr = ipv4_target();
      return real_bind(fd, (const struct sockaddr*)&a, sizeof a);
    }
    if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6) &&
        IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6*)addr)->sin6_addr)) {
      struct sockaddr_in6 a;
      memcpy(&a, addr, sizeof a);
      a.sin6_addr = in6addr_loopback;
      return real_bind(fd, (const struct sockaddr*)&a, sizeof a);
    }
  }
  return real_bind(fd, addr, len);
}
