#include "tuner/sweep_spec.h"

#include "schedulers/scheduler.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include <yaml-cpp/yaml.h>

#include "search/edit_distance.h"
#include "search/yaml_json.h"
#include "tuner/error.h"

namespace tune {

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  return internal::closest_match_impl(word, candidates);
}

namespace {

using internal::yaml_kind;
using internal::yaml_line;
using internal::yaml_to_json;

const std::vector<std::string> kTopKeys = {
    "name",      "trainable", "metric", "mode",        "num_samples",        "max_concurrent_trials",
    "resources", "search",    "scheduler", "stop",     "param_space",        "points_to_evaluate",
    "checkpoint", "failure",   "data",      "preprocess"};

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string unknown_key(const std::string& key, const std::string& section, const std::vector<std::string>& valid) {
  std::string msg = "unknown key '" + key + "'" + (section.empty() ? "" : " in " + section);
  std::string guess = closest_match(key, valid);
  return msg + (guess.empty() ? " (valid keys: " + join_list(valid) + ")" : " (did you mean '" + guess + "'?)");
}

bool is_min_max(const std::string& s) { return s == "min" || s == "max"; }

// Every path a point may set: parameters and constants.
std::vector<std::string> space_paths(const SearchSpace& space) {
  std::vector<std::string> paths;
  for (const auto& p : space.parameters()) paths.push_back(p.path);
  for (const auto& c : space.constants()) paths.push_back(c.first);
  return paths;
}

bool starts_path(const std::string& prefix, const std::string& path) {
  return path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 && path[prefix.size()] == '.';
}

// `key` names a parameter, or lies inside one (a choice of objects).
bool point_key_ok(const std::vector<std::string>& paths, const std::string& key) {
  for (const auto& p : paths)
    if (p == key || starts_path(p, key)) return true;
  return false;
}

std::string unknown_point_key(const std::vector<std::string>& paths, const std::string& key) {
  std::string guess = closest_match(key, paths);
  return "points_to_evaluate: unknown parameter '" + key + "'" +
         (guess.empty() ? " (parameters: " + join_list(paths) + ")" : " (did you mean '" + guess + "'?)");
}

// Reads one sweep file; every error names file:line.
class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) {}

  SweepSpec parse(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw ConfigError(file_, e.mark.is_null() ? 0 : e.mark.line + 1, e.msg);
    }
    if (!root.IsMap())
      throw ConfigError(file_, std::max(1, yaml_line(root)),
                        "a sweep file must be a mapping with at least trainable and param_space, got " +
                            (root.IsNull() ? std::string("an empty document") : yaml_kind(root)));
    SweepSpec spec;
    YAML::Node metric, mode, points, scheduler, search;
    bool has_trainable = false, has_space = false, has_points = false;
    for (const auto& [key, value] : entries(root, "", &kTopKeys)) {
      if (key == "trainable") {
        spec.trainable = string(value, key);
        if (spec.trainable.empty()) fail(value, "trainable must be a non-empty string");
        has_trainable = true;
      } else if (key == "param_space") {
        spec.param_space = SearchSpace::from_yaml(value, file_);
        has_space = true;
      } else if (value.IsNull()) {
        continue;  // `key:` with no value keeps the default
      } else if (key == "name") {
        spec.name = string(value, key);
      } else if (key == "metric") {
        spec.metric = string(value, key);
        metric = value;
      } else if (key == "mode") {
        spec.mode = string(value, key);
        if (!is_min_max(spec.mode)) fail(value, "mode must be 'min' or 'max', got '" + spec.mode + "'");
        mode = value;
      } else if (key == "num_samples") {
        spec.num_samples = integer(value, key, 1, "a positive integer");
      } else if (key == "max_concurrent_trials") {
        spec.max_concurrent_trials = static_cast<int>(integer(value, key, 0, "a non-negative integer"));
      } else if (key == "resources") {
        parse_resources(value, spec.resources);
      } else if (key == "search") {
        parse_search(value, spec.search);
        search = value;
      } else if (key == "scheduler") {
        parse_scheduler(value, spec.scheduler);
        scheduler = value;
      } else if (key == "stop") {
        parse_stop(value, spec.stop);
      } else if (key == "points_to_evaluate") {
        points = value;
        has_points = true;
      } else if (key == "checkpoint") {
        parse_checkpoint(value, spec.checkpoint);
      } else if (key == "data") {
        if (!value.IsMap()) fail(value, "data must be a mapping (path, label, ...), got " + yaml_kind(value));
        spec.data = yaml_to_json(value);
      } else if (key == "preprocess") {
        if (!value.IsSequence()) fail(value, "preprocess must be a list of preprocessors, got " + yaml_kind(value));
        spec.preprocess = yaml_to_json(value);
      } else if (key == "failure") {
        for (const auto& [k, v] : entries(value, "failure", &kFailureKeys))
          spec.failure.max_failures = static_cast<int>(integer(v, "failure." + k, -1, "an integer >= -1"));
      }
    }
    const int top = std::max(1, yaml_line(root));
    if (!has_trainable) throw ConfigError(file_, top, "missing required key 'trainable'");
    if (!has_space) throw ConfigError(file_, top, "missing required key 'param_space'");
    if (!spec.metric.empty() && spec.mode.empty())
      fail(metric, "metric '" + spec.metric + "' needs a mode (min or max)");
    if (spec.metric.empty() && !spec.mode.empty()) fail(mode, "mode '" + spec.mode + "' needs a metric");
    if (has_points) parse_points(points, spec);
    if (search && (!spec.search.params.empty() || spec.search.algorithm == "bayes" || spec.search.algorithm == "tpe")) {
      // search/ owns its option rules (and which spaces an algorithm can search).
      try {
        make_searcher(spec.search_options(), spec.param_space, spec.num_samples, spec.points_to_evaluate);
      } catch (const ConfigError& e) {
        // Point at the option the message names when there is one.
        const std::string what = e.what();
        for (const auto& [key, nodes] : search_keys_) {
          if (what.rfind("unknown key '" + key + "'", 0) == 0) fail(nodes.first, what);
          if (what.rfind("search." + key + " ", 0) == 0) fail(nodes.second, what);
        }
        fail(search, std::string("search: ") + what);
      }
    }
    if (scheduler) {
      // schedulers/ owns its option rules; building one validates them.
      try {
        make_scheduler(spec.scheduler.type, spec.scheduler.params, spec.metric, spec.mode);
      } catch (const ConfigError& e) {
        fail(scheduler, std::string("scheduler: ") + e.what());
      }
    }
    try {
      spec.validate();  // backstop for rules that have no single line
    } catch (const ConfigError& e) {
      throw ConfigError(file_, 0, e.what());
    }
    return spec;
  }

 private:
  const std::vector<std::string> kResourceKeys = {"workers", "cpus_per_worker", "use_mpi"};
  const std::vector<std::string> kCheckpointKeys = {"num_to_keep", "score_attribute", "score_order"};
  const std::vector<std::string> kFailureKeys = {"max_failures"};

  // The key node of `key` in mapping `node`.
  static YAML::Node kv_key(const YAML::Node& node, const std::string& key) {
    for (const auto& kv : node)
      if (kv.first.IsScalar() && kv.first.Scalar() == key) return kv.first;
    return node;
  }

  // Option keys of the search block: key -> (key node, value node).
  mutable std::vector<std::pair<std::string, std::pair<YAML::Node, YAML::Node>>> search_keys_;

  [[noreturn]] void fail(const YAML::Node& at, const std::string& message) const {
    int line = yaml_line(at);
    // yaml-cpp marks an empty value (`key:`) at the token after it, often the
    // next line; report the line of its key instead.
    for (const auto& [node, key_line] : null_values_)
      if (node.is(at)) line = key_line;
    throw ConfigError(file_, line, message);
  }

  // The pairs of a mapping section, rejecting duplicates and (when `valid` is
  // given) unknown keys. A null section (`stop:` alone) has no pairs.
  std::vector<std::pair<std::string, YAML::Node>> entries(const YAML::Node& node, const std::string& section,
                                                          const std::vector<std::string>* valid) const {
    std::vector<std::pair<std::string, YAML::Node>> out;
    if (node.IsNull()) return out;
    if (!node.IsMap()) fail(node, section + " must be a mapping, got " + yaml_kind(node));
    std::set<std::string> seen;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) fail(kv.first, "keys must be strings, got " + yaml_kind(kv.first));
      const std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) fail(kv.first, "duplicate key '" + key + "'");
      if (valid && std::find(valid->begin(), valid->end(), key) == valid->end())
        fail(kv.first, unknown_key(key, section, *valid));
      if (kv.second.IsNull()) null_values_.emplace_back(kv.second, yaml_line(kv.first));
      out.emplace_back(key, kv.second);
    }
    return out;
  }

  std::string string(const YAML::Node& value, const std::string& label) const {
    if (value.IsNull()) return "";
    if (!value.IsScalar()) fail(value, label + " must be a string, got " + yaml_kind(value));
    return value.Scalar();
  }

  int64_t integer(const YAML::Node& value, const std::string& label, int64_t min, const std::string& what) const {
    Json j = yaml_to_json(value);
    if (!j.is_number_integer() || j.get<int64_t>() < min || j.get<int64_t>() > std::numeric_limits<int>::max())
      fail(value, label + " must be " + what + ", got " + yaml_kind(value));
    return j.get<int64_t>();
  }

  double number(const YAML::Node& value, const std::string& label, bool positive) const {
    Json j = yaml_to_json(value);
    if (!j.is_number() || !std::isfinite(j.get<double>()) || (positive && j.get<double>() <= 0))
      fail(value, label + " must be a " + (positive ? "positive " : "") + "number, got " + yaml_kind(value));
    return j.get<double>();
  }

  bool boolean(const YAML::Node& value, const std::string& label) const {
    Json j = yaml_to_json(value);
    if (!j.is_boolean()) fail(value, label + " must be true or false, got " + yaml_kind(value));
    return j.get<bool>();
  }

  void parse_resources(const YAML::Node& node, Resources& r) const {
    for (const auto& [key, value] : entries(node, "resources", &kResourceKeys)) {
      if (key == "workers") r.workers = static_cast<int>(integer(value, "resources.workers", 1, "a positive integer"));
      if (key == "cpus_per_worker")
        r.cpus_per_worker = static_cast<int>(integer(value, "resources.cpus_per_worker", 1, "a positive integer"));
      if (key == "use_mpi") r.use_mpi = boolean(value, "resources.use_mpi");
    }
  }

  void parse_search(const YAML::Node& node, SearchOptions& search) const {
    for (const auto& [key, value] : entries(node, "search", nullptr)) {
      if (key == "algorithm") {
        search.algorithm = string(value, "search.algorithm");
        try {  // make_searcher owns the list of algorithms and its message
          SearchOptions probe;
          probe.algorithm = search.algorithm;
          probe.seed = 0;
          probe.metric = "probe";
          probe.mode = "min";
          make_searcher(probe, SearchSpace(), 1, {});
        } catch (const ConfigError& e) {
          fail(value, e.what());
        }
      } else if (key == "seed") {
        const std::string text = value.IsScalar() ? value.Scalar() : "";
        errno = 0;
        char* end = nullptr;
        unsigned long long seed = std::strtoull(text.c_str(), &end, 10);
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || *end || errno == ERANGE ||
            value.Tag() == "!")
          fail(value, "search.seed must be a non-negative integer, got " + yaml_kind(value));
        search.seed = static_cast<uint64_t>(seed);
      } else {
        // Algorithm options: validated by make_searcher once the whole file
        // (metric, mode, param_space) is known.
        search.params[key] = yaml_to_json(value);
        search_keys_.emplace_back(key, std::make_pair(kv_key(node, key), value));
      }
    }
  }

  void parse_scheduler(const YAML::Node& node, SchedulerOptions& scheduler) const {
    for (const auto& [key, value] : entries(node, "scheduler", nullptr)) {
      if (key != "type") {
        scheduler.params[key] = yaml_to_json(value);
        continue;
      }
      scheduler.type = string(value, "scheduler.type");
    }
  }

  void parse_stop(const YAML::Node& node, StopCriteria& stop) const {
    for (const auto& [key, value] : entries(node, "stop", nullptr)) {
      if (key == "training_iteration")
        stop.training_iteration = integer(value, "stop.training_iteration", 1, "a positive integer");
      else if (key == "time_budget_s")
        stop.time_budget_s = number(value, "stop.time_budget_s", true);
      else
        stop.metric_thresholds[key] = number(value, "stop." + key, false);
    }
  }

  void parse_checkpoint(const YAML::Node& node, CheckpointOptions& c) const {
    for (const auto& [key, value] : entries(node, "checkpoint", &kCheckpointKeys)) {
      if (key == "num_to_keep")
        c.num_to_keep = static_cast<int>(integer(value, "checkpoint.num_to_keep", 0, "a non-negative integer"));
      if (key == "score_attribute") c.score_attribute = string(value, "checkpoint.score_attribute");
      if (key == "score_order") {
        c.score_order = string(value, "checkpoint.score_order");
        if (!c.score_order.empty() && !is_min_max(c.score_order))
          fail(value, "checkpoint.score_order must be 'min' or 'max', got '" + c.score_order + "'");
      }
    }
  }

  void parse_points(const YAML::Node& node, SweepSpec& spec) const {
    const std::string expected = "points_to_evaluate must be a list of mappings (parameter: value)";
    if (!node.IsSequence()) fail(node, expected + ", got " + yaml_kind(node));
    const std::vector<std::string> paths = space_paths(spec.param_space);
    for (const auto& item : node) {
      if (!item.IsMap()) fail(item, expected + ", got " + yaml_kind(item));
      check_point_keys(item, "", paths);
      spec.points_to_evaluate.push_back(yaml_to_json(item));
    }
  }

  void check_point_keys(const YAML::Node& map, const std::string& prefix, const std::vector<std::string>& paths) const {
    std::set<std::string> seen;
    for (const auto& kv : map) {
      const std::string key = prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
      if (!seen.insert(key).second) fail(kv.first, "duplicate key '" + kv.first.Scalar() + "'");
      if (point_key_ok(paths, key)) continue;
      bool nests = std::any_of(paths.begin(), paths.end(), [&](const std::string& p) { return starts_path(key, p); });
      if (nests && kv.second.IsMap() && kv.second.size() > 0)
        check_point_keys(kv.second, key, paths);
      else
        fail(kv.first, unknown_point_key(paths, key));
    }
  }

  std::string file_;
  mutable std::vector<std::pair<YAML::Node, int>> null_values_;
};

}  // namespace

