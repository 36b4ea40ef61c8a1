#include "tuner/spec/sweep_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"
#include "base/error.h"

namespace tune {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const char* kFullExample = R"(name: branin-random
trainable: branin                 # a registered trainable
metric: loss
mode: min
num_samples: 50
max_concurrent_trials: 2
resources: {workers: 1, cpus_per_worker: 1, use_mpi: true}
search: {algorithm: random, seed: 7}
scheduler: {type: fifo}
stop: {training_iteration: 10, loss: 0.01, time_budget_s: 60}
param_space:
  x0: {uniform: [-5, 10]}
  x1: {uniform: [0, 15]}
  opt: {grid_search: [sgd, adam]}
  block: {depth: {randint: [1, 4]}}
  epochs: 3
points_to_evaluate: [{x0: 3.14, x1: 2.27}]
checkpoint: {num_to_keep: 2, score_attribute: loss, score_order: min}
failure: {max_failures: 1}
)";

const char* kMinimal = "trainable: t\nparam_space: {x: {uniform: [0, 1]}}\n";

// what() of the ConfigError that parse_sweep throws, or "no error".
std::string error_of(const std::string& yaml) {
  try {
    parse_sweep(yaml, "sweep.yaml");
  } catch (const ConfigError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
    return what;
  }
  return "no error";
}

std::string with(const std::string& extra) { return std::string(kMinimal) + extra; }

TEST(SweepSpecParse, ReadsEveryFieldOfTheFullExample) {
  SweepSpec spec = parse_sweep(kFullExample, "sweep.yaml");
  EXPECT_EQ(spec.name, "branin-random");
  EXPECT_EQ(spec.trainable, "branin");
  EXPECT_EQ(spec.metric, "loss");
  EXPECT_EQ(spec.mode, "min");
  EXPECT_EQ(spec.num_samples, 50);
  EXPECT_EQ(spec.max_concurrent_trials, 2);
  EXPECT_EQ(spec.resources.workers, 1);
  EXPECT_EQ(spec.resources.cpus_per_worker, 1);
  EXPECT_TRUE(spec.resources.use_mpi);
  EXPECT_EQ(spec.search.algorithm, "random");
  EXPECT_EQ(spec.search.seed, std::optional<uint64_t>(7));
  EXPECT_EQ(spec.scheduler.type, "fifo");
  EXPECT_EQ(spec.scheduler.type, "fifo");
  EXPECT_EQ(spec.scheduler.params, Json::object());
  EXPECT_EQ(spec.stop.training_iteration, std::optional<int64_t>(10));
  EXPECT_EQ(spec.stop.time_budget_s, std::optional<double>(60));
  EXPECT_EQ(spec.stop.metric_thresholds, (std::map<std::string, double>{{"loss", 0.01}}));
  ASSERT_EQ(spec.param_space.parameters().size(), 4u);
  EXPECT_EQ(spec.param_space.parameters()[3].path, "block.depth");
  EXPECT_EQ(spec.param_space.grid_size(), 2);
  ASSERT_EQ(spec.param_space.constants().size(), 1u);
  EXPECT_EQ(spec.points_to_evaluate, (std::vector<Json>{Json{{"x0", 3.14}, {"x1", 2.27}}}));
  EXPECT_EQ(spec.checkpoint.num_to_keep, 2);
  EXPECT_EQ(spec.checkpoint.score_attribute, "loss");
  EXPECT_EQ(spec.checkpoint.score_order, "min");
  EXPECT_EQ(spec.failure.max_failures, 1);
}

TEST(SweepSpecParse, FillsTheDocumentedDefaults) {
  SweepSpec spec = parse_sweep(kMinimal, "sweep.yaml");
  EXPECT_EQ(spec.name, "");
  EXPECT_EQ(spec.metric, "");
  EXPECT_EQ(spec.num_samples, 1);
  EXPECT_EQ(spec.max_concurrent_trials, 0);
  EXPECT_EQ(spec.resources.workers, 1);
  EXPECT_EQ(spec.resources.cpus_per_worker, 1);
  EXPECT_FALSE(spec.resources.use_mpi);
  EXPECT_EQ(spec.search.algorithm, "random");
  EXPECT_FALSE(spec.search.seed.has_value());
  EXPECT_EQ(spec.scheduler.type, "fifo");
  EXPECT_FALSE(spec.stop.training_iteration.has_value());
  EXPECT_FALSE(spec.stop.time_budget_s.has_value());
  EXPECT_TRUE(spec.points_to_evaluate.empty());
  EXPECT_EQ(spec.checkpoint.num_to_keep, 0);
  EXPECT_EQ(spec.failure.max_failures, 0);
  EXPECT_NO_THROW(SweepSpec().validate());
}

TEST(SweepSpecParse, AcceptsAnEmptyParamSpaceAndKeysWithNoValue) {
  SweepSpec spec = parse_sweep("trainable: t\nparam_space: {}\nstop:\nmetric:\n", "sweep.yaml");
  EXPECT_TRUE(spec.param_space.parameters().empty());
  EXPECT_EQ(spec.metric, "");
}

TEST(SweepSpecLoad, ReadsAFileAndNamesItInErrors) {
  testing::TempDir dir;
  std::string good = dir.write("good.yaml", kFullExample);
  EXPECT_EQ(load_sweep_file(good).trainable, "branin");
  std::string bad = dir.write("bad.yaml", "trainable: t\nparam_space: {}\nnum_sample: 3\n");
  try {
    load_sweep_file(bad);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), bad + ":3: unknown key 'num_sample' (did you mean 'num_samples'?)");
  }
}

