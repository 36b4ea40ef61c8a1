#include "tuner/spec/sweep_reader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "base/json.h"
#include "base/names.h"
#include "base/options.h"
#include "search/domain.h"
#include "search/searcher.h"
#include "tuner/spec/command_spec.h"
#include "tuner/spec/sweep_fields.h"

namespace tune::internal {
namespace {

const std::vector<std::string> kTopKeys = {
    "name",       "trainable", "metric",     "mode",      "num_samples", "max_concurrent_trials",
    "resources",  "search",    "scheduler",  "stop",      "param_space", "points_to_evaluate",
    "checkpoint", "failure",   "data",       "preprocess"};
const std::vector<std::string> kResourceKeys = sweep_field_keys("resources");
const std::vector<std::string> kCheckpointKeys = sweep_field_keys("checkpoint");
constexpr int64_t kMaxCount = 1'000'000'000;  // counts of results: bounded, whatever a file says
const std::vector<std::string> kFailureKeys = sweep_field_keys("failure");

// One key of the field table (tuner/spec/sweep_fields.h) from `o`, checked
// against its range; absent, the member keeps its value (the struct's default).
void read_field(const OptionReader& o, const SweepField& f, SweepSpec& spec) {
  const auto low = static_cast<int64_t>(f.min), high = static_cast<int64_t>(f.max);
  std::visit(
      [&](auto* member) {
        using T = std::decay_t<decltype(*member)>;
        if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) {
          *member = static_cast<T>(o.integer_in(f.key, *member, low, high, f.says));
        } else if constexpr (std::is_same_v<T, bool>) {
          *member = o.boolean(f.key, *member);
        } else if constexpr (std::is_same_v<T, double>) {
          *member = f.exclusive_min ? o.number(f.key, *member, Bound::above(f.min)) : o.number_in(f.key, *member, f.min, f.max);
        } else if constexpr (std::is_same_v<T, std::string>) {
          *member = f.choices.empty() ? o.text(f.key, *member) : o.string(f.key, *member, f.choices);
        } else if constexpr (std::is_same_v<T, std::optional<double>>) {
          if (o.has(f.key))
            *member = f.exclusive_min ? o.number(f.key, 0, Bound::above(f.min)) : o.number_in(f.key, 0, f.min, f.max);
        } else {
          if (o.has(f.key)) *member = o.integer_in(f.key, 0, low, high, f.says);
        }
      },
      f.member(spec));
}

// Every key of the table's `section` that `o` holds.
void read_fields(const OptionReader& o, const std::string& section, SweepSpec& spec) {
  for (const SweepField& f : sweep_fields())
    if (f.section == section) read_field(o, f, spec);
}

const SweepField* find_field(const std::string& section, const std::string& key) {
  for (const SweepField& f : sweep_fields())
    if (f.section == section && f.key == key) return &f;
  return nullptr;
}

std::string join_path(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

bool is_domain_name(const std::string& key) {
  const auto& names = domain_names();
  return std::find(names.begin(), names.end(), key) != names.end();
}

// Names other tools give distributions (Ray, Optuna, Hyperopt, W&B, NNI),
// each with tune's domain: a single-key mapping `{normal: [0, 1]}` is a
// mistaken domain, not a nested constant.
const std::vector<std::pair<std::string, std::string>>& foreign_domains() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"normal", "randn"},           {"gaussian", "randn"},         {"qnormal", "qrandn"},
      {"lognormal", "randn"},        {"qlognormal", "qrandn"},      {"log_normal", "randn"},
      {"log_uniform", "loguniform"}, {"reciprocal", "loguniform"},  {"loguniform_int", "lograndint"},
      {"int_uniform", "randint"},    {"uniform_int", "randint"},    {"randrange", "randint"},
      {"int", "randint"},            {"integer", "randint"},        {"float", "uniform"},
      {"categorical", "choice"},     {"discrete", "choice"},        {"choices", "choice"},
      {"sample_from", "choice"},     {"q_uniform", "quniform"},     {"q_loguniform", "qloguniform"},
      {"q_log_uniform", "qloguniform"}};
  return names;
}

