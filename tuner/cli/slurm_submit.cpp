#include "tuner/cli/slurm_submit.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include <cstdlib>

#include <boost/program_options.hpp>

#include "base/error.h"
#include "base/names.h"
#include "trainer/session.h"
#include "tuner/exec/mpi_launcher.h"
#include "tuner/exec/run_program.h"
#include "tuner/driver/prepare.h"
#include "tuner/spec/sweep_check.h"
#include "tuner/spec/sweep_reader.h"
#include "tuner/spec/yaml_document.h"

namespace tune::internal {
namespace {

// A value sbatch reads the same in an #SBATCH line as on its command line.
bool plain_word(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_.:/%@+=,-", c) != nullptr;
    if (!ok) return false;
  }
  return true;
}

// A heredoc delimiter that is no line of `text`.
std::string heredoc_delimiter(const std::string& text) {
  std::set<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.insert(line);
  std::string delimiter = "TUNE_SWEEP_EOF";
  for (int n = 1; lines.count(delimiter); ++n) delimiter = "TUNE_SWEEP_EOF_" + std::to_string(n);
  return delimiter;
}

// `text` fit for a comment line: a line break would end the comment.
std::string comment_text(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

}  // namespace

std::string shell_word(const std::string& text) { return plain_word(text) ? text : shell_quote(text); }

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string slurm_batch_script(const SlurmSubmission& s) {
  std::ostringstream script;
  std::string submitted = "sbatch";
  for (const auto& arg : s.sbatch_args) submitted += " " + shell_quote(arg);
  for (const auto& arg : s.extra_args) submitted += " " + shell_quote(arg);
  script << "#!/bin/bash\n"
         << "# The tune sweep " << comment_text(shell_quote(s.experiment)) << " (from "
         << comment_text(shell_quote(s.sweep_file)) << "), written by `tune submit`:\n"
         << "# `tune run` on the allocation's first node, with the allocation's hosts; a job run\n"
         << "# again (requeued after a preemption or a node failure, or submitted again) continues\n"
         << "# the experiment from the store.\n"
         << "# Submitted as: " << comment_text(submitted) << " < this-script\n";
  // sbatch gets its options on its command line; the #SBATCH lines make the
  // script submittable by hand as well, for the values sbatch's own
  // tokenizer reads the same.
  for (const auto& arg : s.sbatch_args) {
    if (arg.rfind("--", 0) != 0 || arg == "--parsable") continue;
    const auto eq = arg.find('=');
    if (eq == std::string::npos || plain_word(arg.substr(eq + 1))) script << "#SBATCH " << arg << "\n";
  }
  std::string text = s.sweep_text;
  if (!text.empty() && text.back() != '\n') text += '\n';
  const std::string delimiter = heredoc_delimiter(text);
  script << "set -eu\n"
         << "tune_sweep_dir=\"$(mktemp -d \"${TMPDIR:-/tmp}/tune-submit.XXXXXX\")\"\n"
         << "trap 'rm -rf \"$tune_sweep_dir\"' EXIT\n"
         << "# The sweep file, embedded: the nodes need not share a filesystem with the submitter.\n"
         << "cat >\"$tune_sweep_dir/sweep.yaml\" <<'" << delimiter << "'\n"
         << text << delimiter << "\n"
         << "tune_binary=" << shell_quote(s.tune_binary) << "\n"
         << "if [ ! -x \"$tune_binary\" ]; then\n"
         << "  echo \"tune submit: $tune_binary is not an executable on $(hostname)\" >&2\n"
         << "  exit 127\n"
         << "fi\n"
         << "echo \"tune: job ${SLURM_JOB_ID:-?} on ${SLURM_JOB_NODELIST:-?}, first node $(hostname)\"\n"
         << "echo \"tune: experiment\" " << shell_quote(s.experiment) << " \"in\" " << shell_quote(s.storage) << "\n"
         << "\"$tune_binary\" run \"$tune_sweep_dir/sweep.yaml\" --name " << shell_quote(s.experiment) << " --storage "
         << shell_quote(s.storage) << " --resume-if-exists";
  for (const auto& arg : s.run_args) script << " " << shell_quote(arg);
  script << "\n";
  return script.str();
}

namespace {

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// Slurm's filename patterns in what we print: %j, %x, %%.
std::string expand_output(const std::string& pattern, const std::string& job_id, const std::string& job_name) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char c = pattern[i + 1];
      if (c == 'j' || c == 'A') { out += job_id; ++i; continue; }
      if (c == 'x') { out += job_name; ++i; continue; }
      if (c == '%') { out += '%'; ++i; continue; }
    }
    out += pattern[i];
  }
  return out;
}