TEST(SweepSpecLoad, ReportsAMissingFileWithoutALine) {
  try {
    load_sweep_file("/nonexistent/sweep.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/sweep.yaml: cannot read file: No such file or directory");
  }
}

TEST(SweepSpecErrors, InvalidYamlNamesTheLineOfTheSyntaxError) {
  EXPECT_THAT(error_of("trainable: t\nparam_space: {x: 1}\nstop: [1, 2\n"), StartsWith("sweep.yaml:4: "));
  EXPECT_THAT(error_of("trainable: t\n  bad: indent: here\n"), StartsWith("sweep.yaml:2: "));
}

TEST(SweepSpecErrors, TopLevelMustBeAMapping) {
  EXPECT_THAT(error_of("- a\n- b\n"), StartsWith("sweep.yaml:1: a sweep file must be a mapping"));
  EXPECT_THAT(error_of(""), StartsWith("sweep.yaml:1: a sweep file must be a mapping"));
  // A plain scalar over lines (a blank line folds to a newline) is quoted on one line
  // (error_of checks), cut at 80 bytes (a finding of the fuzz hour).
  EXPECT_EQ(error_of("tr21m_s\xf0\xa0\x97\x9ainp\n\nparp\n"),
            "sweep.yaml:1: a sweep file must be a mapping with at least trainable and param_space, got "
            "'tr21m_s\xf0\xa0\x97\x9ainp\\nparp'");
  EXPECT_THAT(error_of(std::string(200, 'a') + "\n"), ::testing::EndsWith(std::string(80, 'a') + "...'"));
}

// trainable: {command: [...]}: the spec keeps the program, its folder
// (absolute), environment and grace, and survives the store's JSON.
TEST(SweepSpecCommand, ACommandTrainableIsReadAndRoundTrips) {
  const SweepSpec spec = parse_sweep(
      "trainable: {command: [python3, t.py, --x, \"{x}\", 7], env: {A: \"{model.w}\"}, stop_grace_s: 2}\n"
      "param_space: {x: {uniform: [0, 1]}, model: {w: 3}}\n",
      "sweep.yaml");
  EXPECT_EQ(spec.trainable, "command");
  EXPECT_EQ(spec.command["argv"], Json({"python3", "t.py", "--x", "{x}", "7"}));
  EXPECT_EQ(spec.command["env"], Json({{"A", "{model.w}"}}));
  EXPECT_EQ(spec.command["stop_grace_s"], 2.0);
  EXPECT_EQ(spec.command["cwd"], std::filesystem::current_path().lexically_normal().string());
  EXPECT_EQ(spec.setup()["command"], spec.command);
  EXPECT_EQ(SweepSpec::from_json(spec.to_json()).command, spec.command);
  EXPECT_THAT(error_of("trainable: {command: [sh, \"{model}\", \"{y}\"]}\nparam_space: {model: {w: 3}}\n"),
              StartsWith("sweep.yaml:1: trainable.command[2]: placeholder {y} names no key of param_space"));
}

TEST(SweepSpecErrors, RequiredKeysAreReported) {
  EXPECT_EQ(error_of("param_space: {}\n"), "sweep.yaml:1: missing required key 'trainable'");
  EXPECT_EQ(error_of("trainable: t\n"), "sweep.yaml:1: missing required key 'param_space'");
  EXPECT_THAT(error_of("trainable: t\nparam_space: [1]\n"), StartsWith("sweep.yaml:2: param_space must be a mapping"));
  EXPECT_EQ(error_of("trainable:\nparam_space: {}\n"),
            "sweep.yaml:1: trainable must be a non-empty string (a registered name) or {command: [...]}");
}

TEST(SweepSpecErrors, UnknownKeysSuggestTheClosestValidKey) {
  EXPECT_EQ(error_of("name: n\ntrainable: t\nparam_space: {}\nnum_sample: 5\n"),
            "sweep.yaml:4: unknown key 'num_sample' (did you mean 'num_samples'?)");
  EXPECT_EQ(error_of(with("resources:\n  worker: 2\n")),
            "sweep.yaml:4: unknown key 'worker' in resources (did you mean 'workers'?)");
  EXPECT_EQ(error_of(with("checkpoint: {num_to_kep: 1}\n")),
            "sweep.yaml:3: unknown key 'num_to_kep' in checkpoint (did you mean 'num_to_keep'?)");
  EXPECT_THAT(error_of(with("zzzzzzzz: 1\n")),
              StartsWith("sweep.yaml:3: unknown key 'zzzzzzzz' (valid keys: name, trainable, metric,"));
  EXPECT_THAT(error_of(with("search: {algo: grid}\n")), StartsWith("sweep.yaml:3: unknown key 'algo' in search"));
}

TEST(SweepSpecErrors, WrongTypesShowTheOffendingValue) {
  EXPECT_EQ(error_of("trainable: t\nparam_space: {}\nmetric: loss\nmode: min\nnum_samples: abc\n"),
            "sweep.yaml:5: num_samples must be a positive integer, got 'abc'");
  EXPECT_EQ(error_of(with("num_samples: '5'\n")), "sweep.yaml:3: num_samples must be a positive integer, got '5'");
  EXPECT_EQ(error_of(with("num_samples: 2.5\n")), "sweep.yaml:3: num_samples must be a positive integer, got '2.5'");
  EXPECT_EQ(error_of(with("resources: {use_mpi: maybe}\n")),
            "sweep.yaml:3: resources.use_mpi must be true or false, got 'maybe'");
  EXPECT_EQ(error_of(with("resources: [1]\n")), "sweep.yaml:3: resources must be a mapping, got a list");
  EXPECT_EQ(error_of(with("stop: {loss: low}\n")), "sweep.yaml:3: stop.loss must be a number, got 'low'");
  EXPECT_EQ(error_of(with("stop: {time_budget_s: 0}\n")), "sweep.yaml:3: stop.time_budget_s must be a positive number, got '0'");
  EXPECT_EQ(error_of(with("search: {seed: -1}\n")), "sweep.yaml:3: search.seed must be a non-negative integer, got '-1'");
  EXPECT_EQ(error_of(with("metric: {a: 1}\nmode: min\n")), "sweep.yaml:3: metric must be a non-empty string, got a mapping");
}

