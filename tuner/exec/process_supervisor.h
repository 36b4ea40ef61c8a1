// Internal: the supervisor of one program a command trial runs
// (tuner/exec/trial_processes.h says where a trial's processes live).
//
// ChildProcess forks it (no exec) with a SupervisorPlan; it sets itself up
// as the subreaper of everything the program starts, forks the program (in
// its own process group and cgroup), and talks to tune over a control
// socket until tune closes it, the thread that started it ends or tune dies;
// then it ends every descendant and exits.
#pragma once

#include "tuner/exec/trial_processes.h"

namespace tune::internal {

// Its name in /proc/PID/comm (and ps): the resume sweep signals a recorded
// supervisor only if it still has this name and its start time.
inline constexpr char kSupervisorName[] = "tune-supervise";

// What the supervisor needs, prepared before fork (it may not allocate).
struct SupervisorPlan {
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;
  int stdout_fd = -1, stderr_fd = -1;  // write ends, for the program
  int failed_fd = -1;  // the program writes errno here if chdir/exec fails (negative: chdir)
  int control_fd = -1;  // the supervisor's end of the control socket
  TrialCgroup cgroup;
};

// The supervisor's messages on the control socket: 5 bytes each.
inline constexpr char kProgramStarted = 'P';  // + the program's pid (int32)
inline constexpr char kProgramExited = 'X';   // + its wait status (int32)
// Tune's commands: 'T' sends SIGTERM to the program's process group; closing
// the socket (or the supervisor's parent thread ending) ends everything.
inline constexpr char kTerminateProgram = 'T';

// The supervisor's body, in the child of fork(): async-signal-safe calls
// only. Never returns.
[[noreturn]] void run_supervisor(const SupervisorPlan& plan);

}  // namespace tune::internal
