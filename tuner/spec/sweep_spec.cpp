// SweepSpec: validation (once, with key paths), JSON round trip, and the
// public entry points that read sweep files.
#include "tuner/spec/sweep_spec.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "base/error.h"
#include "base/json.h"
#include "base/names.h"
#include "schedulers/scheduler.h"
#include "tuner/spec/command_spec.h"
#include "tuner/spec/sweep_check.h"
#include "tuner/spec/sweep_fields.h"
#include "tuner/spec/sweep_reader.h"

namespace tune {
namespace internal {
namespace {

bool is_min_max(const std::string& s) { return s == "min" || s == "max"; }

void require(bool ok, const std::string& key_path, const std::string& message) {
  if (!ok) throw ConfigError::at(key_path, message);
}

bool starts_path(const std::string& prefix, const std::string& path) {
  return path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 && path[prefix.size()] == '.';
}

// What a stop key may name besides the metrics a trainable reports: the
// attributes the driver adds to every result, and the sweep-wide budget.
const std::vector<std::string>& stop_attributes() {
  static const std::vector<std::string> names = {"training_iteration", "time_total_s", "time_this_iter_s",
                                                 "time_budget_s", "timestamp", "plateau", "experiment_plateau"};
  return names;
}

// A stop key other than training_iteration and time_budget_s is a metric
// threshold; one that is a near miss of an attribute or of the sweep's
// metric (`training_iteraton`) is a typo that would never stop a trial.
void check_stop_key(const SweepSpec& spec, const std::string& key) {
  if (key == spec.metric) return;
  for (const auto& objective : spec.objectives)
    if (key == objective.metric) return;
  const auto& attributes = stop_attributes();
  if (std::find(attributes.begin(), attributes.end(), key) != attributes.end()) return;
  std::vector<std::string> known = attributes;
  if (!spec.metric.empty()) known.push_back(spec.metric);
  for (const auto& objective : spec.objectives) known.push_back(objective.metric);
  const std::string hint = did_you_mean(key, known);
  if (!hint.empty())
    throw ConfigError::at_key("stop." + key, "unknown stop key '" + key + "'" + hint +
                                                 "; other keys are thresholds on metrics the trainable reports");
}

// The plateau stoppers: a metric (the sweep's by default) and, where values
// are ranked, a mode (the sweep's when it is the sweep's metric).
void check_plateaus(const SweepSpec& spec) {
  if (const auto& p = spec.stop.plateau) {
    const std::string metric = p->metric.empty() ? spec.metric : p->metric;
    require(!metric.empty(), "stop.plateau", "stop.plateau needs a metric (the sweep has none)");
    require(p->mode.empty() || is_min_max(p->mode), "stop.plateau.mode", "stop.plateau.mode must be 'min' or 'max'");
    require(std::isfinite(p->std) && p->std > 0, "stop.plateau.std", "stop.plateau.std must be a positive number");
    require(p->num_results >= 2, "stop.plateau.num_results", "stop.plateau.num_results must be an integer >= 2");
    require(p->grace_period >= 0, "stop.plateau.grace_period", "stop.plateau.grace_period must be a non-negative integer");
    if (p->metric_threshold) {
      require(std::isfinite(*p->metric_threshold), "stop.plateau.metric_threshold",
              "stop.plateau.metric_threshold must be a number");
      require(!p->mode.empty() || metric == spec.metric, "stop.plateau.mode",
              "stop.plateau.metric_threshold on '" + metric + "' needs stop.plateau.mode (min or max)");
    }
  }
  if (const auto& p = spec.stop.experiment_plateau) {
    const std::string metric = p->metric.empty() ? spec.metric : p->metric;
    require(!metric.empty(), "stop.experiment_plateau", "stop.experiment_plateau needs a metric (the sweep has none)");
    require(p->mode.empty() || is_min_max(p->mode), "stop.experiment_plateau.mode",
            "stop.experiment_plateau.mode must be 'min' or 'max'");
    require(!p->mode.empty() || metric == spec.metric, "stop.experiment_plateau.mode",
            "stop.experiment_plateau on '" + metric + "' needs stop.experiment_plateau.mode (min or max)");
    require(std::isfinite(p->std) && p->std >= 0, "stop.experiment_plateau.std",
            "stop.experiment_plateau.std must be a number >= 0");
    require(p->top >= 2, "stop.experiment_plateau.top", "stop.experiment_plateau.top must be an integer >= 2");
    require(p->patience >= 0, "stop.experiment_plateau.patience",
            "stop.experiment_plateau.patience must be a non-negative integer");
  }
}

// Several objectives (make_searcher checks the list itself): a scheduler
// that ranks trials by one metric cannot take them.
void check_objectives(const SweepSpec& spec) {
  if (spec.objectives.empty()) return;
  require(spec.scheduler.type == "fifo" || spec.scheduler.type == "custom", "scheduler.type",
          spec.scheduler.type + " ranks trials by one metric; a sweep with several metrics runs with scheduler fifo");
}

// The rules on single fields: cheap, so they come first.
void check_fields(const SweepSpec& spec) {
  check_objectives(spec);
  require(spec.mode.empty() || is_min_max(spec.mode), "mode", "mode must be 'min' or 'max', got '" + spec.mode + "'");
  require(spec.metric.empty() || !spec.mode.empty(), "metric", "metric '" + spec.metric + "' needs a mode (min or max)");
  require(!spec.metric.empty() || spec.mode.empty(), "mode", "mode '" + spec.mode + "' needs a metric");
  require(spec.num_samples >= 1, "num_samples",
          "num_samples must be a positive integer, got " + std::to_string(spec.num_samples));
  require(spec.max_concurrent_trials >= 0, "max_concurrent_trials",
          "max_concurrent_trials must be a non-negative integer, got " + std::to_string(spec.max_concurrent_trials));
  require(spec.resources.workers >= 1, "resources.workers",
          "resources.workers must be a positive integer, got " + std::to_string(spec.resources.workers));
  require(spec.resources.cpus_per_worker >= 1, "resources.cpus_per_worker",
          "resources.cpus_per_worker must be a positive integer, got " + std::to_string(spec.resources.cpus_per_worker));
  require(spec.resources.gpus_per_worker >= 0, "resources.gpus_per_worker",
          "resources.gpus_per_worker must be a non-negative integer, got " + std::to_string(spec.resources.gpus_per_worker));
  require(spec.resources.placement == "pack" || spec.resources.placement == "spread", "resources.placement",
          "resources.placement must be pack or spread, got '" + spec.resources.placement + "'");
  require(!spec.failure.result_timeout_s || (*spec.failure.result_timeout_s > 0 && std::isfinite(*spec.failure.result_timeout_s)),
          "failure.result_timeout_s", "failure.result_timeout_s must be a positive number");
  require(spec.failure.host_timeout_s >= 2 && spec.failure.host_timeout_s <= 3600, "failure.host_timeout_s",
          "failure.host_timeout_s must be between 2 and 3600 seconds");
  require(spec.failure.start_timeout_s >= 2 && spec.failure.start_timeout_s <= 86400, "failure.start_timeout_s",
          "failure.start_timeout_s must be between 2 and 86400 seconds");
  require(spec.failure.host_check_interval_s >= 1 && spec.failure.host_check_interval_s <= 86400,
          "failure.host_check_interval_s", "failure.host_check_interval_s must be between 1 and 86400 seconds");
  require(spec.failure.max_host_failures >= 1, "failure.max_host_failures",
          "failure.max_host_failures must be a positive integer, got " + std::to_string(spec.failure.max_host_failures));
  require(!spec.stop.training_iteration || *spec.stop.training_iteration >= 1, "stop.training_iteration",
          "stop.training_iteration must be a positive integer");
  require(!spec.stop.time_budget_s || (*spec.stop.time_budget_s > 0 && std::isfinite(*spec.stop.time_budget_s)),
          "stop.time_budget_s", "stop.time_budget_s must be a positive number");
  for (const auto& [key, value] : spec.stop.metric_thresholds) {
    require(std::isfinite(value), "stop." + key, "stop." + key + " must be a number");
    check_stop_key(spec, key);
  }
  check_plateaus(spec);
  require(spec.checkpoint.num_to_keep >= 0, "checkpoint.num_to_keep",
          "checkpoint.num_to_keep must be a non-negative integer, got " + std::to_string(spec.checkpoint.num_to_keep));
  require(spec.checkpoint.score_order.empty() || is_min_max(spec.checkpoint.score_order), "checkpoint.score_order",
          "checkpoint.score_order must be 'min' or 'max', got '" + spec.checkpoint.score_order + "'");
  require(spec.failure.max_failures >= -1, "failure.max_failures",
          "failure.max_failures must be an integer >= -1, got " + std::to_string(spec.failure.max_failures));
  require(spec.data.is_null() || spec.data.is_object(), "data", "data must be a mapping");
  require(spec.preprocess.is_null() || spec.preprocess.is_array(), "preprocess", "preprocess must be a list");
}

// NaN or an infinity in a value: JSON (which the store keeps) has neither.
bool has_non_finite(const Json& value) {
  if (value.is_number_float()) return !std::isfinite(value.get<double>());
  return value.is_structured() && std::any_of(value.begin(), value.end(), has_non_finite);
}

// A point's value for a numeric parameter is a finite number (an integer for
// an integer domain), as Optuna's enqueue_trial asks: a string or .nan would
// run a trial with a config the space cannot hold (NaN is stored as null).
void check_point_values(const SearchSpace& space, const Json& point, const std::string& at) {
  const Json flat = flatten(point);
  for (const auto& item : flat.items()) {
    require(!has_non_finite(item.value()), at + "." + item.key(),
            "points_to_evaluate: " + item.key() + ": .nan and .inf cannot be values (JSON, which the store keeps, has neither)");
  }
  for (const auto& p : space.parameters()) {
    const Json* value = find_path(point, p.path);
    if (!value) continue;
    const Domain& d = p.domain;
    const bool numeric = d.kind == Domain::Kind::kFloat || d.kind == Domain::Kind::kInt || d.kind == Domain::Kind::kNormal;
    if (!numeric) continue;
    const bool integral = value->is_number_integer() ||
                          (value->is_number_float() && std::floor(value->get<double>()) == value->get<double>());
    const bool ok = value->is_number() && (d.kind != Domain::Kind::kInt || integral);
    require(ok, at + "." + p.path,
            "points_to_evaluate: " + p.path + " must be " + (d.kind == Domain::Kind::kInt ? "an integer" : "a number") +
                " (its domain is " + d.name + "), got " + one_line(value->dump(), 80));
  }
}

// Domains and points, which a sweep file has checked already but a spec
// built in C++ has not.
void check_space(const SweepSpec& spec) {
  for (const auto& p : spec.param_space.parameters()) {
    try {
      p.domain.validate();
    } catch (const ConfigError& e) {
      throw ConfigError::at_key("param_space." + p.path, "parameter '" + p.path + "': " + e.what());
    }
  }
  std::vector<std::string> paths;
  for (const auto& p : spec.param_space.parameters()) paths.push_back(p.path);
  for (const auto& c : spec.param_space.constants()) paths.push_back(c.first);
  for (size_t i = 0; i < spec.points_to_evaluate.size(); ++i) {
    const Json& point = spec.points_to_evaluate[i];
    const std::string at = "points_to_evaluate[" + std::to_string(i) + "]";
    require(point.is_object(), at, "points_to_evaluate entries must be mappings, got " + point.dump());
    const Json flat = flatten(point);  // named: items() must not outlive it
    for (const auto& item : flat.items()) {
      bool known = false;
      for (const auto& p : paths) known = known || p == item.key() || starts_path(p, item.key());
      require(known, at, "points_to_evaluate: unknown parameter '" + item.key() + "'" +
                             did_you_mean_or_list(item.key(), paths, "parameters"));
    }
    check_point_values(spec.param_space, point, at);
    // A point can still clash with the space (a value under a constant).
    std::mt19937_64 unused(0);
    try {
      (void)spec.param_space.resolve(0, unused, point);
    } catch (const Error& e) {
      throw ConfigError::at(at, std::string("points_to_evaluate: ") + e.what());
    }
  }
}

// A command trainable: its argv and env placeholders name config paths
// (a parameter, a constant, or a section holding them).
void check_command(const SweepSpec& spec) {
  CommandSpec command;
  try {
    command = CommandSpec::from_json(spec.command);
  } catch (const Json::exception& e) {
    throw ConfigError::at("trainable", std::string("trainable.command: ") + e.what());
  }
  require(spec.trainable == "command", "trainable", "a sweep with a command has trainable 'command', got '" + spec.trainable + "'");
  require(!command.argv.empty() && !command.argv[0].empty(), "trainable.command",
          "trainable.command must be a non-empty list [program, arguments...]");
  require(std::isfinite(command.stop_grace_s) && command.stop_grace_s >= 0, "trainable.stop_grace_s",
          "trainable.stop_grace_s must be a number of seconds >= 0");
  require(std::isfinite(command.log_max_mb) && command.log_max_mb >= 0.01 && command.log_max_mb <= 1e6,
          "trainable.log_max_mb", "trainable.log_max_mb must be a number of MB between 0.01 and 1000000");
  std::vector<std::string> paths;
  for (const auto& p : spec.param_space.parameters()) paths.push_back(p.path);
  for (const auto& c : spec.param_space.constants()) paths.push_back(c.first);
  auto check = [&](const std::string& text, const std::string& at) {
    std::vector<std::string> used;
    try {
      used = placeholder_paths(text);
    } catch (const Error& e) {
      throw ConfigError::at(at, at + ": " + e.what());
    }
    for (const auto& path : used) {
      bool known = false;
      for (const auto& p : paths) known = known || p == path || starts_path(path, p);
      require(known, at, at + ": placeholder {" + path + "} names no key of param_space" +
                             did_you_mean_or_list(path, paths, "keys"));
    }
  };
  for (size_t i = 0; i < command.argv.size(); ++i) check(command.argv[i], "trainable.command[" + std::to_string(i) + "]");
  for (const auto& [name, value] : command.env) check(value, "trainable.env." + name);
}

// Errors a component raised without a key path belong to its block.
template <typename Build>
auto within(const std::string& block, Build build) -> decltype(build()) {
  try {
    return build();
  } catch (const ConfigError& e) {
    if (!e.key_path().empty()) throw;
    throw ConfigError::at(block, e.what());
  }
}

}  // namespace

CheckedSweep check_sweep(const SweepSpec& spec) {
  check_fields(spec);
  check_space(spec);
  if (!spec.command.is_null()) check_command(spec);
  CheckedSweep checked;
  checked.searcher = within("search", [&] {
    return make_searcher(spec.search_options(), spec.param_space, spec.num_samples, spec.points_to_evaluate);
  });
  // "custom": a Scheduler object handed to the C++ Tuner, checked there.
  if (spec.scheduler.type != "custom") {
    checked.scheduler = within("scheduler", [&] {
      return make_scheduler(spec.scheduler.type, spec.scheduler.params, spec.metric, spec.mode);
    });
  }
  return checked;
}

}  // namespace internal

void SweepSpec::validate() const { (void)internal::check_sweep(*this); }

SearchOptions SweepSpec::search_options() const {
  SearchOptions options = search;
  options.metric = metric;
  options.mode = mode;
  options.objectives = objectives;
  return options;
}

namespace {

Json plateau_to_json(const std::optional<StopCriteria::Plateau>& p) {
  if (!p) return nullptr;
  return {{"metric", p->metric}, {"mode", p->mode}, {"std", p->std}, {"num_results", p->num_results},
          {"grace_period", p->grace_period},
          {"metric_threshold", p->metric_threshold ? Json(*p->metric_threshold) : Json()}};
}

std::optional<StopCriteria::Plateau> plateau_from_json(const Json& json) {
  if (!json.is_object()) return std::nullopt;
  StopCriteria::Plateau p;
  p.metric = json.value("metric", p.metric);
  p.mode = json.value("mode", p.mode);
  p.std = json.value("std", p.std);
  p.num_results = json.value("num_results", p.num_results);
  p.grace_period = json.value("grace_period", p.grace_period);
  if (json.contains("metric_threshold") && json["metric_threshold"].is_number())
    p.metric_threshold = json["metric_threshold"].get<double>();
  return p;
}

Json experiment_plateau_to_json(const std::optional<StopCriteria::ExperimentPlateau>& p) {
  if (!p) return nullptr;
  return {{"metric", p->metric}, {"mode", p->mode}, {"std", p->std}, {"top", p->top}, {"patience", p->patience}};
}

std::optional<StopCriteria::ExperimentPlateau> experiment_plateau_from_json(const Json& json) {
  if (!json.is_object()) return std::nullopt;
  StopCriteria::ExperimentPlateau p;
  p.metric = json.value("metric", p.metric);
  p.mode = json.value("mode", p.mode);
  p.std = json.value("std", p.std);
  p.top = json.value("top", p.top);
  p.patience = json.value("patience", p.patience);
  return p;
}

}  // namespace

Json SweepSpec::to_json() const {
  Json json = {{"name", name},
               {"trainable", trainable},
               {"metric", metric},
               {"mode", mode},
               {"objectives", objectives_to_json(objectives)},
               {"search",
                {{"algorithm", search.algorithm},
                 {"seed", search.seed ? Json(*search.seed) : Json()},
                 {"params", search.params}}},
               {"scheduler", {{"type", scheduler.type}, {"params", scheduler.params}}},
               {"stop", {{"metric_thresholds", stop.metric_thresholds},
                         {"plateau", plateau_to_json(stop.plateau)},
                         {"experiment_plateau", experiment_plateau_to_json(stop.experiment_plateau)}}},
               {"param_space", param_space.to_json()},
               {"points_to_evaluate", points_to_evaluate},
               {"data", data},
               {"preprocess", preprocess},
               {"command", command}};
  internal::fields_to_json(*this, json);  // counts, resources, stop criteria, checkpoint, failure
  return json;
}

Json objectives_to_json(const std::vector<Objective>& objectives) {
  Json list = Json::array();
  for (const auto& objective : objectives) list.push_back({{"metric", objective.metric}, {"mode", objective.mode}});
  return list;
}

std::vector<Objective> objectives_from_json(const Json& list) {
  std::vector<Objective> objectives;
  for (const auto& item : list) objectives.push_back({item.at("metric").get<std::string>(), item.at("mode").get<std::string>()});
  return objectives;
}

Json SweepSpec::setup() const {
  Json setup = {{"data", data}, {"preprocess", preprocess}};
  if (!command.is_null()) setup["command"] = command;
  return setup;
}

namespace {

// An integer of a stored spec. A hand-edited or corrupt store may hold a float
// or a number out of T's range there; converting it would be undefined
// behaviour, so it is an error like any other malformed spec.
template <class T>
T integer_value(const Json& json, const char* key, T fallback) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return fallback;
  try {
    return json_integer<T>(*it);
  } catch (const Error&) {
    throw ConfigError(std::string("invalid sweep spec JSON: \"") + key + "\" is not an integer in range: " + it->dump());
  }
}

}  // namespace