void SweepSpec::validate() const {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw ConfigError(message);
  };
  require(mode.empty() || is_min_max(mode), "mode must be 'min' or 'max', got '" + mode + "'");
  require(metric.empty() || !mode.empty(), "metric '" + metric + "' needs a mode (min or max)");
  require(!metric.empty() || mode.empty(), "mode '" + mode + "' needs a metric");
  require(num_samples >= 1, "num_samples must be a positive integer, got " + std::to_string(num_samples));
  require(max_concurrent_trials >= 0,
          "max_concurrent_trials must be a non-negative integer, got " + std::to_string(max_concurrent_trials));
  require(resources.workers >= 1, "resources.workers must be a positive integer, got " + std::to_string(resources.workers));
  require(resources.cpus_per_worker >= 1,
          "resources.cpus_per_worker must be a positive integer, got " + std::to_string(resources.cpus_per_worker));
  // "custom": a Scheduler object handed to the C++ Tuner, validated there.
  if (scheduler.type != "custom") make_scheduler(scheduler.type, scheduler.params, metric, mode);
  require(!stop.training_iteration || *stop.training_iteration >= 1,
          "stop.training_iteration must be a positive integer");
  require(!stop.time_budget_s || (*stop.time_budget_s > 0 && std::isfinite(*stop.time_budget_s)),
          "stop.time_budget_s must be a positive number");
  for (const auto& [key, value] : stop.metric_thresholds)
    require(std::isfinite(value), "stop." + key + " must be a number");
  require(checkpoint.num_to_keep >= 0,
          "checkpoint.num_to_keep must be a non-negative integer, got " + std::to_string(checkpoint.num_to_keep));
  require(checkpoint.score_order.empty() || is_min_max(checkpoint.score_order),
          "checkpoint.score_order must be 'min' or 'max', got '" + checkpoint.score_order + "'");
  require(failure.max_failures >= -1,
          "failure.max_failures must be an integer >= -1, got " + std::to_string(failure.max_failures));
  for (const auto& p : param_space.parameters()) {
    try {
      p.domain.validate();
    } catch (const ConfigError& e) {
      throw ConfigError("parameter '" + p.path + "': " + e.what());
    }
  }
  const std::vector<std::string> paths = space_paths(param_space);
  for (const auto& point : points_to_evaluate) {
    require(point.is_object(), "points_to_evaluate entries must be mappings, got " + point.dump());
    const Json flat = flatten(point);
    for (const auto& item : flat.items()) require(point_key_ok(paths, item.key()), unknown_point_key(paths, item.key()));
  }
  // Checks the algorithm name and options, num_samples and the grid size.
  SearchOptions probe = search_options();
  probe.seed = 0;
  make_searcher(probe, param_space, num_samples, points_to_evaluate);
}

