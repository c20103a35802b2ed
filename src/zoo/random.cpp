#include "zoo/random.h"

#include <cmath>
#include <numbers>

namespace lockstep::zoo {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

NormalGenerator::NormalGenerator(uint64_t seed) {
  for (uint64_t& s : s_) s = splitmix64(seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t NormalGenerator::next_u64() {
  uint64_t result = rotl(s_[1] * 5, 7) * 9;
  uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double NormalGenerator::next_uniform() { return static_cast<double>((next_u64() >> 11) + 1) * 0x1.0p-53; }

double NormalGenerator::next_normal() {
  if (have_spare_) {
    have_spare_ = false;
    return spare_;
  }
  double r = std::sqrt(-2.0 * std::log(next_uniform()));
  double theta = 2.0 * std::numbers::pi * next_uniform();
  spare_ = r * std::sin(theta);
  have_spare_ = true;
  return r * std::cos(theta);
}

}  // namespace lockstep::zoo
