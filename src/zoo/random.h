// A portable normal generator: the same seed gives the same floats with every compiler and
// standard library (std::normal_distribution does not), so the embedded default is one graph.
#pragma once

#include <cstdint>
#include <string_view>

namespace lockstep::zoo {

uint64_t splitmix64(uint64_t& state);
uint64_t fnv1a64(std::string_view text);

// xoshiro256** seeded by splitmix64; normals by Box–Muller in double.
class NormalGenerator {
 public:
  explicit NormalGenerator(uint64_t seed);
  uint64_t next_u64();
  double next_uniform();  // in (0, 1]
  double next_normal();   // N(0, 1)

 private:
  uint64_t s_[4];
  bool have_spare_ = false;
  double spare_ = 0;
};

}  // namespace lockstep::zoo
