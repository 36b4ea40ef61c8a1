// `tune predict` for tabular models and `tune serve`: the best trial's
// checkpoint of an experiment (or a checkpoint named on the command line),
// loaded with its fitted preprocessors (trainer/tabular/model.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "storage/analysis.h"

namespace tune::cli {

// Which checkpoint a command uses: `checkpoint` when given, else the best
// trial of `experiment` in `storage` by metric/mode (default: the
// experiment's), scope "last", and that trial's best kept checkpoint.
struct ModelChoice {
  std::string storage = "./tune_results";
  std::string experiment;
  std::string checkpoint;
  std::string metric, mode;
};

// The best trial's checkpoint (path, trial_name, metric, score), or only a
// path when given as --checkpoint (then trial_name and experiment are "").
struct ChosenCheckpoint : BestCheckpoint {
  std::string experiment;
};

// Throws tune::NotFoundError (no store, no experiment, no trial with the
// metric, no checkpoint) or tune::ConfigError (no metric/mode). A store
// moved since the sweep still works: a recorded checkpoint path that no
// longer exists is looked up under `storage`/<experiment>/ instead.
ChosenCheckpoint choose_checkpoint(const ModelChoice& choice);

// `tune predict` for a tabular checkpoint: reads `input` (CSV), writes
// `output` (trainer/tabular/model.h write_predictions_csv), prints one
// summary line. Returns the exit code; throws tune::Error on failure.
int predict_tabular(const ChosenCheckpoint& chosen, const std::string& input, const std::string& output,
                    std::ostream& out);

// `tune serve EXP [--port 8000] [--host 127.0.0.1] [--token T] [--checkpoint DIR]`.
int serve_command(const std::vector<std::string>& args);

}  // namespace tune::cli
