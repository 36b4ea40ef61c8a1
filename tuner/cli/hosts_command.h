// `tune hosts`: the hosts of a multi-host experiment, and hosts joining or
// leaving while it runs (as Ray's autoscaler or a Slurm job's elastic steps
// let users do).
//
//   tune hosts EXP [--json]                        each host: slots, GPUs, state, attempts, losses
//   tune hosts EXP add HOST [--slots N] [--gpus N] HOST joins the running sweep once a check passes
//   tune hosts EXP drain HOST                      HOST takes no new trial; what runs there finishes
//
// Requests go through the store (a `host_request` event the running driver
// picks up within a second); the command waits for the driver's answer and
// prints it. The state is folded from the experiment's events (docs/SCHEMA.md).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "base/json.h"
#include "storage/store.h"

namespace tune::cli {

int hosts_command(const std::vector<std::string>& args);

// The hosts as the events tell: one object per host with "host", "slots",
// "gpus", "state" (active, taken out, draining/drained, checking), "attempts",
// "lost" and "problem" (the last failed check).
Json host_states(const std::vector<EventRecord>& events);

}  // namespace tune::cli