// " (did you mean 'X'?)" when `kind` looks like a domain tune does not have:
// close to one of its names, or another tool's name for one.
std::string unknown_domain_hint(const std::string& kind) {
  std::string hint = did_you_mean(kind, domain_names());
  if (!hint.empty()) return hint;
  for (const auto& [foreign, ours] : foreign_domains())
    if (kind == foreign) return " (did you mean '" + ours + "'?)";
  return "";
}

bool is_min_max(const std::string& s) { return s == "min" || s == "max"; }

OptionStyle written_style(const std::string& section) {
  OptionStyle style;
  style.label = section.empty() ? "" : section + ".";
  style.values_as_written = true;
  return style;
}

// A mapping section as a reader: "resources must be a mapping, got a list";
// unknown keys (when `valid` is given) get a did-you-mean at their line.
OptionReader section(const OrderedJson& value, const std::string& name, const std::vector<std::string>* valid) {
  if (!value.is_null() && !value.is_object())
    throw ConfigError::at(name, name + " must be a mapping, got " + describe_kind(value));
  OptionReader reader(value.is_null() ? Json::object() : to_json(value), name, written_style(name));
  if (valid) {
    if (auto key = reader.unknown_key(*valid))
      throw ConfigError::at_key(name + "." + *key, "unknown key '" + *key + "' in " + name +
                                                       did_you_mean_or_list(*key, *valid, "valid keys"));
  }
  return reader;
}

// NaN or an infinity anywhere in a value: the store keeps JSON, which has
// neither (it would come back as null, and `tune resume` would see another
// config).
bool has_non_finite(const Json& value) {
  if (value.is_number_float()) return !std::isfinite(value.get<double>());
  return value.is_structured() && std::any_of(value.begin(), value.end(), has_non_finite);
}

void refuse_non_finite(const Json& value, const std::string& path) {
  if (has_non_finite(value))
    throw ConfigError("parameter '" + path + "': .nan and .inf cannot be values (JSON, which the store keeps, has neither)");
}

// A mapping with a domain's key and any other key ({uniform: [0, 1], extra:
// 1}) is a mistaken domain: read as a nested constant it would silently fix
// the parameter.
void refuse_mixed_domain(const OrderedJson& value, const std::string& path, const std::string& at) {
  if (!value.is_object() || value.size() < 2) return;
  std::string domain, other;
  for (const auto& [key, item] : value.items()) {
    (void)item;
    if (is_domain_name(key) && domain.empty()) {
      domain = key;
    } else if (other.empty()) {
      other = key;
    }
  }
  if (domain.empty()) return;
  const bool two = is_domain_name(other);
  throw ConfigError::at_key(at + "." + other, "parameter '" + path + "': a domain is a mapping with one key (" + domain +
                                                  ": [...]), but it also has '" + other + "'" +
                                                  (two ? " (one parameter takes one domain)" : " (a nested section cannot use a domain's name as a key)"));
}

// Walks a param_space mapping in file order; every error names the
// parameter's key path.
void read_space(SearchSpace& space, const OrderedJson& node, const std::string& prefix, const std::string& doc_path) {
  for (const auto& [name, value] : node.items()) {
    const std::string path = join_path(prefix, name);
    const std::string at = join_path(doc_path, name);
    if (name.empty()) throw ConfigError::at_key(at, "parameter names must be non-empty strings");
    try {
      refuse_mixed_domain(value, path, at);
      if (value.is_object() && value.size() == 1) {
        const std::string kind = value.begin().key();
        const OrderedJson& args = value.begin().value();
        if (is_domain_name(kind)) {
          Json json_args = to_json(args);
          if (json_args.is_null()) json_args = Json::array();
          refuse_non_finite(json_args, path);
          Domain domain;
          try {
            domain = make_domain(kind, json_args);
          } catch (const ConfigError& e) {
            throw ConfigError::at_key(at, "parameter '" + path + "': " + e.what());
          }
          space.add(path, std::move(domain));
          continue;
        }
        const std::string hint = unknown_domain_hint(kind);
        if (!hint.empty() && args.is_array())
          throw ConfigError::at_key(at + "." + kind, "unknown domain '" + kind + "' for parameter '" + path + "'" + hint);
      }
      if (value.is_object() && !value.empty()) {
        read_space(space, value, path, at);
      } else {
        Json constant = to_json(value);
        refuse_non_finite(constant, path);
        space.constant(path, std::move(constant));
      }
    } catch (const ConfigError& e) {
      // add()/constant() know no position: the parameter's key is it.
      if (!e.key_path().empty()) throw;
      throw ConfigError::at_key(at, e.what());
    }
  }
}