TEST(SweepSpecErrors, OutOfRangeNumbersAreRejected) {
  EXPECT_EQ(error_of(with("num_samples: 0\n")), "sweep.yaml:3: num_samples must be a positive integer, got '0'");
  EXPECT_EQ(error_of(with("max_concurrent_trials: -1\n")),
            "sweep.yaml:3: max_concurrent_trials must be a non-negative integer, got '-1'");
  EXPECT_EQ(error_of(with("resources: {workers: 0}\n")),
            "sweep.yaml:3: resources.workers must be a positive integer, got '0'");
  EXPECT_EQ(error_of(with("resources: {cpus_per_worker: 0}\n")),
            "sweep.yaml:3: resources.cpus_per_worker must be a positive integer, got '0'");
  EXPECT_EQ(error_of(with("failure: {max_failures: -2}\n")),
            "sweep.yaml:3: failure.max_failures must be an integer >= -1, got '-2'");
  EXPECT_EQ(error_of(with("failure: {max_failures: -1}\n")), "no error");
  EXPECT_EQ(error_of(with("checkpoint: {num_to_keep: -1}\n")),
            "sweep.yaml:3: checkpoint.num_to_keep must be a non-negative integer, got '-1'");
  EXPECT_EQ(error_of(with("stop: {training_iteration: 0}\n")),
            "sweep.yaml:3: stop.training_iteration must be a positive integer, got '0'");
}

TEST(SweepSpecErrors, ModeAndMetricMustComeTogether) {
  EXPECT_EQ(error_of(with("metric: loss\nmode: minimize\n")), "sweep.yaml:4: mode must be 'min' or 'max', got 'minimize'");
  EXPECT_EQ(error_of(with("metric: loss\n")), "sweep.yaml:3: metric 'loss' needs a mode (min or max)");
  EXPECT_EQ(error_of(with("\nmode: max\n")), "sweep.yaml:4: mode 'max' needs a metric");
  EXPECT_EQ(error_of(with("checkpoint: {score_order: up}\n")),
            "sweep.yaml:3: checkpoint.score_order must be 'min' or 'max', got 'up'");
}

TEST(SweepSpecErrors, UnknownSearchAlgorithmsAndSchedulersAreNamed) {
  EXPECT_EQ(error_of(with("search:\n  algorithm: bayess\n")),
            "sweep.yaml:4: unknown search algorithm 'bayess' (did you mean 'bayes'?)");
  EXPECT_EQ(error_of(with("scheduler: {type: fiffo}\n")),
            "sweep.yaml:3: scheduler: unknown scheduler 'fiffo' (did you mean 'fifo'?); expected one of fifo, asha, "
            "hyperband, median_stopping, pbt, pb2");
  EXPECT_EQ(error_of(with("scheduler: {type: fifo, grace_period: 3}\n")),
            "sweep.yaml:3: scheduler: scheduler fifo takes no options, got 'grace_period'");
  EXPECT_EQ(error_of(with("scheduler: {type: asha, max_t: 10, grace_periods: 3}\n")),
            "sweep.yaml:3: scheduler: scheduler asha has no option 'grace_periods' (did you mean 'grace_period'?); "
            "options: time_attr, metric, mode, max_t, grace_period, reduction_factor, brackets, stop_last_trials, "
            "promotion, backfill");
  EXPECT_EQ(error_of(with("metric: q\nmode: max\nscheduler:\n  type: pbt\n  hyperparam_mutations: {lr: {loguniform: [0, 1]}}\n")),
            "sweep.yaml:6: scheduler: scheduler pbt: hyperparam_mutations.lr: loguniform: bounds must be positive, got "
            "[0, 1]");
}

TEST(SweepSpecErrors, DomainErrorsCarryTheParameterLine) {
  const std::string head = "trainable: t\nparam_space:\n  a: {uniform: [0, 1]}\n";
  EXPECT_EQ(error_of(head + "  lr: {loguniform: [0, 1]}\n"),
            "sweep.yaml:4: parameter 'lr': loguniform: bounds must be positive, got [0, 1]");
  EXPECT_EQ(error_of(head + "  b: {uniform: [5, 1]}\n"),
            "sweep.yaml:4: parameter 'b': uniform: lower bound 5 must be less than upper bound 1");
  EXPECT_EQ(error_of(head + "  c: {randint: [2, 2]}\n"),
            "sweep.yaml:4: parameter 'c': randint: lower bound 2 must be less than upper bound 2");
  EXPECT_EQ(error_of(head + "  opt: {grid_search: []}\n"),
            "sweep.yaml:4: parameter 'opt': grid_search: needs at least one value");
  EXPECT_EQ(error_of(head + "  lr: {loguniorm: [1.0e-5, 0.1]}\n"),
            "sweep.yaml:4: unknown domain 'loguniorm' for parameter 'lr' (did you mean 'loguniform'?)");
  EXPECT_EQ(error_of(head + "  a: {uniform: [0, 2]}\n"), "sweep.yaml:4: duplicate key 'a'");
}

