// Internal: the worker side of an MPI worker group (tuner/exec/group_executor.h).
//
// The driver starts `mpirun -np N <this executable>` with TUNE_DRIVER_SOCKET
// and TUNE_GROUP_ID in the environment. tune::init() (tuner/tuner.h) sees them
// and calls run_worker(), which never returns: rank 0 connects to the driver,
// every rank runs trials as they come (all ranks receive each command by MPI
// broadcast), and the process exits when the driver says shutdown or goes away.
#pragma once

namespace tune::internal {

// True when this process was started as a worker of a group.
bool started_as_worker();

// This rank's CUDA_VISIBLE_DEVICES from TUNE_RANK_GPUS, before anything
// initializes CUDA: its own GPUs, or none ("") when the trial has none.
void select_rank_gpus();

[[noreturn]] void run_worker();

}  // namespace tune::internal