SearchSpace read_param_space(const OrderedJson& node, const std::string& doc_path) {
  if (!node.is_object())
    throw ConfigError::at(doc_path, "param_space must be a mapping of parameter names, got " + describe_kind(node));
  SearchSpace space;
  read_space(space, node, "", doc_path);
  return space;
}

class Reader {
 public:
  Reader(const YamlDocument& doc, std::string base_dir) : doc_(doc), base_dir_(std::move(base_dir)) {}

  SweepSpec read() {
    const OrderedJson& root = doc_.root;
    SweepSpec spec;
    for (const auto& [key, value] : root.items()) {
      if (key.rfind("x-", 0) == 0) continue;  // a place for YAML anchors (`x-defaults: &d ...`)
      if (std::find(kTopKeys.begin(), kTopKeys.end(), key) == kTopKeys.end())
        throw ConfigError::at_key(key, "unknown key '" + key + "'" + did_you_mean_or_list(key, kTopKeys, "valid keys"));
      read_key(spec, key, value);
    }
    if (!seen_.count("trainable")) throw ConfigError::at_key("", "missing required key 'trainable'");
    if (!seen_.count("param_space")) throw ConfigError::at_key("", "missing required key 'param_space'");
    if (seen_.count("metric") || seen_.count("mode")) read_objectives(root, spec);
    if (!spec.metric.empty() && spec.mode.empty())
      throw ConfigError::at("metric", "metric '" + spec.metric + "' needs a mode (min or max)");
    if (spec.metric.empty() && !spec.mode.empty())
      throw ConfigError::at("mode", "mode '" + spec.mode + "' needs a metric");
    if (seen_.count("points_to_evaluate")) read_points(root.at("points_to_evaluate"), spec);
    return spec;
  }

 private:
  // One top-level key; `value` null keeps the default (but trainable and
  // param_space are required to have one).
  void read_key(SweepSpec& spec, const std::string& key, const OrderedJson& value) {
    seen_.insert(key);
    OptionReader one(Json{{key, to_json_scalar(value)}}, "", written_style(""));
    if (key == "trainable") {
      if (value.is_object()) {
        read_command(value, spec);
        return;
      }
      spec.trainable = one.text(key, "");
      if (spec.trainable.empty())
        throw ConfigError::at(key, "trainable must be a non-empty string (a registered name) or {command: [...]}");
    } else if (key == "param_space") {
      spec.param_space = read_param_space(value, key);
    } else if (value.is_null()) {
      return;
    } else if (key == "name") {
      spec.name = one.text(key, "");
      // Said here, escaped: the experiment's name check would print a newline
      // or stop at a NUL.
      for (const char c : spec.name)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
          throw ConfigError::at(key, "experiment name '" + one_line(spec.name, 100) +
                                         "' has a control character (use letters, digits, '_', '-', '.')");
    } else if (key == "metric" || key == "mode") {
      return;  // read_objectives, once both are known
    } else if (const SweepField* field = find_field("", key)) {
      read_field(one, *field, spec);  // num_samples, max_concurrent_trials
    } else if (key == "resources") {
      read_fields(section(value, key, &kResourceKeys), key, spec);
    } else if (key == "search") {
      read_search(value, spec.search);
    } else if (key == "scheduler") {
      read_scheduler(value, spec.scheduler);
    } else if (key == "stop") {
      read_stop(value, spec);
    } else if (key == "checkpoint") {
      read_checkpoint(value, spec);
    } else if (key == "failure") {
      read_fields(section(value, key, &kFailureKeys), key, spec);
    } else if (key == "data") {
      if (!value.is_object())
        throw ConfigError::at(key, "data must be a mapping (path, label, ...), got " + describe_kind(value));
      spec.data = to_json(value);
      // A relative data.path is relative to the sweep file's folder, so a
      // sweep runs the same from any directory (and on every host).
      auto path = spec.data.find("path");
      if (path != spec.data.end() && path->is_string() && !path->get<std::string>().empty()) {
        const std::filesystem::path given(path->get<std::string>());
        if (given.is_relative() && !base_dir_.empty()) {
          *path = (std::filesystem::path(base_dir_) / given).lexically_normal().string();
        }
      }
    } else if (key == "preprocess") {
      if (!value.is_array())
        throw ConfigError::at(key, "preprocess must be a list of preprocessors, got " + describe_kind(value));
      spec.preprocess = to_json(value);
    }
  }

