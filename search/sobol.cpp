#include "search/sobol.h"

#include <random>
#include <string>

#include <boost/random/sobol.hpp>

#include "base/error.h"

namespace tune {

SobolSequence::SobolSequence(int dimensions, uint64_t seed) : dimensions_(dimensions) {
  if (dimensions < 1 || dimensions > 3667)
    throw Error("SobolSequence: dimensions must be in [1, 3667], got " + std::to_string(dimensions));
  std::mt19937_64 rng(seed);
  for (int j = 0; j < dimensions; ++j) shift_.push_back(static_cast<uint32_t>(rng() >> 32));
}

std::vector<double> SobolSequence::point(uint64_t index) const {
  boost::random::sobol_engine<uint32_t, 32> engine(static_cast<std::size_t>(dimensions_));
  engine.seed(static_cast<uint32_t>(index));
  std::vector<double> out(static_cast<size_t>(dimensions_));
  for (int j = 0; j < dimensions_; ++j) {
    uint32_t bits = engine() ^ shift_[static_cast<size_t>(j)];
    out[static_cast<size_t>(j)] = (static_cast<double>(bits) + 0.5) / 4294967296.0;
  }
  return out;
}

std::vector<std::vector<double>> SobolSequence::points(uint64_t first, size_t count) const {
  boost::random::sobol_engine<uint32_t, 32> engine(static_cast<std::size_t>(dimensions_));
  engine.seed(static_cast<uint32_t>(first));
  std::vector<std::vector<double>> out(count, std::vector<double>(static_cast<size_t>(dimensions_)));
  for (auto& p : out)
    for (int j = 0; j < dimensions_; ++j) {
      uint32_t bits = engine() ^ shift_[static_cast<size_t>(j)];
      p[static_cast<size_t>(j)] = (static_cast<double>(bits) + 0.5) / 4294967296.0;
    }
  return out;
}

}  // namespace tune