// Missing keys keep their defaults, so JSON written by an older tune still loads.
SweepSpec SweepSpec::from_json(const Json& json) {
  SweepSpec s;
  try {
    const Json none = Json::object();
    auto section = [&](const char* key) -> const Json& { return json.contains(key) ? json.at(key) : none; };
    s.name = json.value("name", s.name);
    s.trainable = json.value("trainable", s.trainable);
    s.metric = json.value("metric", s.metric);
    s.mode = json.value("mode", s.mode);
    s.objectives = objectives_from_json(json.value("objectives", Json::array()));
    internal::fields_from_json(json, s);  // counts, resources, stop criteria, checkpoint, failure
    const Json& search = section("search");
    s.search.algorithm = search.value("algorithm", s.search.algorithm);
    if (search.contains("seed") && !search["seed"].is_null()) s.search.seed = integer_value<uint64_t>(search, "seed", 0);
    s.search.params = search.value("params", s.search.params);
    const Json& scheduler = section("scheduler");
    s.scheduler.type = scheduler.value("type", s.scheduler.type);
    s.scheduler.params = scheduler.value("params", s.scheduler.params);
    s.stop.metric_thresholds = section("stop").value("metric_thresholds", s.stop.metric_thresholds);
    s.stop.plateau = plateau_from_json(section("stop").value("plateau", Json()));
    s.stop.experiment_plateau = experiment_plateau_from_json(section("stop").value("experiment_plateau", Json()));
    if (json.contains("param_space")) s.param_space = SearchSpace::from_json(json["param_space"]);
    s.points_to_evaluate = json.value("points_to_evaluate", s.points_to_evaluate);
    if (json.contains("data")) s.data = json["data"];
    if (json.contains("preprocess")) s.preprocess = json["preprocess"];
    if (json.contains("command")) s.command = json["command"];
  } catch (const Json::exception& e) {
    throw ConfigError(std::string("invalid sweep spec JSON: ") + e.what());
  }
  return s;
}

SweepSpec parse_sweep(const std::string& yaml_text, const std::string& file) {
  internal::LoadedSweep loaded = internal::read_sweep(yaml_text, file);
  try {
    loaded.spec.validate();
  } catch (const ConfigError& e) {
    throw loaded.source->locate(e);
  }
  return std::move(loaded.spec);
}

SweepSpec load_sweep_file(const std::string& path) {
  internal::LoadedSweep loaded = internal::read_sweep_file(path);
  try {
    loaded.spec.validate();
  } catch (const ConfigError& e) {
    throw loaded.source->locate(e);
  }
  return std::move(loaded.spec);
}

}  // namespace tune