TEST(SweepSpecErrors, DomainBoundsOutsideWhatADoubleHoldsAreRefused) {
  const std::string head = "trainable: t\nparam_space:\n";
  // 2^63 - 1 once printed as its int64 cast, -9223372036854775808.
  EXPECT_EQ(error_of(head + "  n: {randint: [0, 9223372036854775807]}\n"),
            "sweep.yaml:3: parameter 'n': randint: arguments must be integers between -2^53 and 2^53 "
            "(9007199254740992), got [0,9223372036854775807]");
  EXPECT_EQ(error_of(head + "  n: {randint: [-9007199254740992, 9007199254740992]}\n"), "no error");
  // high - low overflows: every sample was exactly 1e308.
  EXPECT_EQ(error_of(head + "  x: {uniform: [-1.0e308, 1.0e308]}\n"),
            "sweep.yaml:3: parameter 'x': uniform: the range [-1e+308, 1e+308] is too wide (upper - lower overflows "
            "a double)");
  EXPECT_EQ(error_of(head + "  x: {uniform: [-1.0e307, 1.0e307]}\n"), "no error");
}

TEST(SweepSpecErrors, AStopKeyCloseToAnAttributeOrTheMetricIsATypo) {
  EXPECT_EQ(error_of(with("stop: {training_iteraton: 2}\n")),
            "sweep.yaml:3: unknown stop key 'training_iteraton' (did you mean 'training_iteration'?); other keys are "
            "thresholds on metrics the trainable reports");
  EXPECT_EQ(error_of(with("metric: accuracy\nmode: max\nstop:\n  acuracy: 0.9\n")),
            "sweep.yaml:6: unknown stop key 'acuracy' (did you mean 'accuracy'?); other keys are thresholds on metrics "
            "the trainable reports");
  EXPECT_EQ(error_of(with("stop: {time_total_s: 60, mean_accuracy: 0.9}\n")), "no error");
  EXPECT_EQ(error_of(with("metric: loss\nmode: min\nstop: {loss: 0.1}\n")), "no error");
}

TEST(SweepSpecErrors, AMappingNamedLikeAnotherToolsDomainIsAnError) {
  const std::string head = "trainable: t\nparam_space:\n  a: {uniform: [0, 1]}\n";
  EXPECT_EQ(error_of(head + "  w: {normal: [0, 1]}\n"),
            "sweep.yaml:4: unknown domain 'normal' for parameter 'w' (did you mean 'randn'?)");
  EXPECT_EQ(error_of(head + "  opt: {categorical: [sgd, adam]}\n"),
            "sweep.yaml:4: unknown domain 'categorical' for parameter 'opt' (did you mean 'choice'?)");
  // Nesting that merely holds a list stays a constant.
  SweepSpec spec = parse_sweep(head + "  model: {layers: [64, 32]}\n", "sweep.yaml");
  ASSERT_EQ(spec.param_space.constants().size(), 1u);
  EXPECT_EQ(spec.param_space.constants()[0].first, "model.layers");
}

TEST(SweepSpecErrors, PointsToEvaluateMustBeMappingsOfKnownParameters) {
  const std::string head = "trainable: t\nparam_space: {x0: {uniform: [0, 1]}, x1: {uniform: [0, 1]}, b: {d: 1}}\n";
  EXPECT_EQ(error_of(head + "points_to_evaluate: {x0: 1}\n"),
            "sweep.yaml:3: points_to_evaluate must be a list of mappings (parameter: value), got a mapping");
  EXPECT_EQ(error_of(head + "points_to_evaluate:\n  - {x0: 1}\n  - 5\n"),
            "sweep.yaml:5: points_to_evaluate must be a list of mappings (parameter: value), got '5'");
  EXPECT_EQ(error_of(head + "points_to_evaluate:\n  - {x0: 1}\n  - {x2: 1}\n"),
            "sweep.yaml:5: points_to_evaluate: unknown parameter 'x2' (did you mean 'x0'?)");
  EXPECT_EQ(error_of(head + "points_to_evaluate: [{b: {e: 1}}]\n"),
            "sweep.yaml:3: points_to_evaluate: unknown parameter 'b.e' (did you mean 'b.d'?)");
  EXPECT_EQ(error_of(head + "points_to_evaluate: [{b: {d: 2}, x1: 0.5}]\n"), "no error");
}

