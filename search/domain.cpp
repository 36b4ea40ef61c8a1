#include "search/domain.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace tune {
namespace {

// Shortest text for a bound in messages: 5 rather than 5.0, 1e-05 as JSON does.
std::string num(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    return std::to_string(static_cast<int64_t>(v));
  return Json(v).dump();
}

std::string bounds(double low, double high) { return "[" + num(low) + ", " + num(high) + "]"; }

bool is_whole(double v) { return std::isfinite(v) && v == std::floor(v); }

constexpr double kMaxExactInt = 9007199254740992.0;  // 2^53

// Number of decimals of q (0.1 -> 1, 0.25 -> 2, 5 -> 0), or -1 when q has no
// short decimal form (e.g. 1/3).
int decimals_of(double q) {
  double scale = 1;
  for (int d = 0; d <= 12; ++d, scale *= 10) {
    double scaled = q * scale;
    if (std::fabs(scaled - std::round(scaled)) <= 1e-9 * std::max(1.0, scaled)) return d;
  }
  return -1;
}

// Range of multipliers k with k*q inside [low, high]; the tolerance absorbs
// binary error such as 0.6 / 0.1 = 5.999999999999999.
std::pair<double, double> multiples(double low, double high, double q) {
  return {std::ceil(low / q - 1e-9), std::floor(high / q + 1e-9)};
}

// k*q printed cleanly: for q = 0.1 and k = 3 gives 0.3, not 0.30000000000000004.
double times_q(double k, double q) {
  int d = decimals_of(q);
  if (d < 0) return k * q;
  double scale = std::pow(10.0, d);
  return k * std::round(q * scale) / scale;
}

double quantize(double v, double low, double high, double q) {
  auto [kmin, kmax] = multiples(low, high, q);
  double k = std::clamp(std::round(v / q), kmin, kmax);
  return std::clamp(times_q(k, q), low, high);
}

// uniform_real_distribution can return its upper bound through rounding.
template <class Rng>
double uniform_in(Rng& rng, double low, double high) {
  double v = std::uniform_real_distribution<double>(low, high)(rng);
  return v < high ? v : std::nextafter(high, low);
}

Domain numeric(Domain::Kind kind, const char* name, double low, double high, double q, bool log,
               bool upper_inclusive) {
  Domain d;
  d.kind = kind;
  d.name = name;
  d.low = low;
  d.high = high;
  d.q = q;
  d.log = log;
  d.upper_inclusive = upper_inclusive;
  d.validate();
  return d;
}

}  // namespace

double quantize_value(double v, double low, double high, double q) { return quantize(v, low, high, q); }
double multiple_of(double k, double q) { return times_q(k, q); }

template <class Rng>
Json Domain::sample(Rng& rng) const {
  switch (kind) {
    case Kind::kFloat: {
      double v = log ? std::exp(uniform_in(rng, std::log(low), std::log(high))) : uniform_in(rng, low, high);
      if (q > 0) return quantize(v, low, high, q);
      return std::clamp(v, low, std::nextafter(high, low));  // exp(log x) may drift past a bound
    }
    case Kind::kInt: {
      if (!upper_inclusive) {  // randint, lograndint: [low, high)
        auto lo = static_cast<int64_t>(low), hi = static_cast<int64_t>(high);
        if (!log) return std::uniform_int_distribution<int64_t>(lo, hi - 1)(rng);
        auto v = static_cast<int64_t>(std::floor(std::exp(uniform_in(rng, std::log(low), std::log(high)))));
        return std::clamp(v, lo, hi - 1);
      }
      double step = q > 0 ? q : 1;
      auto [kmin, kmax] = multiples(low, high, step);
      double k;
      if (log) {
        k = std::clamp(std::round(std::exp(uniform_in(rng, std::log(low), std::log(high))) / step), kmin, kmax);
      } else {
        k = static_cast<double>(std::uniform_int_distribution<int64_t>(
            static_cast<int64_t>(kmin), static_cast<int64_t>(kmax))(rng));
      }
      return static_cast<int64_t>(k) * static_cast<int64_t>(step);
    }
    case Kind::kNormal: {
      double v = std::normal_distribution<double>(mean, sd)(rng);
      return q > 0 ? times_q(std::round(v / q), q) : v;
    }
    case Kind::kChoice:
      return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
    case Kind::kGrid:
      throw Error("grid_search values are assigned by the searcher, not sampled");
  }
  throw Error("domain '" + name + "' has an unknown kind");
}

template Json Domain::sample(std::mt19937_64& rng) const;
template Json Domain::sample(SplitMix64& rng) const;

