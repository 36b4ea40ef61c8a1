// Per-process resource limits tune raises for itself.
#pragma once

#include <cstdint>

namespace tune {

// Raises the soft limit on open descriptors (RLIMIT_NOFILE) to `wanted`, as
// far as the hard limit allows; never lowers it; a failure leaves it as it
// was. A driver with hundreds of trial processes, or a server with thousands
// of connections, needs more than the usual soft limit of 1,024, and the
// hard limit (often 524,288) lets a process take them without root.
void raise_descriptor_limit(uint64_t wanted);

}  // namespace tune
