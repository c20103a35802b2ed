#include "core/random.h"

#include <cmath>
#include <cstring>
#include <numbers>

namespace lockstep::random {

namespace {

constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;    // Philox4x32 multipliers
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // key schedule increments
constexpr double kTwoPow32Inv = 1.0 / 4294967296.0;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// splitmix64's finaliser: spreads every seed bit over the whole key.
uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

PhiloxCounter block(uint64_t index, uint64_t key) {
  return philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0},
                       {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
}

inline double unit(uint32_t word) { return (static_cast<double>(word) + 0.5) * kTwoPow32Inv; }

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], hi0, lo0);
    mulhilo(kMul1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 0x100000001B3ull;
  }
  return h;
}

uint64_t stream_key(uint64_t seed, std::string_view node_name) { return mix64(mix64(seed) ^ fnv1a64(node_name)); }

uint64_t op_seed(bool has_seed_attribute, float seed_attribute, uint64_t run_seed) {
  if (!has_seed_attribute) return run_seed;
  const double s = seed_attribute;
  if (std::isfinite(s) && s == std::trunc(s) && std::fabs(s) < 9.2e18)
    return static_cast<uint64_t>(static_cast<int64_t>(s));
  uint32_t bits;
  std::memcpy(&bits, &seed_attribute, sizeof bits);
  return 0x8000000000000000ull | bits;  // outside the integral seeds that fit the float exactly
}

void fill_uniform(float* out, int64_t first, int64_t count, uint64_t key, double low, double high) {
  const double range = high - low;
  for (int64_t j = 0; j < count;) {
    const auto i = static_cast<uint64_t>(first + j);
    const PhiloxCounter w = block(i / 4, key);
    for (uint64_t word = i % 4; word < 4 && j < count; ++word, ++j)
      out[j] = static_cast<float>(low + range * unit(w[word]));
  }
}

void fill_normal(float* out, int64_t first, int64_t count, uint64_t key, double mean, double scale) {
  constexpr double kTwoPi = 2.0 * std::numbers::pi;
  for (int64_t j = 0; j < count;) {
    const auto i = static_cast<uint64_t>(first + j);
    const PhiloxCounter w = block(i / 4, key);
    double z[4];
    for (int p = 0; p < 2; ++p) {
      const double r = std::sqrt(-2.0 * std::log(unit(w[2 * p])));
      const double theta = kTwoPi * unit(w[2 * p + 1]);
      z[2 * p] = r * std::cos(theta);
      z[2 * p + 1] = r * std::sin(theta);
    }
    for (uint64_t word = i % 4; word < 4 && j < count; ++word, ++j)
      out[j] = static_cast<float>(mean + scale * z[word]);
  }
}

}  // namespace lockstep::random
