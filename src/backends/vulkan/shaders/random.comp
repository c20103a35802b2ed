#version 450
// RandomNormal(Like)/RandomUniform(Like): the cpu's generator, element for element (core/
// random_math.h, written again here): Philox4x32-10 of block i/4 under the staged 64-bit key, then
// the uniform or Box-Muller transform in double with only +, -, *, / and sqrt, every result
// `precise` (no fma), the division and sqrt corrected from an exact (Dekker) residual, the constants
// the host's doubles. One invocation per block of four elements.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };

// Veltkamp split and Dekker's product in double: p + e == a * b exactly.
dvec2 split27(double a) {
  precise double c = 134217729.0lf * a;
  precise double hi = c - (c - a);
  precise double lo = a - hi;
  return dvec2(hi, lo);
}
dvec2 two_prod(double a, double b) {
  dvec2 as = split27(a), bs = split27(b);
  precise double p = a * b;
  precise double e = ((as.x * bs.x - p) + as.x * bs.y + as.y * bs.x) + as.y * bs.y;
  return dvec2(p, e);
}
// a / b and sqrt(a) correctly rounded (but for near ties) whatever the driver's own rounding;
// every operand here lies in [2^-70, 2^70], where the residuals neither over- nor underflow.
double div_d(double a, double b) {
  precise double q = a / b;
  dvec2 pe = two_prod(q, b);
  precise double r = (a - pe.x) - pe.y;
  precise double q2 = q + r / b;
  return q2;
}
double sqrt_d(double a) {
  precise double s = sqrt(a);
  dvec2 pe = two_prod(s, s);
  precise double r = (a - pe.x) - pe.y;
  precise double s2 = s + r / (s + s);
  return s2;
}

uvec4 philox(uvec4 c, uvec2 k) {
  for (int round = 0; round < 10; ++round) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, c.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
    c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k += uvec2(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}

// ln((word + 0.5) 2^-32) as random_math.h's log_unit: v = 2 word + 1 = m 2^e, 2 atanh series.
double log_unit(uint word) {
  const uint vhi = word >> 31, vlo = (word << 1) | 1u;
  int e = vhi != 0u ? 32 : findMSB(vlo);
  precise double v = double(vhi) * 4294967296.0lf + double(vlo);  // exact
  precise double m = v * packDouble2x32(uvec2(0u, uint(1023 - e) << 20));  // v 2^-e: exact, [1, 2)
  if (m > 1.4142135623730951lf) {
    m = m * 0.5lf;
    e += 1;
  }
  const double s = div_d(m - 1.0lf, m + 1.0lf);
  precise double s2 = s * s;
  precise double p = 0.09523809523809523lf;
  p = p * s2 + 0.10526315789473684lf;
  p = p * s2 + 0.11764705882352941lf;
  p = p * s2 + 0.13333333333333333lf;
  p = p * s2 + 0.15384615384615385lf;
  p = p * s2 + 0.18181818181818182lf;
  p = p * s2 + 0.2222222222222222lf;
  p = p * s2 + 0.2857142857142857lf;
  p = p * s2 + 0.4lf;
  p = p * s2 + 0.6666666666666666lf;
  precise double ln_m = 2.0lf * s + (s * s2) * p;
  precise double k = double(e - 33);
  precise double r = k * 6.93147180369123816490e-01lf + (k * 1.90821492927058770002e-10lf + ln_m);
  return r;
}

// cos and sin of 2 pi (word + 0.5) 2^-32 as random_math.h's cos_sin_turn: the quarter turn q
// and the remainder r = v - q 2^31 (v = 2 word + 1) in exact integer arithmetic.
dvec2 cos_sin_turn(uint word) {
  const uint q = (word >> 30) + (((word & 0x3fffffffu) + 0x20000000u) >> 30);  // (v + 2^30) >> 31
  const int r = 2 * int(word - (q << 30)) + 1;                                 // |r| <= 2^30
  precise double x = 6.283185307179586lf * (double(r) * 1.1641532182693481e-10lf);
  precise double x2 = x * x;
  precise double ps = -8.22063524662433e-18lf;
  ps = ps * x2 + 2.8114572543455206e-15lf;
  ps = ps * x2 + -7.647163731819816e-13lf;
  ps = ps * x2 + 1.6059043836821613e-10lf;
  ps = ps * x2 + -2.505210838544172e-08lf;
  ps = ps * x2 + 2.7557319223985893e-06lf;
  ps = ps * x2 + -0.0001984126984126984lf;
  ps = ps * x2 + 0.008333333333333333lf;
  ps = ps * x2 + -0.16666666666666666lf;
  precise double sx = x + (x * x2) * ps;
  precise double pc = -1.5619206968586225e-16lf;
  pc = pc * x2 + 4.779477332387385e-14lf;
  pc = pc * x2 + -1.1470745597729725e-11lf;
  pc = pc * x2 + 2.08767569878681e-09lf;
  pc = pc * x2 + -2.755731922398589e-07lf;
  pc = pc * x2 + 2.48015873015873e-05lf;
  pc = pc * x2 + -0.001388888888888889lf;
  pc = pc * x2 + 0.041666666666666664lf;
  pc = pc * x2 + -0.5lf;
  precise double cx = 1.0lf + x2 * pc;
  const uint quadrant = q & 3u;
  if (quadrant == 0u) return dvec2(cx, sx);
  if (quadrant == 1u) return dvec2(-sx, cx);
  if (quadrant == 2u) return dvec2(-cx, -sx);
  return dvec2(sx, -cx);
}

double param_d(uint i) { return packDouble2x32(uvec2(param(i), param(i + 1u))); }

void main() {
  const uint count = param(RN_COUNT), blocks = (count + 3u) / 4u;
  const uvec2 key = uvec2(words[param(RN_KEY)], words[param(RN_KEY) + 1u]);
  const double a = param_d(RN_A), b = param_d(RN_B);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint blk = gl_GlobalInvocationID.x; blk < blocks; blk += total) {
    const uvec4 w = philox(uvec4(blk, 0u, 0u, 0u), key);
    float v[4];
    if (param(RN_NORMAL) != 0u) {
      for (int p = 0; p < 2; ++p) {
        const double r = sqrt_d(-2.0lf * log_unit(w[2 * p]));
        const dvec2 cs = cos_sin_turn(w[2 * p + 1]);
        precise double z0 = a + b * (r * cs.x), z1 = a + b * (r * cs.y);
        v[2 * p] = float(z0);
        v[2 * p + 1] = float(z1);
      }
    } else {
      for (int k = 0; k < 4; ++k) {
        precise double u = (double(w[k]) + 0.5lf) * 2.3283064365386963e-10lf;
        precise double z = a + b * u;
        v[k] = float(z);
      }
    }
    for (uint k = 0u; k < 4u; ++k)
      if (blk * 4u + k < count) words[param(RN_OUT) + blk * 4u + k] = floatBitsToUint(v[k]);
  }
}
