// How a sweep runs, as opposed to what it searches (SweepSpec): where the
// store is, which machines and cores it may use, progress output, the live
// report. Part of the embedding API (tuner/tuner.h includes it); the CLI's
// flags fill it.
//
//   tune::RunConfig run;
//   run.storage_path = "results";
//   run.hostfile = "hosts";        // docs/CLUSTER.md
//   tune::Tuner(spec, run).fit();
#pragma once

#include <string>

#include "storage/store.h"

namespace tune {

struct RunConfig {
  // Results directory (holds tune.db and one folder per experiment).
  // Default: "./tune_results".
  std::string storage_path = "./tune_results";
  // Cores the sweep may use; a trial takes workers * cpus_per_worker slots.
  // 0 = the number of cores. Default: 0. Ignored with several hosts.
  int slots = 0;
  // An OpenMPI hostfile (`node1 slots=4 gpus=2` a line): trials' worker
  // groups are placed on those hosts (docs/CLUSTER.md). Default: "" (inside a
  // Slurm allocation its nodes, else this machine).
  std::string hostfile;
  // With several hosts: the driver listens for rank 0s (TCP, token-checked)
  // on this interface's address (a name like "eth0" or an address). Default:
  // "" (the address this machine reaches the first remote host from).
  std::string network_interface;
  // With several hosts: the cluster key file, the same file at the same path
  // on every host (like Slurm's munge key); the driver and its workers prove
  // it to each other without sending it (docs/CLUSTER.md). Default: ""
  // ($TUNE_SECRET_FILE, else ~/.config/tune/cluster.key, made on first use).
  std::string secret_file;
  // Use the Slurm allocation this process runs in (SLURM_JOB_NODELIST) when
  // there is no hostfile. Default: true.
  bool use_slurm_allocation = true;
  // Take the experiment over even when the store says another live driver
  // runs it (`tune resume --force`: for a driver on another machine that is
  // gone but whose lease has not expired yet).
  bool force = false;
  // When a driver on another machine holds the experiment's lease: wait while
  // its heartbeat stands still, until it is a minute old (that machine is
  // gone: a batch job requeued onto another node), instead of refusing at
  // once; a heartbeat that moves on is a live driver, refused as usual.
  // `tune run --resume-if-exists`.
  bool wait_for_stale_lease = false;
  // Print the progress table every progress_interval_s seconds and at the end.
  bool verbose = true;
  double progress_interval_s = 5.0;
  // Default: kNormal (a committed result survives a crash of the driver).
  Durability durability = Durability::kNormal;
  // Program re-executed for MPI worker groups. Default: this program.
  std::string worker_executable;
  // Keep an HTML report of the experiment here (tuner/report/report.h), rewritten
  // every report_interval_s while the sweep runs and once at its end; an open
  // page reloads itself until the sweep is over. Default: "" (none).
  std::string report_path;
  double report_interval_s = 5.0;
  // Let a trial's report() return before its result is committed when
  // nothing can be decided on that result (no stop criterion reaches it, the
  // scheduler acts at other iterations: FIFO never, ASHA at its rungs, PBT
  // every perturbation_interval); the trial's next report() reads the answer
  // first, and a result with a checkpoint always waits. Saves most reports'
  // round trip to the driver's commit. Default: true (false: every report waits).
  bool run_ahead = true;
};

}  // namespace tune
