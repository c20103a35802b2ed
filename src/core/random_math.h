// The per-element arithmetic of the one random generator (random.h), written once for the host
// (random.cpp) and the CUDA kernels (backends/cuda/random.cu): Philox4x32-10, the key mixing, and
// the uniform and Box-Muller transforms. The transforms use only IEEE operations that both sides
// round the same way (+, -, *, /, sqrt, never fused into an FMA: random.cpp is built with
// -ffp-contract=off, the device side calls the _rn intrinsics), not libm's log/sin/cos, whose last
// bits differ between glibc and CUDA. So a value drawn on the GPU has the host's bits.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define LOCKSTEP_RANDOM_HD __host__ __device__ inline
#else
#define LOCKSTEP_RANDOM_HD inline
#include <cmath>
#endif

namespace lockstep::random::math {

// Correctly rounded double operations, never contracted.
LOCKSTEP_RANDOM_HD double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
LOCKSTEP_RANDOM_HD double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
LOCKSTEP_RANDOM_HD double div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
LOCKSTEP_RANDOM_HD double sqrt_rn(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
LOCKSTEP_RANDOM_HD int leading_zeros(uint64_t x) {  // x > 0
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}

struct Block {
  uint32_t w[4];
};

// One Philox4x32-10 block (Random123's philox4x32, 10 rounds).
LOCKSTEP_RANDOM_HD Block philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0, p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Element i of a stream comes from block i / 4 (counter {block lo, block hi, 0, 0}).
LOCKSTEP_RANDOM_HD Block stream_block(uint64_t index, uint64_t key) {
  return philox(static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0, static_cast<uint32_t>(key),
                static_cast<uint32_t>(key >> 32));
}

// splitmix64's finaliser: spreads every seed bit over the whole key.
LOCKSTEP_RANDOM_HD uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The key of an op's stream from its seed and the FNV-1a hash of its ONNX node name.
LOCKSTEP_RANDOM_HD uint64_t stream_key(uint64_t seed, uint64_t name_hash) { return mix64(mix64(seed) ^ name_hash); }

// (word + 0.5) 2^-32: in (0, 1), exact in double.
LOCKSTEP_RANDOM_HD double unit(uint32_t word) { return mul(add(static_cast<double>(word), 0.5), 1.0 / 4294967296.0); }

// ln((word + 0.5) 2^-32) = ln(v 2^-33) with v = 2 word + 1: v = m 2^e, m in [sqrt(1/2), sqrt(2)),
// ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716, the odd series to s^21 (the next term
// is below 2^-53 of the sum). m - 1 and m + 1 are exact; the error is a few double ulps.
LOCKSTEP_RANDOM_HD double log_unit(uint32_t word) {
  const uint64_t v = 2 * static_cast<uint64_t>(word) + 1;
  int e = 63 - leading_zeros(v);  // 2^e <= v < 2^(e+1)
  double m = div(static_cast<double>(v), static_cast<double>(uint64_t{1} << e));  // exact, [1, 2)
  if (m > 1.4142135623730951) {
    m = mul(m, 0.5);
    e += 1;
  }
  const double s = div(add(m, -1.0), add(m, 1.0));
  const double s2 = mul(s, s);
  double p = 2.0 / 21;
  p = add(mul(p, s2), 2.0 / 19);
  p = add(mul(p, s2), 2.0 / 17);
  p = add(mul(p, s2), 2.0 / 15);
  p = add(mul(p, s2), 2.0 / 13);
  p = add(mul(p, s2), 2.0 / 11);
  p = add(mul(p, s2), 2.0 / 9);
  p = add(mul(p, s2), 2.0 / 7);
  p = add(mul(p, s2), 2.0 / 5);
  p = add(mul(p, s2), 2.0 / 3);
  const double ln_m = add(mul(2.0, s), mul(mul(s, s2), p));
  // (e - 33) ln 2 with ln 2 split so that the product of its high part is exact (|e - 33| <= 33).
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // fdlibm's ln2_hi: 0x3fe62e42fee00000
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double k = static_cast<double>(e - 33);
  return add(mul(k, kLn2Hi), add(mul(k, kLn2Lo), ln_m));
}

// cos and sin of 2 pi (word + 0.5) 2^-32 = 2 pi v 2^-33 (v = 2 word + 1): the quadrant q and the
// remainder f in [-1/8, 1/8] of turns are exact integer arithmetic, x = 2 pi f in [-pi/4, pi/4],
// Taylor series to x^19 (sin) and x^18 (cos), whose next terms are below 2^-53.
LOCKSTEP_RANDOM_HD void cos_sin_turn(uint32_t word, double& c, double& s) {
  const int64_t v = 2 * static_cast<int64_t>(word) + 1;
  const int64_t q = (v + (int64_t{1} << 30)) >> 31;  // nearest quarter turn, 0..4
  const int64_t r = v - (q << 31);                    // |r| <= 2^30
  const double x = mul(6.283185307179586476925286766559, mul(static_cast<double>(r), 1.0 / 8589934592.0));
  const double x2 = mul(x, x);
  double ps = -1.0 / 121645100408832000.0;  // -1/19!
  ps = add(mul(ps, x2), 1.0 / 355687428096000.0);
  ps = add(mul(ps, x2), -1.0 / 1307674368000.0);
  ps = add(mul(ps, x2), 1.0 / 6227020800.0);
  ps = add(mul(ps, x2), -1.0 / 39916800.0);
  ps = add(mul(ps, x2), 1.0 / 362880.0);
  ps = add(mul(ps, x2), -1.0 / 5040.0);
  ps = add(mul(ps, x2), 1.0 / 120.0);
  ps = add(mul(ps, x2), -1.0 / 6.0);
  const double sx = add(x, mul(mul(x, x2), ps));
  double pc = -1.0 / 6402373705728000.0;  // -1/18!
  pc = add(mul(pc, x2), 1.0 / 20922789888000.0);
  pc = add(mul(pc, x2), -1.0 / 87178291200.0);
  pc = add(mul(pc, x2), 1.0 / 479001600.0);
  pc = add(mul(pc, x2), -1.0 / 3628800.0);
  pc = add(mul(pc, x2), 1.0 / 40320.0);
  pc = add(mul(pc, x2), -1.0 / 720.0);
  pc = add(mul(pc, x2), 1.0 / 24.0);
  pc = add(mul(pc, x2), -0.5);
  const double cx = add(1.0, mul(x2, pc));
  switch (q & 3) {
    case 0: c = cx, s = sx; break;
    case 1: c = -sx, s = cx; break;
    case 2: c = -cx, s = -sx; break;
    default: c = sx, s = -cx; break;
  }
}

// Element `word` (0..3) of a block as a uniform in [low, low + range): low + range u.
LOCKSTEP_RANDOM_HD float uniform_value(const Block& b, int word, double low, double range) {
  return static_cast<float>(add(low, mul(range, unit(b.w[word]))));
}

// The block's four normals: words (0,1) and (2,3) are Box-Muller pairs, r = sqrt(-2 ln u0),
// z = r cos(2 pi u1) (even element), r sin(2 pi u1) (odd); value = float(mean + scale z).
LOCKSTEP_RANDOM_HD void normal_values(const Block& b, double mean, double scale, float out[4]) {
  for (int p = 0; p < 2; ++p) {
    const double r = sqrt_rn(mul(-2.0, log_unit(b.w[2 * p])));
    double c, s;
    cos_sin_turn(b.w[2 * p + 1], c, s);
    out[2 * p] = static_cast<float>(add(mean, mul(scale, mul(r, c))));
    out[2 * p + 1] = static_cast<float>(add(mean, mul(scale, mul(r, s))));
  }
}

}  // namespace lockstep::random::math
