// Scrambled Sobol points in [0, 1)^d (Boost.Random's sobol_engine with a
// random digital shift drawn from the seed). point(i) is a pure function of
// (dimensions, seed, i): random access, so concurrent and resumed searchers
// get the same design. Index i is point i + 1 of the Sobol sequence (Boost's
// engine skips the all-zero point).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tune {

class SobolSequence {
 public:
  // dimensions in [1, 3667] (Boost's direction-number table); throws tune::Error otherwise.
  SobolSequence(int dimensions, uint64_t seed);
  std::vector<double> point(uint64_t index) const;
  // points first, first + 1, ..., first + count - 1 (one engine: cheaper than
  // count calls to point()).
  std::vector<std::vector<double>> points(uint64_t first, size_t count) const;
  int dimensions() const { return dimensions_; }

 private:
  int dimensions_;
  std::vector<uint32_t> shift_;
};

}  // namespace tune