SearchOptions SweepSpec::search_options() const {
  SearchOptions options = search;
  options.metric = metric;
  options.mode = mode;
  return options;
}

Json SweepSpec::to_json() const {
  Json stop_json = {{"metric_thresholds", stop.metric_thresholds},
                    {"training_iteration", stop.training_iteration ? Json(*stop.training_iteration) : Json()},
                    {"time_budget_s", stop.time_budget_s ? Json(*stop.time_budget_s) : Json()}};
  return {{"name", name},
          {"trainable", trainable},
          {"metric", metric},
          {"mode", mode},
          {"num_samples", num_samples},
          {"max_concurrent_trials", max_concurrent_trials},
          {"resources",
           {{"workers", resources.workers}, {"cpus_per_worker", resources.cpus_per_worker}, {"use_mpi", resources.use_mpi}}},
          {"search",
           {{"algorithm", search.algorithm},
            {"seed", search.seed ? Json(*search.seed) : Json()},
            {"params", search.params}}},
          {"scheduler", {{"type", scheduler.type}, {"params", scheduler.params}}},
          {"stop", stop_json},
          {"param_space", param_space.to_json()},
          {"points_to_evaluate", points_to_evaluate},
          {"checkpoint",
           {{"num_to_keep", checkpoint.num_to_keep},
            {"score_attribute", checkpoint.score_attribute},
            {"score_order", checkpoint.score_order}}},
          {"failure", {{"max_failures", failure.max_failures}}},
          {"data", data},
          {"preprocess", preprocess}};
}