  // metric: NAME with mode: min|max, or several objectives (Ray Tune's
  // lists): metric: [a, b] with mode: [min, max], or one mode for them all.
  static void read_objectives(const OrderedJson& root, SweepSpec& spec) {
    const OrderedJson none;
    const OrderedJson& metric = root.contains("metric") ? root.at("metric") : none;
    const OrderedJson& mode = root.contains("mode") ? root.at("mode") : none;
    auto name_at = [](const OrderedJson& value, const std::string& at, const char* what) {
      if (!value.is_string() || value.get<std::string>().empty())
        throw ConfigError::at(at, std::string(what) + " must be a non-empty string, got " + describe_kind(value));
      return value.get<std::string>();
    };
    auto mode_at = [](const OrderedJson& value, const std::string& at) {
      const std::string text = value.is_string() ? value.get<std::string>() : "";
      if (!is_min_max(text))
        throw ConfigError::at(at, "mode must be 'min' or 'max', got " +
                                      (value.is_string() ? "'" + text + "'" : describe_kind(value)));
      return text;
    };
    if (!metric.is_array()) {
      if (mode.is_array())
        throw ConfigError::at("mode", "mode is a list but metric is not: write metric: [a, b] for several metrics");
      if (!metric.is_null()) spec.metric = name_at(metric, "metric", "metric");
      if (!mode.is_null()) spec.mode = mode_at(mode, "mode");
      return;
    }
    if (metric.size() < 2)
      throw ConfigError::at("metric", "a list of metrics needs two or more (one metric is written metric: NAME)");
    if (mode.is_null()) throw ConfigError::at("metric", "metrics need a mode: mode: [min, max, ...] or one mode for all");
    if (mode.is_array() && mode.size() != metric.size())
      throw ConfigError::at("mode", "mode lists " + std::to_string(mode.size()) + " modes for " +
                                        std::to_string(metric.size()) + " metrics");
    for (size_t i = 0; i < metric.size(); ++i) {
      const std::string index = "[" + std::to_string(i) + "]";
      Objective objective{name_at(metric[i], "metric" + index, "metric"),
                          mode.is_array() ? mode_at(mode[i], "mode" + index) : mode_at(mode, "mode")};
      for (const auto& earlier : spec.objectives)
        if (earlier.metric == objective.metric)
          throw ConfigError::at("metric" + index, "metric '" + objective.metric + "' is listed twice");
      spec.objectives.push_back(objective);
    }
    spec.metric = spec.objectives[0].metric;
    spec.mode = spec.objectives[0].mode;
  }

  // Scalars as they are; lists and mappings only by kind (the readers of
  // scalar keys reject them without looking inside).
  static Json to_json_scalar(const OrderedJson& value) {
    if (value.is_object()) return Json::object();
    if (value.is_array()) return Json::array();
    return to_json(value);
  }