// Ray's TrialPlateauStopper and ExperimentPlateauStopper, as stop.plateau and
// stop.experiment_plateau: read with their defaults, checked at their line,
// kept through the store's JSON.
TEST(SweepSpecParse, PlateauStoppersAreReadCheckedAndRoundTrip) {
  const std::string head = std::string(kMinimal) + "metric: loss\nmode: min\n";
  SweepSpec spec = parse_sweep(head + "stop:\n  plateau: {std: 0.05, num_results: 3, metric_threshold: 0.5}\n"
                                      "  experiment_plateau: {top: 4, patience: 2}\n", "sweep.yaml");
  ASSERT_TRUE(spec.stop.plateau.has_value());
  EXPECT_EQ(spec.stop.plateau->metric, "");  // the sweep's
  EXPECT_DOUBLE_EQ(spec.stop.plateau->std, 0.05);
  EXPECT_EQ(spec.stop.plateau->num_results, 3);
  EXPECT_EQ(spec.stop.plateau->grace_period, 4);  // Ray's default
  EXPECT_EQ(spec.stop.plateau->metric_threshold, std::optional<double>(0.5));
  ASSERT_TRUE(spec.stop.experiment_plateau.has_value());
  EXPECT_EQ(spec.stop.experiment_plateau->top, 4);
  EXPECT_EQ(spec.stop.experiment_plateau->patience, 2);
  EXPECT_DOUBLE_EQ(spec.stop.experiment_plateau->std, 0.001);
  EXPECT_TRUE(spec.stop.metric_thresholds.empty());
  const SweepSpec back = SweepSpec::from_json(Json::parse(spec.to_json().dump()));
  EXPECT_EQ(back.to_json(), spec.to_json());
  EXPECT_EQ(back.stop.plateau->metric_threshold, std::optional<double>(0.5));
  EXPECT_FALSE(parse_sweep(head + "stop: {plateau: {}}\n", "sweep.yaml").stop.experiment_plateau.has_value());

  EXPECT_EQ(error_of(head + "stop: {plateau: {std: -1}}\n"),
            "sweep.yaml:5: stop.plateau.std must be a positive number, got '-1'");
  EXPECT_EQ(error_of(head + "stop:\n  plateau:\n    num_results: 1\n"),
            "sweep.yaml:7: stop.plateau.num_results must be an integer >= 2, got '1'");
  EXPECT_THAT(error_of(head + "stop: {plateau: {window: 3}}\n"),
              StartsWith("sweep.yaml:5: unknown key 'window' in stop.plateau"));
  EXPECT_EQ(error_of(head + "stop: {plateau: 3}\n"), "sweep.yaml:5: stop.plateau must be a mapping, got '3'");
  EXPECT_EQ(error_of(head + "stop: {platau: {std: 0.1}}\n"),
            "sweep.yaml:5: unknown stop key 'platau' (did you mean 'plateau'?) (a metric threshold is a number)");
  EXPECT_EQ(error_of(head + "stop: {experiment_plateau: {metric: acc}}\n"),
            "sweep.yaml:5: stop.experiment_plateau on 'acc' needs stop.experiment_plateau.mode (min or max)");
  EXPECT_EQ(error_of(head + "stop: {experiment_plateau: {metric: acc, mode: max, top: 1}}\n"),
            "sweep.yaml:5: stop.experiment_plateau.top must be an integer >= 2, got '1'");
  EXPECT_EQ(error_of(with("stop: {plateau: {}}\n")), "sweep.yaml:3: stop.plateau needs a metric (the sweep has none)");
}

TEST(SweepSpecErrors, DuplicateTopLevelKeysAreRejected) {
  EXPECT_EQ(error_of(with("num_samples: 2\nnum_samples: 3\n")), "sweep.yaml:4: duplicate key 'num_samples'");
}

TEST(SweepSpecJson, RoundTripsEverything) {
  SweepSpec spec = parse_sweep(kFullExample, "sweep.yaml");
  Json json = spec.to_json();
  SweepSpec back = SweepSpec::from_json(Json::parse(json.dump()));
  EXPECT_EQ(back.to_json(), json);
  EXPECT_EQ(back.search.seed, std::optional<uint64_t>(7));
  EXPECT_EQ(back.stop.metric_thresholds, spec.stop.metric_thresholds);
  EXPECT_EQ(back.points_to_evaluate, spec.points_to_evaluate);
  std::mt19937_64 r1(1), r2(1);
  EXPECT_EQ(back.param_space.resolve(1, r1), spec.param_space.resolve(1, r2));

  SweepSpec defaults = SweepSpec::from_json(SweepSpec().to_json());
  EXPECT_EQ(defaults.to_json(), SweepSpec().to_json());
  EXPECT_FALSE(defaults.stop.training_iteration.has_value());
  EXPECT_EQ(SweepSpec::from_json(Json::object()).to_json(), SweepSpec().to_json());
}

// A stored spec (a hand-edited or corrupt tune.db) with a float or an
// out-of-range number where an integer belongs is a one-line error, not an
// undefined conversion to a garbage count.
TEST(SweepSpecJson, NonIntegerCountsInAStoredSpecAreErrors) {
  const Json good = parse_sweep(kFullExample, "sweep.yaml").to_json();
  const std::vector<std::vector<std::string>> fields = {
      {"num_samples"},          {"max_concurrent_trials"}, {"resources", "workers"},
      {"resources", "cpus_per_worker"}, {"search", "seed"},       {"stop", "training_iteration"},
      {"checkpoint", "num_to_keep"},    {"failure", "max_failures"}, {"failure", "max_host_failures"}};
  for (const auto& path : fields) {
    const bool is_seed = path.back() == "seed";  // uint64
    const bool is_int64 = path.back() == "num_samples" || path.back() == "training_iteration";
    std::vector<Json> bad = {1e114, -3e40, 2.5, "3"};
    if (is_seed) bad.push_back(-1);
    if (!is_seed && !is_int64) bad.push_back(int64_t{1} << 40);
    if (!is_seed) bad.push_back(uint64_t{1} << 63);
    for (const Json& value : bad) {
      Json json = good;
      Json* node = &json;
      for (const std::string& key : path) node = &(*node)[key];
      *node = value;
      std::string error = "no error";
      try {
        SweepSpec::from_json(json);
      } catch (const ConfigError& e) {
        error = e.what();
      }
      // The key's whole path (search.seed is named by its own key).
      const std::string named = is_seed ? path.back() : join_names(path, ".");
      EXPECT_NE(error.find("invalid sweep spec JSON: \"" + named + "\" is not an integer in range"), std::string::npos)
          << path.back() << " = " << value.dump() << ": " << error;
    }
  }
  Json big_seed = good;
  big_seed["search"]["seed"] = uint64_t{1} << 63;  // every uint64 is a seed
  EXPECT_EQ(SweepSpec::from_json(big_seed).search.seed, std::optional<uint64_t>(uint64_t{1} << 63));
}