Json SweepSpec::setup() const { return {{"data", data}, {"preprocess", preprocess}}; }

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
    s.num_samples = json.value("num_samples", s.num_samples);
    s.max_concurrent_trials = json.value("max_concurrent_trials", s.max_concurrent_trials);
    const Json& r = section("resources");
    s.resources.workers = r.value("workers", s.resources.workers);
    s.resources.cpus_per_worker = r.value("cpus_per_worker", s.resources.cpus_per_worker);
    s.resources.use_mpi = r.value("use_mpi", s.resources.use_mpi);
    const Json& search = section("search");
    s.search.algorithm = search.value("algorithm", s.search.algorithm);
    if (search.contains("seed") && !search["seed"].is_null()) s.search.seed = search["seed"].get<uint64_t>();
    s.search.params = search.value("params", s.search.params);
    const Json& scheduler = section("scheduler");
    s.scheduler.type = scheduler.value("type", s.scheduler.type);
    s.scheduler.params = scheduler.value("params", s.scheduler.params);
    const Json& stop = section("stop");
    if (stop.contains("training_iteration") && !stop["training_iteration"].is_null())
      s.stop.training_iteration = stop["training_iteration"].get<int64_t>();
    if (stop.contains("time_budget_s") && !stop["time_budget_s"].is_null())
      s.stop.time_budget_s = stop["time_budget_s"].get<double>();
    s.stop.metric_thresholds = stop.value("metric_thresholds", s.stop.metric_thresholds);
    if (json.contains("param_space")) s.param_space = SearchSpace::from_json(json["param_space"]);
    s.points_to_evaluate = json.value("points_to_evaluate", s.points_to_evaluate);
    const Json& c = section("checkpoint");
    s.checkpoint.num_to_keep = c.value("num_to_keep", s.checkpoint.num_to_keep);
    s.checkpoint.score_attribute = c.value("score_attribute", s.checkpoint.score_attribute);
    s.checkpoint.score_order = c.value("score_order", s.checkpoint.score_order);
    s.failure.max_failures = section("failure").value("max_failures", s.failure.max_failures);
    if (json.contains("data")) s.data = json["data"];
    if (json.contains("preprocess")) s.preprocess = json["preprocess"];
  } catch (const Json::exception& e) {
    throw ConfigError(std::string("invalid sweep spec JSON: ") + e.what());
  }
  return s;
}

SweepSpec parse_sweep(const std::string& yaml_text, const std::string& file) { return Parser(file).parse(yaml_text); }

SweepSpec load_sweep_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw ConfigError(path, 0, std::string("cannot read file: ") + std::strerror(errno));
  std::string text;
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
  const int error = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (error) throw ConfigError(path, 0, std::string("cannot read file: ") + std::strerror(error));
  return parse_sweep(text, path);
}

}  // namespace tune