  // trainable: {command: [prog, args...], cwd, env, stop_grace_s, log_max_mb}. A relative
  // cwd is relative to the sweep file's folder; without one, the program runs
  // where tune was started. Both are stored absolute (resume runs elsewhere).
  void read_command(const OrderedJson& value, SweepSpec& spec) const {
    static const std::vector<std::string> keys = {"command", "cwd", "env", "stop_grace_s", "log_max_mb"};
    for (const auto& [key, item] : value.items()) {
      (void)item;
      if (std::find(keys.begin(), keys.end(), key) == keys.end())
        throw ConfigError::at_key("trainable." + key, "unknown key 'trainable." + key + "'" +
                                                          did_you_mean_or_list(key, keys, "valid keys"));
    }
    if (!value.contains("command"))
      throw ConfigError::at_key("trainable", "trainable needs a command: a list [program, arguments...]");
    const OrderedJson& argv = value.at("command");
    if (!argv.is_array() || argv.empty())
      throw ConfigError::at("trainable.command",
                            "trainable.command must be a non-empty list [program, arguments...], got " + describe_kind(argv));
    CommandSpec command;
    for (size_t i = 0; i < argv.size(); ++i) {
      const std::string at = "trainable.command[" + std::to_string(i) + "]";
      const OrderedJson& arg = argv[i];
      if (arg.is_object() || arg.is_array() || arg.is_null())
        throw ConfigError::at(at, at + " must be a string, got " + describe_kind(arg));
      command.argv.push_back(arg.is_string() ? arg.get<std::string>() : to_json(arg).dump());
    }
    if (command.argv[0].empty()) throw ConfigError::at("trainable.command[0]", "trainable.command[0] (the program) is empty");
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path cwd = fs::current_path(ec);
    if (value.contains("cwd")) {
      const OrderedJson& dir = value.at("cwd");
      if (!dir.is_string() || dir.get<std::string>().empty())
        throw ConfigError::at("trainable.cwd", "trainable.cwd must be a folder path, got " + describe_kind(dir));
      fs::path given(dir.get<std::string>());
      cwd = given.is_absolute() ? given : fs::path(base_dir_.empty() ? cwd : fs::path(base_dir_)) / given;
    }
    command.cwd = cwd.lexically_normal().string();
    if (value.contains("env")) {
      const OrderedJson& env = value.at("env");
      if (!env.is_object())
        throw ConfigError::at("trainable.env", "trainable.env must be a mapping NAME: value, got " + describe_kind(env));
      for (const auto& [name, item] : env.items()) {
        if (name.empty() || name.find('=') != std::string::npos)
          throw ConfigError::at_key("trainable.env." + name, "'" + name + "' is not an environment variable name");
        if (item.is_object() || item.is_array() || item.is_null())
          throw ConfigError::at("trainable.env." + name, "trainable.env." + name + " must be a string, got " + describe_kind(item));
        command.env[name] = item.is_string() ? item.get<std::string>() : to_json(item).dump();
      }
    }
    if (value.contains("stop_grace_s")) {
      const OrderedJson& grace = value.at("stop_grace_s");
      if (!grace.is_number() || !std::isfinite(grace.get<double>()) || grace.get<double>() < 0)
        throw ConfigError::at("trainable.stop_grace_s", "trainable.stop_grace_s must be a number of seconds >= 0");
      command.stop_grace_s = grace.get<double>();
    }
    if (value.contains("log_max_mb")) {
      const OrderedJson& size = value.at("log_max_mb");
      if (!size.is_number() || !std::isfinite(size.get<double>()) || size.get<double>() < 0.01 || size.get<double>() > 1e6)
        throw ConfigError::at("trainable.log_max_mb", "trainable.log_max_mb must be a number of MB between 0.01 and 1000000");
      command.log_max_mb = size.get<double>();
    }
    spec.trainable = "command";
    spec.command = command.to_json();
  }

