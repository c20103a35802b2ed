#include "core/random.h"

#include <cmath>
#include <cstring>

#include "core/random_math.h"

namespace lockstep::random {

PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  const math::Block b = math::philox(c[0], c[1], c[2], c[3], k[0], k[1]);
  return {b.w[0], b.w[1], b.w[2], b.w[3]};
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 0x100000001B3ull;
  }
  return h;
}

uint64_t stream_key(uint64_t seed, std::string_view node_name) { return math::stream_key(seed, fnv1a64(node_name)); }

uint64_t op_seed(bool has_seed_attribute, float seed_attribute, uint64_t run_seed) {
  if (!has_seed_attribute) return run_seed;
  const double s = seed_attribute;
  if (std::isfinite(s) && s == std::trunc(s) && std::fabs(s) < 9.2e18)
    return static_cast<uint64_t>(static_cast<int64_t>(s));
  uint32_t bits;
  std::memcpy(&bits, &seed_attribute, sizeof bits);
  return 0x8000000000000000ull | bits;  // outside the integral seeds that fit the float exactly
}

// The per-element arithmetic is random_math.h's, shared with the CUDA kernels (this file is built
// with -ffp-contract=off, so the host rounds every operation as the device's _rn intrinsics do).
void fill_uniform(float* out, int64_t first, int64_t count, uint64_t key, double low, double high) {
  const double range = high - low;
  for (int64_t j = 0; j < count;) {
    const auto i = static_cast<uint64_t>(first + j);
    const math::Block b = math::stream_block(i / 4, key);
    for (uint64_t word = i % 4; word < 4 && j < count; ++word, ++j)
      out[j] = math::uniform_value(b, static_cast<int>(word), low, range);
  }
}

void fill_normal(float* out, int64_t first, int64_t count, uint64_t key, double mean, double scale) {
  for (int64_t j = 0; j < count;) {
    const auto i = static_cast<uint64_t>(first + j);
    float z[4];
    math::normal_values(math::stream_block(i / 4, key), mean, scale, z);
    for (uint64_t word = i % 4; word < 4 && j < count; ++word, ++j) out[j] = z[word];
  }
}

}  // namespace lockstep::random
