// Internal: the one place that builds `mpirun` command lines and starts
// them, for worker groups and for `tune predict --workers N`.
//
//   MpiLaunch launch;
//   launch.ranks = 2;
//   launch.program = {"/proc/self/exe"};
//   launch.env = {{"TUNE_GROUP_ID", "3"}};
//   launch.log_path = "logs/group_3.log";
//   pid_t pid = spawn_mpirun(launch);   // its own process group
//
// Every launch gets: --allow-run-as-root when root, --oversubscribe,
// --bind-to none (trials set their own thread counts), shared-memory
// transport on one host (plus TCP on `network` across hosts), `env` exported
// to every rank, then the words of TUNE_MPIRUN_ARGS, then the program. mpirun
// (and each host's orted) runs with the bind shim preloaded: its listeners
// bind loopback on one machine, the driver's address across hosts.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace tune::internal {

struct MpiLaunch {
  int ranks = 1;
  std::vector<std::string> program;                         // executable and its arguments
  std::vector<std::pair<std::string, std::string>> env;     // set for (and exported to) every rank
  std::string log_path;  // stdout and stderr of mpirun and the ranks; "" = inherited
  bool stdin_null = true;
  // Several hosts: "host:ranks" each, in rank order (mpirun --host). Empty:
  // this machine.
  std::vector<std::pair<std::string, int>> hosts;
  // With hosts: the network the MPI traffic and OpenMPI's runtime use
  // ("10.77.0.0/24"), and the driver's address on it.
  std::string network, driver_address;
  // With hosts: OpenMPI's daemons declare a silent peer dead after about
  // this many seconds (TCP keepalive on their channel), so mpirun notices an
  // unreachable host and names it in its log. 0: OpenMPI's default (minutes).
  double liveness_s = 0;
};

// The library that keeps mpirun's and orted's listeners off the wildcard
// address (tuner/exec/bind_shim.c), or "" when it is not installed: TUNE_BIND_SHIM,
// else the build's or the install's copy (its configured prefix, else
// ../lib beside the running executable).
std::string bind_shim_path();

// The full argv, "mpirun" first.
std::vector<std::string> mpirun_command(const MpiLaunch& launch);

// Starts mpirun as the leader of a new process group (signal the group with
// kill(-pid, ...)). Throws tune::Error when mpirun cannot be started.
pid_t spawn_mpirun(const MpiLaunch& launch);

// SIGKILL to an mpirun of spawn_mpirun's and everything it started. Its
// remote launches (ssh, srun, OMPI_MCA_plm_rsh_agent) run in process groups
// of their own, which a SIGKILL of mpirun's group leaves behind: an ssh to a
// host whose login hangs would stay for ever. mpirun is stopped, its
// children's groups are killed, then its own group. Not reaped.
void kill_mpirun(pid_t pid);

// Waits for `pid`; after `grace` sends SIGKILL to its process group and
// waits. Returns its exit status (128 + signal number when killed), -1 if it
// was not our child. Removes what a killed mpirun left (below).
int reap(pid_t pid, std::chrono::milliseconds grace);

// The exit status (128 + signal number when killed) of an mpirun of
// spawn_mpirun's that waitpid() just reaped with `wait_status`; removes what
// it left behind if it was killed. Every waitpid() of an mpirun goes through
// this or reap().
int reaped_mpirun(pid_t pid, int wait_status);

// What an mpirun killed with SIGKILL (no chance to clean up) leaves on this
// machine, which OpenMPI removes at a normal end, even a SIGTERM: its session
// folder (<TMPDIR or /tmp>/ompi.<node>.<uid>/pid.<pid>: its PMIx store, about
// 340 KB) and the shared-memory segments of its ranks here
// (/dev/shm/vader_segment.<node>.<uid>.<job>.<rank>, 4 MiB each). Removes
// them, once `pid` has been reaped: the session folder only if its contact
// file names `pid`, the segments only those of its job, owned by this user.
// Returns how many it removed (segments, plus 1 for the folder).
int remove_killed_mpirun_leftovers(pid_t pid);

// OpenMPI shared-memory segments of this user that a dead job left: ranks
// killed before MPI_Finalize by someone else than tune (Slurm past KillWait,
// the OOM killer, kill -9 of the whole job). In `directory` (default: the
// vader backing directory, /dev/shm), vader_segment.* files owned by this
// user, older than `min_age_s` and mapped by no process (/proc/*/maps): a
// live job's ranks map their own and their peers' segments. Returns how
// many it removed.
int remove_orphaned_segments(const std::string& directory = "", double min_age_s = 60);

// This program's own path (/proc/self/exe), for re-executing it as workers.
std::string self_executable();

}  // namespace tune::internal
