// Internal: the machines a sweep may use. On one machine that is the driver's
// own; with `--hostfile` the hosts of an OpenMPI hostfile; inside a Slurm
// allocation the allocation's nodes.
//
//   std::vector<Host> hosts = read_hostfile("hosts");   // "node1 slots=4 gpus=2"
//   std::vector<Host> hosts = *slurm_hosts(getenv);      // inside salloc/sbatch
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tune::internal {

struct Host {
  std::string name;    // as mpirun reaches it
  int slots = 1;       // cores tune may use there
  int gpus = 0;        // GPUs there (ids 0..gpus-1)
  bool local = false;  // the driver's own machine
};

// OpenMPI's hostfile syntax: one host a line, `name [slots=N] [max_slots=N]`,
// '#' comments; tune adds `gpus=N`. A host without slots= has 1 (OpenMPI's
// default is the core count of that host, which the driver cannot see).
// Throws ConfigError "file:line: ..." for a duplicate host, a bad count or an
// unknown key (with a did-you-mean).
std::vector<Host> parse_hostfile(const std::string& text, const std::string& file);
std::vector<Host> read_hostfile(const std::string& path);

// Slurm's compressed host lists: "node[1-3,07],gpu01" -> node1 node2 node3
// node07 gpu01 (zero padding kept). Throws ConfigError when malformed.
std::vector<std::string> expand_hostlist(const std::string& list);
// SLURM_JOB_CPUS_PER_NODE / SLURM_TASKS_PER_NODE: "4(x2),2" -> 4 4 2.
std::vector<int> expand_counts(const std::string& counts);

// The hosts of the Slurm allocation this process runs in, from its
// environment (SLURM_JOB_NODELIST, SLURM_JOB_CPUS_PER_NODE,
// SLURM_GPUS_PER_NODE); nullopt outside an allocation.
using Getenv = std::function<const char*(const char*)>;
std::optional<std::vector<Host>> slurm_hosts(const Getenv& getenv);

// The NVIDIA GPUs of this machine: one directory each under the driver's
// /proc/driver/nvidia/gpus (0 without the driver).
int detect_local_gpus(const std::string& proc_dir = "/proc/driver/nvidia/gpus");

// The address Slurm knows a node by (`scontrol show node NAME`: NodeAddr), for
// node names the driver's machine cannot resolve; "" when Slurm does not say
// (no scontrol, no such node, a timeout).
std::string slurm_node_address(const std::string& node);

// localhost, a loopback address, or this machine's host name.
bool is_local_host(const std::string& name);

}  // namespace tune::internal