void Domain::validate() const {
  const std::string& n = name;
  switch (kind) {
    case Kind::kFloat:
    case Kind::kInt: {
      if (!std::isfinite(low) || !std::isfinite(high))
        throw ConfigError(n + ": bounds must be finite, got " + bounds(low, high));
      if (kind == Kind::kInt && (!is_whole(low) || !is_whole(high)))
        throw ConfigError(n + ": bounds must be integers, got " + bounds(low, high));
      // Bounds are held as doubles: integers beyond 2^53 are not exact (and
      // 2^63 does not fit an int64 at all).
      if (kind == Kind::kInt && (std::fabs(low) > kMaxExactInt || std::fabs(high) > kMaxExactInt))
        throw ConfigError(n + ": bounds must be integers between -2^53 and 2^53 (9007199254740992), got " +
                          bounds(low, high));
      if (log && low <= 0) throw ConfigError(n + ": bounds must be positive, got " + bounds(low, high));
      if (!(low < high))
        throw ConfigError(n + ": lower bound " + num(low) + " must be less than upper bound " + num(high));
      if (!log && !std::isfinite(high - low))  // sampling computes high - low
        throw ConfigError(n + ": the range " + bounds(low, high) + " is too wide (upper - lower overflows a double)");
      if (q < 0 || !std::isfinite(q)) throw ConfigError(n + ": q must be positive, got " + num(q));
      if (kind == Kind::kInt && q != 0 && (!is_whole(q) || q < 1))
        throw ConfigError(n + ": q must be a positive integer, got " + num(q));
      if (q > 0 || (kind == Kind::kInt && upper_inclusive)) {
        auto [kmin, kmax] = multiples(low, high, q > 0 ? q : 1);
        if (kmin > kmax) throw ConfigError(n + ": no multiple of q=" + num(q) + " lies in " + bounds(low, high));
      }
      return;
    }
    case Kind::kNormal:
      if (!std::isfinite(mean)) throw ConfigError(n + ": mean must be finite, got " + num(mean));
      if (!(sd > 0) || !std::isfinite(sd)) throw ConfigError(n + ": sd must be positive, got " + num(sd));
      if (q < 0 || !std::isfinite(q)) throw ConfigError(n + ": q must be positive, got " + num(q));
      return;
    case Kind::kChoice:
    case Kind::kGrid:
      if (values.empty()) throw ConfigError(n + ": needs at least one value");
      return;
  }
}

Json Domain::to_json() const {
  Json args = Json::array();
  auto add_q = [&](Json& a) {
    if (q > 0) a.push_back(kind == Kind::kInt ? Json(static_cast<int64_t>(q)) : Json(q));
  };
  switch (kind) {
    case Kind::kFloat:
      args = {low, high};
      add_q(args);
      break;
    case Kind::kInt:
      args = {static_cast<int64_t>(low), static_cast<int64_t>(high)};
      add_q(args);
      break;
    case Kind::kNormal:
      args = {mean, sd};
      add_q(args);
      break;
    case Kind::kChoice:
    case Kind::kGrid:
      args = Json(values);
      break;
  }
  return Json{{name, args}};
}

Domain uniform(double low, double high) {
  return numeric(Domain::Kind::kFloat, "uniform", low, high, 0, false, false);
}
Domain quniform(double low, double high, double q) {
  if (!(q > 0)) throw ConfigError("quniform: q must be positive, got " + num(q));
  return numeric(Domain::Kind::kFloat, "quniform", low, high, q, false, false);
}
Domain loguniform(double low, double high) {
  return numeric(Domain::Kind::kFloat, "loguniform", low, high, 0, true, false);
}
Domain qloguniform(double low, double high, double q) {
  if (!(q > 0)) throw ConfigError("qloguniform: q must be positive, got " + num(q));
  return numeric(Domain::Kind::kFloat, "qloguniform", low, high, q, true, false);
}
Domain randint(int64_t low, int64_t high) {
  return numeric(Domain::Kind::kInt, "randint", low, high, 0, false, false);
}
Domain qrandint(int64_t low, int64_t high, int64_t q) {
  if (q < 1) throw ConfigError("qrandint: q must be a positive integer, got " + std::to_string(q));
  return numeric(Domain::Kind::kInt, "qrandint", low, high, q, false, true);
}
Domain lograndint(int64_t low, int64_t high) {
  return numeric(Domain::Kind::kInt, "lograndint", low, high, 0, true, false);
}
Domain qlograndint(int64_t low, int64_t high, int64_t q) {
  if (q < 1) throw ConfigError("qlograndint: q must be a positive integer, got " + std::to_string(q));
  return numeric(Domain::Kind::kInt, "qlograndint", low, high, q, true, true);
}

namespace {
Domain normal(const char* name, double mean, double sd, double q) {
  Domain d;
  d.kind = Domain::Kind::kNormal;
  d.name = name;
  d.mean = mean;
  d.sd = sd;
  d.q = q;
  d.validate();
  return d;
}
Domain listed(Domain::Kind kind, const char* name, std::vector<Json> values) {
  Domain d;
  d.kind = kind;
  d.name = name;
  d.values = std::move(values);
  d.validate();
  return d;
}
}  // namespace