  void read_search(const OrderedJson& value, SearchOptions& search) const {
    const OptionReader o = section(value, "search", nullptr);
    for (const auto& [key, item] : o.options().items()) {
      if (key == "algorithm") {
        search.algorithm = o.text(key, search.algorithm);
        check_algorithm(search.algorithm);
      } else if (key == "seed") {
        if (item.is_null()) continue;
        if (!item.is_number_unsigned() && !(item.is_number_integer() && item.get<int64_t>() >= 0))
          o.fail(key, "must be a non-negative integer");
        search.seed = item.get<uint64_t>();
      } else {
        search.params[key] = item;  // the algorithm's own options: checked in prepare_sweep
      }
    }
  }

  // search/ owns the list of algorithms and its message.
  static void check_algorithm(const std::string& algorithm) {
    SearchOptions probe;
    probe.algorithm = algorithm;
    probe.seed = 0;
    probe.metric = "probe";
    probe.mode = "min";
    try {
      make_searcher(probe, SearchSpace(), 1, {});
    } catch (const ConfigError& e) {
      throw ConfigError::at("search.algorithm", e.what());
    }
  }

  void read_scheduler(const OrderedJson& value, SchedulerOptions& scheduler) const {
    const OptionReader o = section(value, "scheduler", nullptr);
    for (const auto& [key, item] : o.options().items()) {
      if (key == "type") {
        scheduler.type = o.text(key, scheduler.type);
      } else {
        scheduler.params[key] = item;
      }
    }
  }

  // stop: the table's criteria, the plateau stoppers, and any other key a
  // metric threshold.
  void read_stop(const OrderedJson& value, SweepSpec& spec) const {
    const OptionReader o = section(value, "stop", nullptr);
    for (const auto& [key, item] : o.options().items()) {
      if (item.is_null()) continue;
      if (const SweepField* field = find_field("stop", key)) {
        read_field(o, *field, spec);
      } else if (key == "plateau") {
        read_plateau(value.at(key), spec);
      } else if (key == "experiment_plateau") {
        read_experiment_plateau(value.at(key), spec);
      } else if (item.is_object()) {
        throw ConfigError::at_key("stop." + key, "unknown stop key '" + key + "'" +
                                                     did_you_mean(key, {"plateau", "experiment_plateau"}) +
                                                     " (a metric threshold is a number)");
      } else {
        spec.stop.metric_thresholds[key] = o.finite_number(key, 0);
      }
    }
  }

  // stop.plateau: {metric, mode, std, num_results, grace_period, metric_threshold}.
  void read_plateau(const OrderedJson& value, SweepSpec& spec) const {
    static const std::vector<std::string> keys = {"metric", "mode", "std", "num_results", "grace_period",
                                                  "metric_threshold"};
    const OptionReader o = section(value, "stop.plateau", &keys);
    StopCriteria::Plateau p;
    p.metric = o.text("metric", p.metric);
    p.mode = o.string("mode", p.mode, {"min", "max"});
    p.std = o.number("std", p.std, Bound::above(0));
    p.num_results = o.integer_in("num_results", p.num_results, 2, kMaxCount, "an integer >= 2");
    p.grace_period = o.integer_in("grace_period", p.grace_period, 0, kMaxCount, "a non-negative integer");
    if (o.has("metric_threshold") && !o.raw("metric_threshold").is_null())
      p.metric_threshold = o.finite_number("metric_threshold", 0);
    spec.stop.plateau = p;
  }

  // stop.experiment_plateau: {metric, mode, std, top, patience}.
  void read_experiment_plateau(const OrderedJson& value, SweepSpec& spec) const {
    static const std::vector<std::string> keys = {"metric", "mode", "std", "top", "patience"};
    const OptionReader o = section(value, "stop.experiment_plateau", &keys);
    StopCriteria::ExperimentPlateau p;
    p.metric = o.text("metric", p.metric);
    p.mode = o.string("mode", p.mode, {"min", "max"});
    p.std = o.number("std", p.std, Bound::at_least(0));
    p.top = o.integer_in("top", p.top, 2, kMaxCount, "an integer >= 2");
    p.patience = o.integer_in("patience", p.patience, 0, kMaxCount, "a non-negative integer");
    spec.stop.experiment_plateau = p;
  }

