// Internal: the "command" trainable, which runs any program as a trial
// (`trainable: {command: [...]}` in a sweep file; tuner/spec/command_spec.h).
//
// The contract, for programs in any language (no tune library needed):
// - Environment: TUNE_CONFIG (the config as JSON), TUNE_TRIAL_DIR,
//   TUNE_CHECKPOINT_DIR (an empty folder for checkpoints),
//   TUNE_RESTORE_FROM (the checkpoint folder to resume from; unset for a fresh
//   start), TUNE_ITERATION (results already counted), TUNE_EXPERIMENT,
//   TUNE_TRIAL_NAME; and as torchrun sets them: RANK, WORLD_SIZE, LOCAL_RANK,
//   LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; and TF_CONFIG (every rank's
//   host:port, this rank's index) as for MultiWorkerMirroredStrategy.
// - Environment paths (TUNE_TRIAL_DIR, TUNE_CHECKPOINT_DIR, TUNE_RESTORE_FROM)
//   are absolute.
// - A stdout line `@tune {"loss": 0.3}` is one result (rank 0's only): one
//   JSON object, nested at most 64 deep (NaN, Infinity as Python writes
//   them); any other line after "@tune " fails the trial. With "checkpoint":
//   "<folder>" that folder becomes the result's checkpoint: moved if it is in
//   the trial's folder (TUNE_CHECKPOINT_DIR named itself is made again,
//   empty), copied and left in place if it is elsewhere, refused if it
//   contains the trial's folder (tuner/exec/checkpoint_handoff.h). The
//   program does not wait for tune: it writes each checkpoint into a folder
//   of its own. Every line is also the trial's log (stdout.log).
// - The trial stops or pauses by SIGTERM to the program's process group,
//   SIGKILL to every process of the trial after stop_grace_s; a paused trial
//   restarts with TUNE_RESTORE_FROM. The program's exit ends the trial (what
//   it left on stdout is read for up to 2 s): exit 0 ends it, any other exit
//   fails it with the end of stderr as its message. Whatever the program
//   started is ended with it (tuner/exec/trial_processes.h).
// - With resources.workers N the trial is a worker group: every rank runs
//   the program; rank 0's results count, and a rank whose program fails
//   ends the group.
#pragma once

namespace tune::internal {

// Registers the trainable "command" (idempotent).
void register_command_trainable();

}  // namespace tune::internal
