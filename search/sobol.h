// Scrambled Sobol points in [0, 1)^d (Boost.Random's sobol_engine with a
// random digital shift drawn from the seed). point(i) is a pure function of
// (dimensions, seed, i): random access, so concurrent and resumed searchers
// get the same design.
#pragma once

#include <cstdint>
#include <vector>

namespace tune {

class SobolSequence {
 public:
  // dimensions in [1, 3667] (Boost's direction-number table); throws tune::Error otherwise.
  SobolSequence(int dimensions, uint64_t seed);
  std::vector<double> point(uint64_t index) const;
  int dimensions() const { return dimensions_; }

 private:
  int dimensions_;
  std::vector<uint32_t> shift_;
};

}  // namespace tune
