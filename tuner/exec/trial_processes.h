// Internal: where the processes of a command trial live, so that tune can
// always end them all (README "What tune guarantees about a trial's
// processes").
//
// Every program a trial runs gets a supervisor (process_supervisor.h): a
// process forked by tune (no exec) that forks the program and stays its
// parent. The supervisor is the subreaper of everything the program starts
// (PR_SET_CHILD_SUBREAPER): a descendant that double-forks or calls
// setsid() is reparented to it, not to init. It reports the program's exit
// and ends every descendant when tune tells it to, when the thread that
// started it ends, or when tune dies (its control socket closes: a kill -9
// of `tune run` included).
//
// Where cgroup v2 can be written (root, or a delegated subtree), the program
// and its descendants are also in a cgroup of their own under tune's, and
// are killed as one (cgroup.kill), even if the supervisor itself was killed.
// TUNE_NO_CGROUP=1 turns that off.
//
// The trial folder holds a record of both (`processes`, `rankN.processes`)
// while they run; end_leftover_processes, called when an experiment resumes,
// ends what such a record names if it is still there.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tune::internal {

// A cgroup of one program (empty path: none, the fallback).
struct TrialCgroup {
  std::string path;  // e.g. /sys/fs/cgroup/tune.1234.1
  int procs_fd = -1;  // its cgroup.procs, open for the program to join
  int kill_fd = -1;   // its cgroup.kill, open for the supervisor
};

// Creates a cgroup for one program under this process's own cgroup v2, or
// returns an empty one where cgroup v2 is not mounted, not writable, or
// TUNE_NO_CGROUP is set. Never throws.
TrialCgroup make_trial_cgroup();
// Closes its descriptors (the cgroup folder stays: the supervisor removes it).
void close_trial_cgroup(TrialCgroup& cgroup);

// Writes PATH (a trial folder's `processes` record): this host, the
// supervisor and the program with their start times, the cgroup.
void record_trial_processes(const std::string& path, pid_t supervisor, pid_t program, const std::string& cgroup);

// Ends what the records in `trial_dir` (left by a driver that died) name, if
// it still runs on this host: the cgroup's processes, the supervisor (which
// then ends its descendants), the members of the program's process group
// started after it. Removes the records. Bounded (a few seconds at most);
// returns how many processes it signalled. Never throws.
int end_leftover_processes(const std::string& trial_dir);
// The same for every trial folder of an experiment.
int end_leftover_processes_of_experiment(const std::string& experiment_dir);

}  // namespace tune::internal
