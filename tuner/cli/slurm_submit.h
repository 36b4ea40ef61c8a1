// The `tune submit` command: a sweep as a Slurm batch job.
//
//   tune submit sweep.yaml --nodes 2 --time 1:00:00 --partition gpu -- --gres=gpu:2
//   -> submitted batch job 1234
//
// The sweep file is checked first (as `tune run` reads it, errors at
// file:line; a bad file submits nothing), then embedded in the batch script
// (no shared filesystem is assumed: the job writes it to a temporary file on
// its first node) and `tune run` of this very binary (its absolute path)
// runs it there, taking the hosts from the allocation. `sbatch --parsable`
// is started by fork/exec with the script on its stdin; every word put into
// the script is shell-quoted.
#pragma once

#include <string>
#include <vector>

namespace tune::cli {

// tune submit FILE [--nodes N] [--time T] [--partition P] [--ntasks-per-node N]
//   [--cpus-per-task N] [--job-name NAME] [--name EXP] [--storage DIR]
//   [--output LOG] [--network-interface IF] [--dry-run] [-- SBATCH-ARGS...]
// Bad options and sweep files throw ConfigError; a missing or failing sbatch
// throws tune::Error (one line with sbatch's stderr).
int submit_command(const std::vector<std::string>& args);

}  // namespace tune::cli

namespace tune::internal {

// `text` as one POSIX shell word: 'text', with ' written as '\''.
std::string shell_quote(const std::string& text);
// `text` itself when it needs no quoting (letters, digits, _.:/%@+=,-), else shell_quote(text).
std::string shell_word(const std::string& text);

struct SlurmSubmission {
  std::string sweep_text;             // the sweep file's bytes, embedded
  std::string sweep_file;             // where they were read (a comment only)
  std::string experiment;             // passed to `tune run --name`
  std::string tune_binary;            // absolute path on the nodes
  std::string storage;                // absolute
  std::vector<std::string> run_args;  // more options for `tune run` (--network-interface IF)
  std::vector<std::string> sbatch_args;  // options for sbatch (before the pass-through ones)
  std::vector<std::string> extra_args;   // after `--`, verbatim
};

// The batch script: #SBATCH lines for the options whose values need no
// quoting (sbatch gets every option on its command line as well), the sweep
// in a quoted heredoc whose delimiter is no line of it, then `tune run`.
std::string slurm_batch_script(const SlurmSubmission& submission);

}  // namespace tune::internal
