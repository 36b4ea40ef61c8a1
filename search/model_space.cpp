#include "search/model_space.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/names.h"
#include "base/error.h"

namespace tune::internal {
namespace {

std::pair<double, double> multiples(double low, double high, double q) {
  return {std::ceil(low / q - 1e-9), std::floor(high / q + 1e-9)};
}

double to_internal(const ModelVariable& v, double value) { return v.log ? std::log(value) : value; }
double from_internal(const ModelVariable& v, double x) { return v.log ? std::exp(x) : x; }

}  // namespace

ModelSpace::ModelSpace(const SearchSpace& space, const std::string& algorithm) : space_(space) {
  for (const Parameter& p : space.parameters()) {
    const Domain& d = p.domain;
    ModelVariable v;
    v.path = p.path;
    switch (d.kind) {
      case Domain::Kind::kGrid:
        throw ConfigError("parameter '" + p.path + "': grid_search is not supported by search algorithm '" +
                          algorithm + "' (it picks every value itself); use choice([...]) instead");
      case Domain::Kind::kChoice:
        v.type = ModelVariable::Type::kCategorical;
        v.choices = d.values;
        v.low = 0;
        v.high = static_cast<double>(d.values.size()) - 1;
        break;
      case Domain::Kind::kFloat:
      case Domain::Kind::kNormal: {
        const bool normal = d.kind == Domain::Kind::kNormal;
        double lo = normal ? d.mean - 4 * d.sd : d.low, hi = normal ? d.mean + 4 * d.sd : d.high;
        v.log = !normal && d.log;
        if (d.q > 0) {
          v.type = ModelVariable::Type::kDiscrete;
          v.q = d.q;
          std::tie(v.kmin, v.kmax) = multiples(lo, hi, d.q);
          if (normal && v.kmin > v.kmax) v.kmin = v.kmax = std::round(d.mean / d.q);
        } else {
          v.type = ModelVariable::Type::kContinuous;
          v.low = to_internal(v, lo);
          v.high = to_internal(v, hi);
          v.value_high = normal ? hi : std::nextafter(hi, lo);
        }
        break;
      }
      case Domain::Kind::kInt: {
        v.type = ModelVariable::Type::kDiscrete;
        v.integer = true;
        v.log = d.log;
        v.q = d.q > 0 ? d.q : 1;
        if (!d.upper_inclusive) {
          v.kmin = d.low;
          v.kmax = d.high - 1;
        } else {
          std::tie(v.kmin, v.kmax) = multiples(d.low, d.high, v.q);
        }
        break;
      }
    }
    if (v.type == ModelVariable::Type::kDiscrete) {
      const double first = v.kmin * v.q, last = v.kmax * v.q;
      if (v.log) {  // first >= q, so first - q/2 > 0 (Optuna's bounds for log ints)
        v.low = std::log(first - 0.5 * v.q);
        v.high = std::log(last + 0.5 * v.q);
      } else {
        v.low = first - 0.5 * v.q;
        v.high = last + 0.5 * v.q;
      }
    }
    variables_.push_back(std::move(v));
  }
  for (const auto& v : variables_) {
    offsets_.push_back(static_cast<size_t>(unit_dims_));
    if (v.type == ModelVariable::Type::kCategorical) {
      const int k = v.choices.size() > 1 ? static_cast<int>(v.choices.size()) : 0;
      for (int i = 0; i < k; ++i) continuous_.push_back(false);
      unit_dims_ += k;
    } else {
      continuous_.push_back(v.type == ModelVariable::Type::kContinuous);
      unit_dims_ += 1;
    }
  }
}

std::optional<double> ModelSpace::internal(size_t i, const Json& config) const {
  const ModelVariable& v = variables_[i];
  const Json* value = find_path(config, v.path);
  if (!value) return std::nullopt;
  if (v.type == ModelVariable::Type::kCategorical) {
    for (size_t c = 0; c < v.choices.size(); ++c)
      if (v.choices[c] == *value) return static_cast<double>(c);
    return std::nullopt;
  }
  if (!value->is_number()) return std::nullopt;
  const double x = value->get<double>();
  if (!std::isfinite(x) || (v.log && x <= 0)) return std::nullopt;
  return std::clamp(to_internal(v, x), v.low, v.high);
}

Json ModelSpace::value(size_t i, double x) const {
  const ModelVariable& v = variables_[i];
  switch (v.type) {
    case ModelVariable::Type::kCategorical: {
      auto c = static_cast<size_t>(std::clamp(std::round(x), 0.0, static_cast<double>(v.choices.size()) - 1));
      return v.choices[c];
    }
    case ModelVariable::Type::kContinuous: {
      double lo = from_internal(v, v.low);
      return std::clamp(from_internal(v, std::clamp(x, v.low, v.high)), lo, v.value_high);
    }
    case ModelVariable::Type::kDiscrete: {
      double k = std::clamp(std::round(from_internal(v, std::clamp(x, v.low, v.high)) / v.q), v.kmin, v.kmax);
      if (v.integer) return static_cast<int64_t>(k) * static_cast<int64_t>(v.q);
      return multiple_of(k, v.q);
    }
  }
  return nullptr;
}

double ModelSpace::snap(size_t i, double x) const {
  const ModelVariable& v = variables_[i];
  if (v.type == ModelVariable::Type::kContinuous) return std::clamp(x, v.low, v.high);
  if (v.type == ModelVariable::Type::kCategorical)
    return std::clamp(std::round(x), 0.0, static_cast<double>(v.choices.size()) - 1);
  double k = std::clamp(std::round(from_internal(v, std::clamp(x, v.low, v.high)) / v.q), v.kmin, v.kmax);
  return to_internal(v, v.integer ? k * v.q : multiple_of(k, v.q));
}

std::optional<std::vector<double>> ModelSpace::encode(const Json& config) const {
  std::vector<double> u(static_cast<size_t>(unit_dims_), 0.0);
  for (size_t i = 0; i < variables_.size(); ++i) {
    const ModelVariable& v = variables_[i];
    std::optional<double> x = internal(i, config);
    if (!x) return std::nullopt;
    if (v.type == ModelVariable::Type::kCategorical) {
      if (v.choices.size() > 1) u[offsets_[i] + static_cast<size_t>(*x)] = 1.0;
    } else {
      u[offsets_[i]] = v.high > v.low ? (*x - v.low) / (v.high - v.low) : 0.5;
    }
  }
  return u;
}

Json ModelSpace::config_from_internal(const std::vector<double>& internal) const {
  Json fixed = Json::object();
  for (size_t i = 0; i < variables_.size(); ++i) set_path(fixed, variables_[i].path, value(i, internal[i]));
  std::mt19937_64 unused(0);  // every sampled parameter is fixed
  return space_.resolve(0, unused, fixed);
}

Json ModelSpace::decode(const std::vector<double>& u) const {
  std::vector<double> internal(variables_.size());
  for (size_t i = 0; i < variables_.size(); ++i) {
    const ModelVariable& v = variables_[i];
    if (v.type == ModelVariable::Type::kCategorical) {
      size_t best = 0;
      if (v.choices.size() > 1)
        for (size_t c = 1; c < v.choices.size(); ++c)
          if (u[offsets_[i] + c] > u[offsets_[i] + best]) best = c;
      internal[i] = static_cast<double>(best);
    } else {
      internal[i] = v.low + std::clamp(u[offsets_[i]], 0.0, 1.0) * (v.high - v.low);
    }
  }
  return config_from_internal(internal);
}

std::vector<double> ModelSpace::snap_unit(const std::vector<double>& u) const {
  std::vector<double> out(u.size(), 0.0);
  for (size_t i = 0; i < variables_.size(); ++i) {
    const ModelVariable& v = variables_[i];
    const size_t o = offsets_[i];
    if (v.type == ModelVariable::Type::kCategorical) {
      if (v.choices.size() < 2) continue;
      size_t best = 0;
      for (size_t c = 1; c < v.choices.size(); ++c)
        if (u[o + c] > u[o + best]) best = c;
      out[o + best] = 1.0;
    } else if (v.high > v.low) {
      double x = snap(i, v.low + std::clamp(u[o], 0.0, 1.0) * (v.high - v.low));
      out[o] = std::clamp((x - v.low) / (v.high - v.low), 0.0, 1.0);
    } else {
      out[o] = 0.5;
    }
  }
  return out;
}

std::optional<double> observed_loss(const Observation& o, const std::string& metric, const std::string& mode) {
  if (o.error || !o.last_result.is_object()) return std::nullopt;
  const Json* value = find_path(o.last_result, metric);
  if (!value) {
    auto it = o.last_result.find(metric);
    if (it != o.last_result.end()) value = &*it;
  }
  if (!value || !value->is_number()) return std::nullopt;
  const double x = value->get<double>();
  if (!std::isfinite(x)) return std::nullopt;
  return mode == "max" ? -x : x;
}

std::vector<ScoredTrial> score_trials(const std::vector<Observation>& observations, const std::string& metric,
                                      const std::string& mode) {
  std::vector<ScoredTrial> out;
  for (const auto& o : observations) {
    ScoredTrial t;
    t.index = o.trial_index;
    t.config = o.config;
    if (auto loss = observed_loss(o, metric, mode)) {
      t.ok = true;
      t.loss = *loss;
    }
    if (!o.error && o.last_result.is_object()) {
      auto it = o.last_result.find("training_iteration");
      if (it != o.last_result.end() && it->is_number()) t.budget = it->get<double>();
    }
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const ScoredTrial& a, const ScoredTrial& b) { return a.index < b.index; });
  double top = -std::numeric_limits<double>::infinity();
  for (const auto& t : out)
    if (t.ok) top = std::max(top, t.budget);
  for (auto& t : out) t.below_full_budget = t.ok && t.budget < top;
  return out;
}

std::mt19937_64 make_rng(uint64_t seed, uint64_t stream, uint64_t index) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(stream),
                    static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32)};
  return std::mt19937_64(seq);
}

OptionReader search_option_reader(const Json& params, const std::vector<std::string>& allowed,
                                  const std::string& algorithm) {
  if (!params.is_object()) throw ConfigError::at("search", "search options must be a mapping, got " + params.dump());
  OptionStyle style;
  style.label = "search.";
  style.bounds_as_json = true;
  OptionReader reader(params, "search", style);
  if (auto key = reader.unknown_key(allowed)) {
    std::vector<std::string> known = {"algorithm", "seed"};
    known.insert(known.end(), allowed.begin(), allowed.end());
    std::string hint = closest_match(*key, known);
    throw ConfigError::at_key("search." + *key,
                              "unknown key '" + *key + "' in search (" +
                                  (!hint.empty()      ? "did you mean '" + hint + "'?"
                                   : allowed.empty() ? "algorithm '" + algorithm + "' takes only algorithm and seed"
                                                     : "algorithm '" + algorithm + "' takes " + join_names(allowed)) +
                                  ")");
  }
  return reader;
}

}  // namespace tune::internal