Domain randn(double mean, double sd) { return normal("randn", mean, sd, 0); }
Domain qrandn(double mean, double sd, double q) {
  if (!(q > 0)) throw ConfigError("qrandn: q must be positive, got " + num(q));
  return normal("qrandn", mean, sd, q);
}
Domain choice(std::vector<Json> values) { return listed(Domain::Kind::kChoice, "choice", std::move(values)); }
Domain grid_search(std::vector<Json> values) {
  return listed(Domain::Kind::kGrid, "grid_search", std::move(values));
}

namespace {

struct Signature {
  const char* name;
  std::vector<const char*> params;  // positional order; also the object-form keys
  size_t required;
  bool integer;
};

const std::vector<Signature>& signatures() {
  static const std::vector<Signature> table = {
      {"uniform", {"lower", "upper"}, 2, false},          {"quniform", {"lower", "upper", "q"}, 3, false},
      {"loguniform", {"lower", "upper"}, 2, false},       {"qloguniform", {"lower", "upper", "q"}, 3, false},
      {"randint", {"lower", "upper"}, 2, true},           {"qrandint", {"lower", "upper", "q"}, 2, true},
      {"lograndint", {"lower", "upper"}, 2, true},        {"qlograndint", {"lower", "upper", "q"}, 2, true},
      {"randn", {"mean", "sd"}, 0, false},                {"qrandn", {"mean", "sd", "q"}, 3, false},
  };
  return table;
}

std::string expected_form(const Signature& sig) {
  std::string s = "[";
  for (size_t i = 0; i < sig.params.size(); ++i) s += (i ? ", " : "") + std::string(sig.params[i]);
  return s + "]";
}

// The positional arguments of a numeric domain, from [a, b, q] or {lower: a, ...}.
std::vector<double> numeric_args(const Signature& sig, const Json& args) {
  auto fail = [&](const std::string& why) {
    throw ConfigError(std::string(sig.name) + " expects " + expected_form(sig) + why + ", got " + args.dump());
  };
  std::vector<Json> given;
  if (args.is_array()) {
    given.assign(args.begin(), args.end());
  } else if (args.is_object()) {
    for (const auto& [key, value] : args.items()) {
      auto it = std::find(sig.params.begin(), sig.params.end(), key);
      if (it == sig.params.end()) fail(" (unknown argument '" + key + "')");
      size_t i = static_cast<size_t>(it - sig.params.begin());
      if (given.size() <= i) given.resize(i + 1);
      given[i] = value;
    }
  } else {
    fail("");
  }
  if (given.size() < sig.required || given.size() > sig.params.size()) fail("");
  std::vector<double> out;
  for (const auto& v : given) {
    if (!v.is_number()) fail(args.is_object() && v.is_null() ? " (missing argument)" : "");
    double d = v.get<double>();
    if (sig.integer && !is_whole(d)) fail(" (integers)");
    if (sig.integer && std::fabs(d) > kMaxExactInt)  // before any cast to int64
      throw ConfigError(std::string(sig.name) + ": arguments must be integers between -2^53 and 2^53 (9007199254740992), got " +
                        args.dump());
    out.push_back(d);
  }
  return out;
}

}  // namespace

Domain make_domain(const std::string& name, const Json& args) {
  if (name == "choice" || name == "grid_search") {
    if (!args.is_array()) throw ConfigError(name + " expects a list of values, got " + args.dump());
    std::vector<Json> values(args.begin(), args.end());
    return name == "choice" ? choice(std::move(values)) : grid_search(std::move(values));
  }
  auto sig = std::find_if(signatures().begin(), signatures().end(),
                          [&](const Signature& s) { return name == s.name; });
  if (sig == signatures().end()) throw ConfigError("unknown domain '" + name + "'");
  std::vector<double> a = numeric_args(*sig, args);
  auto i = [&](size_t k) { return static_cast<int64_t>(a[k]); };
  if (name == "uniform") return uniform(a[0], a[1]);
  if (name == "quniform") return quniform(a[0], a[1], a[2]);
  if (name == "loguniform") return loguniform(a[0], a[1]);
  if (name == "qloguniform") return qloguniform(a[0], a[1], a[2]);
  if (name == "randint") return randint(i(0), i(1));
  if (name == "qrandint") return qrandint(i(0), i(1), a.size() > 2 ? i(2) : 1);
  if (name == "lograndint") return lograndint(i(0), i(1));
  if (name == "qlograndint") return qlograndint(i(0), i(1), a.size() > 2 ? i(2) : 1);
  if (name == "randn") return randn(a.size() > 0 ? a[0] : 0, a.size() > 1 ? a[1] : 1);
  return qrandn(a[0], a[1], a[2]);
}

const std::vector<std::string>& domain_names() {
  static const std::vector<std::string> names = {
      "uniform", "quniform", "loguniform", "qloguniform", "randint", "qrandint",
      "lograndint", "qlograndint", "randn", "qrandn", "choice", "grid_search"};
  return names;
}

}  // namespace tune
