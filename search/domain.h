// Domains: the distributions a hyperparameter is drawn from.
//
// Semantics follow Ray Tune (see README "Search space"):
//   uniform(a, b)          float in [a, b)                       a < b
//   quniform(a, b, q)      round(uniform(a, b) / q) * q          a < b, q > 0
//   loguniform(a, b)       exp(uniform(ln a, ln b))              0 < a < b
//   qloguniform(a, b, q)   round(loguniform(a, b) / q) * q        0 < a < b, q > 0
//   randint(a, b)          integer in [a, b)   (upper EXCLUSIVE) a < b
//   qrandint(a, b, q)      integer in [a, b] multiple of q (upper INCLUSIVE), q >= 1
//   lograndint(a, b)       integer in [a, b), log-uniform          1 <= a < b
//   qlograndint(a, b, q)   integer in [a, b] (inclusive), log-uniform, multiple of q
//   randn(mean, sd)        normal, sd > 0; qrandn(mean, sd, q) quantized
//   choice([v...])         one of the values, uniformly           non-empty
//   grid_search([v...])    every value, in order (expanded by the searcher)
//
// Usage (C++):
//   tune::SearchSpace space;
//   space.add("lr", tune::loguniform(1e-5, 1e-1))
//        .add("model.width", tune::qrandint(16, 256, 16));
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/json.h"

namespace tune {

// SplitMix64 (Steele, Lea, Flood 2014): a generator whose whole state is one
// word. The random searcher draws each trial's config from a fresh one, seeded
// by (seed, trial index): a std::mt19937_64 spent ~13k instructions a trial
// filling and twisting its 312 words before its first draw (~7 % of what a
// trivial trial costs the driver). A UniformRandomBitGenerator for <random>'s
// distributions; passes BigCrush (its authors' and later tests).
class SplitMix64 {
 public:
  using result_type = uint64_t;
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() { return finalize(state_ += 0x9e3779b97f4a7c15ULL); }
  // The output function alone: a bijection that spreads every input bit
  // over the output (for seeds made of several numbers).
  static uint64_t finalize(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

struct Domain {
  enum class Kind { kFloat, kInt, kNormal, kChoice, kGrid };

  Kind kind = Kind::kFloat;
  std::string name;          // the spelling in the sweep file: "uniform", "qrandint", ...
  double low = 0, high = 1;      // kFloat, kInt: the user's bounds as written
  bool upper_inclusive = false;  // kInt: true for qrandint/qlograndint (Ray's rule)
  bool log = false;              // kFloat, kInt
  double q = 0;                  // quantum; 0 = none
  double mean = 0, sd = 1;       // kNormal
  std::vector<Json> values;      // kChoice, kGrid

  // Draws one value. kGrid is not sampled (throws tune::Error); the searcher
  // assigns grid values. Thread-compatible (const). Rng: std::mt19937_64 or
  // SplitMix64 (domain.cpp instantiates those two).
  template <class Rng>
  Json sample(Rng& rng) const;

  // Throws tune::ConfigError (without file/line) when the bounds are invalid.
  void validate() const;

  // {"uniform": [a, b]} style, the same shape the sweep file uses.
  Json to_json() const;
};

// Builders; each validates and throws tune::ConfigError on bad bounds.
Domain uniform(double low, double high);
Domain quniform(double low, double high, double q);
Domain loguniform(double low, double high);
Domain qloguniform(double low, double high, double q);
Domain randint(int64_t low, int64_t high);
Domain qrandint(int64_t low, int64_t high, int64_t q = 1);
Domain lograndint(int64_t low, int64_t high);
Domain qlograndint(int64_t low, int64_t high, int64_t q = 1);
Domain randn(double mean = 0, double sd = 1);
Domain qrandn(double mean, double sd, double q);
Domain choice(std::vector<Json> values);
Domain grid_search(std::vector<Json> values);

// Builds a domain from its sweep-file spelling, e.g. ("loguniform", [1e-5, 1e-1]).
// Throws tune::ConfigError (no file/line; the caller adds them).
Domain make_domain(const std::string& name, const Json& args);

// The multiple of q nearest to v inside [low, high] (a multiple of q must lie
// there), printed cleanly (0.1 * 3 = 0.3). The rule quniform/qloguniform use.
double quantize_value(double v, double low, double high, double q);
// k * q without binary noise for short decimal q (k = 3, q = 0.1 -> 0.3).
double multiple_of(double k, double q);

// The names make_domain accepts, for "did you mean" suggestions.
const std::vector<std::string>& domain_names();

}  // namespace tune