  void read_checkpoint(const OrderedJson& value, SweepSpec& spec) const {
    read_fields(section(value, "checkpoint", &kCheckpointKeys), "checkpoint", spec);
    const std::string& order = spec.checkpoint.score_order;
    if (!order.empty() && !is_min_max(order))
      throw ConfigError::at("checkpoint.score_order", "checkpoint.score_order must be 'min' or 'max', got '" + order + "'");
  }

  void read_points(const OrderedJson& node, SweepSpec& spec) const {
    const std::string expected = "points_to_evaluate must be a list of mappings (parameter: value)";
    if (!node.is_array()) throw ConfigError::at("points_to_evaluate", expected + ", got " + describe_kind(node));
    for (size_t i = 0; i < node.size(); ++i) {
      const std::string at = "points_to_evaluate[" + std::to_string(i) + "]";
      if (!node[i].is_object()) throw ConfigError::at(at, expected + ", got " + describe_kind(node[i]));
      spec.points_to_evaluate.push_back(to_json(node[i]));  // their keys: check_sweep
    }
  }

  const YamlDocument& doc_;
  std::string base_dir_;  // the sweep file's folder (absolute), "" for text
  std::set<std::string> seen_;
};

}  // namespace

ConfigError SweepSource::locate(const ConfigError& error) const {
  std::string path = error.key_path();
  std::string prefix;
  if (path == "scheduler" || path.rfind("scheduler.", 0) == 0) {
    path = "scheduler";  // scheduler errors point at the block
    prefix = "scheduler: ";
  } else if (path == "search") {
    prefix = "search: ";
  }
  int line = 0;
  if (path.empty()) {
    if (error.about_key()) line = root_line_;  // a key the whole file lacks
  } else if (const SourceMap::Lines* lines = lines_.find(path)) {
    line = error.about_key() && lines->key ? lines->key : lines->value;
  }
  return ConfigError(file_, line, one_line(prefix + error.what()));  // one line, whatever the file held
}

LoadedSweep read_sweep(const std::string& yaml_text, const std::string& file, const std::string& relative_to) {
  YamlDocument doc = parse_yaml_document(yaml_text, file);
  if (!doc.root.is_object())
    throw ConfigError(file, doc.root_line,
                      "a sweep file must be a mapping with at least trainable and param_space, got " +
                          (doc.root.is_null() ? std::string("an empty document") : describe_kind(doc.root)));
  LoadedSweep loaded;
  auto source = std::make_shared<SweepSource>(file, std::move(doc.lines), doc.root_line);
  try {
    // A relative trainable.cwd or data.path is relative to the sweep file's folder.
    std::error_code ec;
    const bool on_disk = std::filesystem::is_regular_file(file, ec);
    const std::string base = !relative_to.empty() ? std::filesystem::absolute(relative_to, ec).lexically_normal().string()
                             : on_disk            ? std::filesystem::absolute(file, ec).parent_path().string()
                                                  : "";
    loaded.spec = Reader(doc, base).read();
  } catch (const ConfigError& e) {
    throw source->locate(e);
  }
  loaded.source = std::move(source);
  return loaded;
}

LoadedSweep read_sweep_file(const std::string& path, const std::string& relative_to) {
  return read_sweep(read_text_file(path, YamlLimits().max_bytes), path, relative_to);
}

SearchSpace parse_param_space(const std::string& yaml_text, const std::string& file) {
  YamlDocument doc = parse_yaml_document(yaml_text, file);
  SweepSource source(file, std::move(doc.lines), doc.root_line);
  try {
    if (!doc.root.is_object())
      throw ConfigError::at_key("", "param_space must be a mapping of parameter names, got " + describe_kind(doc.root));
    return read_param_space(doc.root, "");
  } catch (const ConfigError& e) {
    throw source.locate(e);
  }
}

}  // namespace tune::internal