// What `tune run` checks of a sweep before it starts, less what depends on
// the machine it runs on (slots, GPUs, hosts): those belong to the allocation.
void check_sweep_for_submit(const LoadedSweep& loaded) {
  const SweepSpec& spec = loaded.spec;
  try {
    if (!spec.name.empty()) check_experiment_name(spec.name);
    if (spec.trainable.empty()) {
      throw ConfigError::at("trainable", "no trainable: set `trainable:` to a registered name");
    }
    const RegisteredTrainable* trainable = find_trainable(spec.trainable);
    if (!trainable) {
      throw ConfigError::at("trainable", "unknown trainable '" + spec.trainable + "'" +
                                             did_you_mean_or_list(spec.trainable, trainable_names(), "registered"));
    }
    check_sweep(spec);
    if (trainable->info.check_setup) {
      trainable->info.check_setup(spec.setup());
    } else if (!spec.data.is_null() || !spec.preprocess.is_null()) {
      throw ConfigError::at(spec.data.is_null() ? "preprocess" : "data",
                            "trainable '" + spec.trainable + "' takes no data: or preprocess: block");
    }
  } catch (const ConfigError& e) {
    throw loaded.source->locate(e);
  }
}

}  // namespace
}  // namespace tune::internal

namespace tune::cli {

namespace po = boost::program_options;

int submit_command(const std::vector<std::string>& all_args) {
  using internal::shell_quote;
  // Everything after `--` goes to sbatch untouched.
  std::vector<std::string> args, extra;
  auto dashes = std::find(all_args.begin(), all_args.end(), "--");
  args.assign(all_args.begin(), dashes);
  if (dashes != all_args.end()) extra.assign(dashes + 1, all_args.end());

  std::string file, time, partition, job_name, name, storage, output, interface;
  int nodes = 1, ntasks_per_node = 0, cpus_per_task = 0;
  bool dry_run = false;
  po::options_description options("options");
  options.add_options()("file", po::value(&file), "sweep file")(
      "nodes,N", po::value(&nodes)->default_value(1), "nodes to allocate")(
      "time,t", po::value(&time), "time limit, Slurm syntax (e.g. 30, 2:00:00, 1-12)")(
      "partition,p", po::value(&partition), "partition (default: the cluster's default)")(
      "ntasks-per-node", po::value(&ntasks_per_node),
      "slots per node (default: whole nodes, --exclusive, and tune uses all their cores)")(
      "cpus-per-task,c", po::value(&cpus_per_task), "CPUs per slot (with --ntasks-per-node)")(
      "job-name,J", po::value(&job_name), "Slurm job name (default: the experiment's name)")(
      "name", po::value(&name), "experiment name (default: the file's `name`, else TRAINABLE-TIME)")(
      "storage", po::value(&storage)->default_value("./tune_results"),
      "results directory, made absolute (on the job's first node unless shared)")(
      "output,o", po::value(&output), "the job's log, Slurm patterns allowed (default: ./%x-%j.out, made absolute)")(
      "network-interface", po::value(&interface),
      "passed to `tune run`: the interface (or address) the driver listens on for the other nodes")(
      "dry-run", po::bool_switch(&dry_run), "print the batch script instead of submitting it")(
      "help,h", "show this help");
  po::positional_options_description positionals;
  positionals.add("file", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).positional(positionals).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: tune submit FILE [OPTIONS] [-- SBATCH-ARGS...]\n"
              << "Submits the sweep as a Slurm batch job running `tune run` on the allocation's first node.\n"
              << options;
    return 0;
  }
  if (file.empty()) throw ConfigError("tune submit: missing file argument");
  if (nodes < 1) throw ConfigError("--nodes must be >= 1, got " + std::to_string(nodes));
  if (vm.count("ntasks-per-node") && ntasks_per_node < 1) throw ConfigError("--ntasks-per-node must be >= 1");
  if (vm.count("cpus-per-task") && cpus_per_task < 1) throw ConfigError("--cpus-per-task must be >= 1");
  for (const auto* value : {&time, &partition, &job_name, &output, &storage, &interface}) {
    if (value->find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
      throw ConfigError("tune submit: option values cannot contain line breaks");
    }
  }