TEST(SweepSpecValidate, RepeatsTheSemanticChecksForSpecsBuiltInCpp) {
  auto error_of_spec = [](const std::function<void(SweepSpec&)>& edit) -> std::string {
    SweepSpec spec;
    spec.param_space.add("x", uniform(0, 1));
    edit(spec);
    try {
      spec.validate();
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of_spec([](SweepSpec&) {}), "no error");
  EXPECT_EQ(error_of_spec([](SweepSpec& s) { s.metric = "loss"; }), "metric 'loss' needs a mode (min or max)");
  EXPECT_EQ(error_of_spec([](SweepSpec& s) { s.mode = "min"; }), "mode 'min' needs a metric");
  EXPECT_EQ(error_of_spec([](SweepSpec& s) { s.metric = "a", s.mode = "up"; }), "mode must be 'min' or 'max', got 'up'");
  EXPECT_EQ(error_of_spec([](SweepSpec& s) { s.num_samples = 0; }), "num_samples must be a positive integer, got 0");
  EXPECT_THAT(error_of_spec([](SweepSpec& s) { s.resources.workers = 0; }), HasSubstr("resources.workers"));
  EXPECT_THAT(error_of_spec([](SweepSpec& s) { s.failure.max_failures = -2; }), HasSubstr("max_failures"));
  EXPECT_THAT(error_of_spec([](SweepSpec& s) { s.scheduler.type = "pbx"; }), HasSubstr("unknown scheduler 'pbx'"));
  EXPECT_THAT(error_of_spec([](SweepSpec& s) { s.search.algorithm = "tpx"; }), HasSubstr("unknown search algorithm 'tpx'"));
  EXPECT_EQ(error_of_spec([](SweepSpec& s) { s.search.algorithm = "tpe"; }),
            "search algorithm 'tpe' needs the experiment's metric and mode (min or max)");
  EXPECT_EQ(error_of_spec([](SweepSpec& s) {
              s.search.algorithm = "bayes", s.metric = "loss", s.mode = "min", s.search.params = {{"acquisition", "foo"}};
            }),
            "search.acquisition must be one of log-ei, ei, ucb, pi, got 'foo'");
  EXPECT_EQ(error_of_spec([](SweepSpec& s) { s.points_to_evaluate = {Json{{"y", 1}}}; }),
            "points_to_evaluate: unknown parameter 'y' (did you mean 'x'?)");
}

TEST(SweepSpecClosestMatch, SuggestsOnlyCloseCandidates) {
  std::vector<std::string> keys = {"num_samples", "metric", "mode", "trainable"};
  EXPECT_EQ(closest_match("num_sample", keys), "num_samples");
  EXPECT_EQ(closest_match("trianable", keys), "trainable");
  EXPECT_EQ(closest_match("mdoe", keys), "mode");
  EXPECT_EQ(closest_match("checkpointing", keys), "");
  EXPECT_EQ(closest_match("zz", keys), "");
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

const char* kBayes =
    "trainable: t\n"                                    // 1
    "metric: loss\n"                                    // 2
    "mode: min\n"                                       // 3
    "param_space: {x: {uniform: [0, 1]}}\n";            // 4

TEST(SweepSpecSearchOptions, OtherKeysBecomeParamsAndSurviveTheStore) {
  SweepSpec spec = parse_sweep(std::string(kBayes) +
                                   "search: {algorithm: bayes, seed: 3, n_initial_points: 4, acquisition: ucb, kappa: 1.5}\n",
                               "sweep.yaml");
  EXPECT_EQ(spec.search.algorithm, "bayes");
  EXPECT_EQ(spec.search.params, (Json{{"n_initial_points", 4}, {"acquisition", "ucb"}, {"kappa", 1.5}}));
  SearchOptions options = spec.search_options();
  EXPECT_EQ(options.metric, "loss");
  EXPECT_EQ(options.mode, "min");
  SweepSpec back = SweepSpec::from_json(Json::parse(spec.to_json().dump()));
  EXPECT_EQ(back.search.params, spec.search.params);
  EXPECT_EQ(back.to_json(), spec.to_json());
  SweepSpec tpe = parse_sweep(std::string(kBayes) + "search:\n  algorithm: tpe\n  multivariate: true\n  gamma: 0.2\n",
                              "sweep.yaml");
  EXPECT_EQ(tpe.search.params, (Json{{"multivariate", true}, {"gamma", 0.2}}));
}

TEST(SweepSpecSearchOptions, BadOptionsPointAtTheSearchBlock) {
  const std::string head = kBayes;
  EXPECT_EQ(error_of(head + "search:\n  algorithm: bayes\n  n_initial_point: 3\n"),
            "sweep.yaml:7: unknown key 'n_initial_point' in search (did you mean 'n_initial_points'?)");
  EXPECT_EQ(error_of(head + "search: {algorithm: bayes, n_initial_points: 0}\n"),
            "sweep.yaml:5: search.n_initial_points must be an integer in [1, 1000000], got 0");
  EXPECT_EQ(error_of(head + "search: {algorithm: bayes, parallel: liar}\n"),
            "sweep.yaml:5: search.parallel must be one of kriging_believer, cl_min, cl_mean, cl_max, got 'liar'");
  EXPECT_EQ(error_of(head + "search: {algorithm: tpe, multivariate: yes please}\n"),
            "sweep.yaml:5: search.multivariate must be true or false, got 'yes please'");
  EXPECT_EQ(error_of(head + "search: {algorithm: tpe, gamma: 2}\n"),
            "sweep.yaml:5: search.gamma must be a number in [1e-09, 1.0], got 2");
  EXPECT_EQ(error_of(head + "search: {algorithm: random, n_initial_points: 3}\n"),
            "sweep.yaml:5: unknown key 'n_initial_points' in search (algorithm 'random' takes only algorithm "
            "and seed)");
  // Model-based search needs a metric, and cannot take grid_search.
  EXPECT_EQ(error_of("trainable: t\nparam_space: {x: {uniform: [0, 1]}}\nsearch: {algorithm: tpe}\n"),
            "sweep.yaml:3: search: search algorithm 'tpe' needs the experiment's metric and mode (min or max)");
  EXPECT_EQ(error_of("trainable: t\nmetric: loss\nmode: min\nparam_space: {x: {grid_search: [1, 2]}}\n"
                     "search: {algorithm: bayes}\n"),
            "sweep.yaml:5: search: parameter 'x': grid_search is not supported by search algorithm 'bayes' (it picks "
            "every value itself); use choice([...]) instead");
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

TEST(SweepSpecSetup, DataAndPreprocessBlocksReachTheSpecAndSurviveTheStore) {
  SweepSpec spec = parse_sweep(
      "trainable: t\nparam_space: {}\ndata: {path: trips.csv, label: tip}\n"
      "preprocess:\n  - {standard_scaler: [fare]}\n  - {one_hot: [payment]}\n",
      "sweep.yaml");
  EXPECT_EQ(spec.data, (Json{{"path", "trips.csv"}, {"label", "tip"}}));
  EXPECT_EQ(spec.preprocess, (Json::array({{{"standard_scaler", {"fare"}}}, {{"one_hot", {"payment"}}}})));
  EXPECT_EQ(spec.setup(), (Json{{"data", spec.data}, {"preprocess", spec.preprocess}}));
  SweepSpec back = SweepSpec::from_json(Json::parse(spec.to_json().dump()));
  EXPECT_EQ(back.setup(), spec.setup());
  EXPECT_TRUE(SweepSpec().setup()["data"].is_null());
}

TEST(SweepSpecSetup, DataMustBeAMappingAndPreprocessAList) {
  const std::string head = "trainable: t\nparam_space: {}\n";
  EXPECT_EQ(error_of(head + "data: trips.csv\n"), "sweep.yaml:3: data must be a mapping (path, label, ...), got 'trips.csv'");
  EXPECT_EQ(error_of(head + "preprocess: {standard_scaler: [a]}\n"),
            "sweep.yaml:3: preprocess must be a list of preprocessors, got a mapping");
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

// Anchors, aliases and merge keys, and the inputs that used to crash or
// stall the parser (hostile but small files).
TEST(SweepSpecYaml, AnchorsAliasesAndMergeKeysWork) {
  SweepSpec spec = parse_sweep(
      "x-space: &space\n  lr: {loguniform: [1.0e-4, 1.0e-1]}\n  width: 64\n"
      "trainable: t\nmetric: loss\nmode: min\n"
      "param_space:\n  <<: *space\n  width: 128\n  depth: {randint: [1, 4]}\n",
      "sweep.yaml");
  std::vector<std::string> parameters;
  for (const auto& p : spec.param_space.parameters()) parameters.push_back(p.path);
  EXPECT_EQ(parameters, (std::vector<std::string>{"lr", "depth"}));
  ASSERT_EQ(spec.param_space.constants().size(), 1u);
  EXPECT_EQ(spec.param_space.constants()[0], (std::pair<std::string, Json>{"width", 128}));
}

TEST(SweepSpecYaml, RecursiveAliasesAreRefusedWithTheirLine) {
  EXPECT_EQ(error_of("trainable: t\nparam_space: &p\n  x0: *p\n"),
            "sweep.yaml:3: alias *p refers to a node that contains it (recursive)");
  EXPECT_EQ(error_of("trainable: t\nparam_space: &p\n  <<: *p\n"),
            "sweep.yaml:3: alias *p refers to a node that contains it (recursive)");
  EXPECT_EQ(error_of("trainable: t\nparam_space: {x0: 1}\npoints_to_evaluate: &q [{x0: *q}]\n"),
            "sweep.yaml:3: alias *q refers to a node that contains it (recursive)");
}

TEST(SweepSpecYaml, AliasExpansionIsBounded) {
  std::string text = "trainable: t\nparam_space: {}\nx-a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i <= 8; ++i) {
    text += "x-a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  EXPECT_EQ(error_of(text), "sweep.yaml:8: the document has more than 1000000 values once its aliases are expanded");
}

TEST(SweepSpecYaml, DeepNestingAndSecondDocumentsAndBadUtf8AreOneLineErrors) {
  EXPECT_EQ(error_of("trainable: t\nparam_space: {}\nx-deep: " + std::string(100, '[') + std::string(100, ']') + "\n"),
            "sweep.yaml:3: nesting deeper than 64 levels");
  EXPECT_EQ(error_of("trainable: t\nparam_space: {}\n---\ntrainable: u\n"),
            "sweep.yaml:3: a sweep file holds one YAML document; a second one starts here");
  EXPECT_EQ(error_of("trainable: t\nparam_space: {}\nname: \"caf\xe9\"\n"), "sweep.yaml:3: text is not valid UTF-8");
}

TEST(SweepSpecYaml, AnUnterminatedQuoteIsReportedAtItsLine) {
  // yaml-cpp let the string run to the end of the file: "missing required key
  // 'param_space'" or a bad name, never the quote's line.
  EXPECT_EQ(error_of("trainable: t\nparam_space: {}\nname: \"open\nmetric: loss\nmode: min\n"),
            "sweep.yaml:3: unterminated quoted string (no closing quote before the end of the file)");
  EXPECT_EQ(error_of("trainable: t\nname: 'it''s\nparam_space: {}\n"),
            "sweep.yaml:2: unterminated quoted string (no closing quote before the end of the file)");
  EXPECT_EQ(error_of("trainable: t\nname: \"a \\\" b\"\nparam_space: {x: 'it''s'}\n"), "no error");
}

TEST(SweepSpecYaml, ManyKeysParseInLinearTime) {
  // 40,000 constants: quadratic parsing took seconds here; linear is milliseconds.
  std::string text = "trainable: t\nparam_space:\n";
  for (int i = 0; i < 40000; ++i) text += "  k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  SweepSpec spec = parse_sweep(text, "sweep.yaml");
  EXPECT_EQ(spec.param_space.constants().size(), 40000u);
  EXPECT_EQ(spec.param_space.constants()[39999].first, "k39999");
}

// The store keeps configs as JSON, which has no NaN or infinity: such a
// value is refused at its line rather than coming back as null on resume.
TEST(SweepSpecYaml, NonFiniteValuesAreRefusedAtTheirLine) {
  EXPECT_EQ(error_of("trainable: t\nparam_space:\n  x: {choice: [1, .nan]}\n"),
            "sweep.yaml:3: parameter 'x': .nan and .inf cannot be values (JSON, which the store keeps, has neither)");
  EXPECT_EQ(error_of("trainable: t\nparam_space:\n  m:\n    c: -.inf\n"),
            "sweep.yaml:4: parameter 'm.c': .nan and .inf cannot be values (JSON, which the store keeps, has neither)");
  EXPECT_EQ(error_of("trainable: t\nparam_space:\n  g: {grid_search: [[1, .inf]]}\n"),
            "sweep.yaml:3: parameter 'g': .nan and .inf cannot be values (JSON, which the store keeps, has neither)");
}

// Issue 30, 7: a domain's mapping with another key was read as a nested
// constant, silently fixing the parameter.
TEST(SweepSpecErrors, ADomainMappingWithAnotherKeyIsAnErrorAtThatKey) {
  const std::string head = "trainable: t\nparam_space:\n  a: {uniform: [0, 1]}\n";
  EXPECT_EQ(error_of(head + "  x: {uniform: [0, 1], extra: 1}\n"),
            "sweep.yaml:4: parameter 'x': a domain is a mapping with one key (uniform: [...]), but it also has "
            "'extra' (a nested section cannot use a domain's name as a key)");
  EXPECT_EQ(error_of(head + "  x:\n    loguniform: [1, 2]\n    grid_search: [1]\n"),
            "sweep.yaml:6: parameter 'x': a domain is a mapping with one key (loguniform: [...]), but it also has "
            "'grid_search' (one parameter takes one domain)");
  EXPECT_EQ(error_of(head + "  m:\n    inner: {choice: [1, 2], width: 3}\n"),
            "sweep.yaml:5: parameter 'm.inner': a domain is a mapping with one key (choice: [...]), but it also has "
            "'width' (a nested section cannot use a domain's name as a key)");
}

// Issue 30, 7: a string or .nan for a numeric parameter ran a trial with it
// (NaN stored as null).
TEST(SweepSpecErrors, PointsToEvaluateHoldFiniteNumbersForNumericParameters) {
  const std::string head =
      "trainable: t\nparam_space: {x: {uniform: [0, 1]}, n: {randint: [0, 9]}, c: {choice: [a, b]}, m: {d: 1}}\n";
  EXPECT_EQ(error_of(head + "points_to_evaluate:\n  - {x: .nan}\n"),
            "sweep.yaml:4: points_to_evaluate: x: .nan and .inf cannot be values (JSON, which the store keeps, has "
            "neither)");
  EXPECT_EQ(error_of(head + "points_to_evaluate:\n  - {x: 0.5}\n  - {x: abc}\n"),
            "sweep.yaml:5: points_to_evaluate: x must be a number (its domain is uniform), got \"abc\"");
  EXPECT_EQ(error_of(head + "points_to_evaluate:\n  - {n: 2.5}\n"),
            "sweep.yaml:4: points_to_evaluate: n must be an integer (its domain is randint), got 2.5");
  EXPECT_EQ(error_of(head + "points_to_evaluate:\n  - {m: {d: -.inf}}\n"),
            "sweep.yaml:4: points_to_evaluate: m.d: .nan and .inf cannot be values (JSON, which the store keeps, has "
            "neither)");
  EXPECT_EQ(error_of(head + "points_to_evaluate: [{x: 1, n: 3, c: a}, {n: 4.0, c: z}]\n"), "no error")
      << "a whole float for an integer domain, a value a choice does not list: as Ray Tune takes them";
}

// Issue 30, 7: a name with a newline gave a 2-line error, one with a NUL a
// cut one.
TEST(SweepSpecErrors, AControlCharacterInTheNameIsShownEscapedOnOneLine) {
  EXPECT_EQ(error_of("name: \"a\\nb\"\n" + std::string(kMinimal)),
            "sweep.yaml:1: experiment name 'a\\nb' has a control character (use letters, digits, '_', '-', '.')");
  EXPECT_EQ(error_of("name: \"a\\0b\"\n" + std::string(kMinimal)),
            "sweep.yaml:1: experiment name 'a\\u0000b' has a control character (use letters, digits, '_', '-', '.')");
  // Any message quoting a value with a newline (error_of checks one line).
  EXPECT_THAT(error_of(std::string(kMinimal) + "scheduler: {type: \"as\\nha\"}\n"), HasSubstr("as\\nha"));
}

}  // namespace
}  // namespace tune
