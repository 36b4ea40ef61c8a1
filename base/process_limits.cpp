#include "base/process_limits.h"

#include <sys/resource.h>

#include <algorithm>

namespace tune {

void raise_descriptor_limit(uint64_t wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t want = static_cast<rlim_t>(wanted);
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= want) return;
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? want : std::min(want, limit.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace tune