  // The same bytes are checked and embedded.
  const std::string text = internal::read_text_file(file, internal::YamlLimits().max_bytes);
  internal::LoadedSweep loaded = internal::read_sweep(text, file);
  if (vm.count("name")) {
    internal::check_experiment_name(name);
    loaded.spec.name = name;
  }
  internal::check_sweep_for_submit(loaded);
  std::string experiment = loaded.spec.name;
  if (experiment.empty()) experiment = loaded.spec.trainable + "-" + std::to_string(static_cast<long long>(std::time(nullptr)));
  if (job_name.empty()) job_name = experiment;

  namespace fs = std::filesystem;
  internal::SlurmSubmission submission;
  submission.sweep_text = text;
  submission.sweep_file = file;
  submission.experiment = experiment;
  // The script runs the `tune` the user ran (which runs tune-full), not tune-full's own path.
  const char* cli = std::getenv("TUNE_CLI_PROGRAM");
  submission.tune_binary = cli && *cli ? std::string(cli) : internal::self_executable();
  submission.storage = fs::absolute(storage).lexically_normal().string();
  // The script runs a copy of the file from a folder of its own: its relative
  // paths stay relative to the submitted file's folder.
  submission.run_args = {"--relative-to", fs::absolute(file).parent_path().lexically_normal().string()};
  if (!interface.empty()) {
    submission.run_args.push_back("--network-interface");
    submission.run_args.push_back(interface);
  }
  if (output.empty()) output = "%x-%j.out";
  output = fs::absolute(output).lexically_normal().string();
  // Slurm opens the log on the batch host before the job starts; in a folder
  // that host does not have, the job fails with no log at all.
  for (const char* private_dir : {"/tmp/", "/var/tmp/", "/dev/shm/"}) {
    if (output.rfind(private_dir, 0) == 0) {
      std::cerr << "tune submit: warning: the job's log " << output << " is in " << private_dir
                << ", which the batch host may not share (the job then fails with no log): pass --output on storage "
                   "the nodes share\n";
      break;
    }
  }
  auto& sb = submission.sbatch_args;
  sb.push_back("--parsable");
  sb.push_back("--job-name=" + job_name);
  sb.push_back("--nodes=" + std::to_string(nodes));
  if (!time.empty()) sb.push_back("--time=" + time);
  if (!partition.empty()) sb.push_back("--partition=" + partition);
  if (ntasks_per_node > 0) sb.push_back("--ntasks-per-node=" + std::to_string(ntasks_per_node));
  if (cpus_per_task > 0) sb.push_back("--cpus-per-task=" + std::to_string(cpus_per_task));
  if (ntasks_per_node == 0 && cpus_per_task == 0) sb.push_back("--exclusive");
  sb.push_back("--output=" + output);
  submission.extra_args = extra;
  const std::string script = internal::slurm_batch_script(submission);
  if (dry_run) {
    std::cout << script;
    return 0;
  }

  std::vector<std::string> argv = {"sbatch"};
  argv.insert(argv.end(), sb.begin(), sb.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  internal::RunLimits limits;
  limits.missing_hint = " (install Slurm's client commands, e.g. apt-get install slurm-client, or submit from a node "
                        "of the cluster)";
  const auto result = internal::run_program(argv, script, limits);
  if (result.status != 0) {
    const std::string why = internal::one_line(result.err.empty() ? result.out : result.err);
    throw Error("sbatch failed (exit " + std::to_string(result.status) + ")" +
                (why.empty() ? std::string() : ": " + why));
  }
  std::string job_id = result.out.substr(0, result.out.find_first_of(";\n"));
  while (!job_id.empty() && std::isspace(static_cast<unsigned char>(job_id.back()))) job_id.pop_back();
  if (job_id.empty() || job_id.find_first_not_of("0123456789_") != std::string::npos) {
    throw Error("sbatch printed no job id: '" + internal::one_line(result.out) + "'");
  }
  std::cout << "submitted batch job " << job_id << "\n"
            << "  follow it:  squeue -j " << job_id << "\n"
            << "  its log:    " << internal::expand_output(output, job_id, job_name) << "\n"
            << "  the sweep:  tune status " << internal::shell_word(experiment) << " --storage "
            << internal::shell_word(submission.storage) << "   (on the job's first node unless the storage is shared)\n";
  return 0;
}

}  // namespace tune::cli
