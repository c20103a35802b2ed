#version 450
// Pow of any operand types, as the cpu computes it: T(pow(double(x), double(y))) with T the base's
// type. Integral exponents by repeated squaring in double (exact where the result is, so an
// integer base truncates right); others as e^(y ln x) in double (series, every result `precise`),
// a relative error near 1e-14 before the one rounding to float32: the correctly rounded float but
// where the exact value lies within about 1e-14 of a tie. C99's special cases (0, ±inf, NaN,
// negative bases with integral exponents). Integer base and exponent: exact, repeated squaring
// in int64. Needs shaderFloat64 and shaderInt64. Operands broadcast as in typed_ew (params.h TE_*).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };

layout(constant_id = 1) const uint TA = 0u;
layout(constant_id = 2) const uint TB = 0u;
layout(constant_id = 4) const uint TO = 0u;
#include "typed.glsl"

double load_d(const uint t, uint at) { return t == TY_F32 ? double(uintBitsToFloat(words[at])) : double(load_i(t, at)); }

const double kLn2Hi = 6.93147180369123816490e-01lf;  // fdlibm's split of ln 2: k * hi exact for |k| < 2^20
const double kLn2Lo = 1.90821492927058770002e-10lf;

// ln a for a > 0 finite: a = m 2^e, m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m-1)/(m+1).
double ln_d(double a) {
  uvec2 bits = unpackDouble2x32(a);
  int e = int((bits.y >> 20) & 0x7ffu) - 1023;
  double m = packDouble2x32(uvec2(bits.x, (bits.y & 0x800fffffu) | 0x3ff00000u));  // [1, 2)
  if (m > 1.4142135623730951lf) {
    m = m * 0.5lf;
    e += 1;
  }
  precise double s = (m - 1.0lf) / (m + 1.0lf);
  precise double s2 = s * s;
  precise double p = 0.08695652173913043lf;  // 2/23
  p = p * s2 + 0.09523809523809523lf;
  p = p * s2 + 0.10526315789473684lf;
  p = p * s2 + 0.11764705882352941lf;
  p = p * s2 + 0.13333333333333333lf;
  p = p * s2 + 0.15384615384615385lf;
  p = p * s2 + 0.18181818181818182lf;
  p = p * s2 + 0.2222222222222222lf;
  p = p * s2 + 0.2857142857142857lf;
  p = p * s2 + 0.4lf;
  p = p * s2 + 0.6666666666666666lf;
  precise double k = double(e);
  precise double r = k * kLn2Hi + (k * kLn2Lo + (2.0lf * s + (s * s2) * p));
  return r;
}

// e^t for |t| <= 700: t = n ln2 + r (|r| <= 0.35), Taylor to r^17, times 2^n from its bits.
double exp_d(double t) {
  const double n = floor(t * 1.4426950408889634lf + 0.5lf);
  precise double r = (t - n * kLn2Hi) - n * kLn2Lo;
  precise double q = 2.8114572543455206e-15lf;  // 1/17!
  q = q * r + 4.779477332387385e-14lf;
  q = q * r + 7.647163731819816e-13lf;
  q = q * r + 1.1470745597729725e-11lf;
  q = q * r + 1.6059043836821613e-10lf;
  q = q * r + 2.08767569878681e-09lf;
  q = q * r + 2.505210838544172e-08lf;
  q = q * r + 2.755731922398589e-07lf;
  q = q * r + 2.7557319223985893e-06lf;
  q = q * r + 2.48015873015873e-05lf;
  q = q * r + 0.0001984126984126984lf;
  q = q * r + 0.001388888888888889lf;
  q = q * r + 0.008333333333333333lf;
  q = q * r + 0.041666666666666664lf;
  q = q * r + 0.16666666666666666lf;
  q = q * r + 0.5lf;
  q = q * r + 1.0lf;
  q = q * r + 1.0lf;
  precise double y = q * packDouble2x32(uvec2(0u, uint(int(n) + 1023) << 20));
  return y;
}

bool is_integer(double y) { return floor(y) == y; }
bool is_odd(double y) { return is_integer(y) && abs(y) < 9007199254740992.0lf && floor(y * 0.5lf) * 2.0lf != y; }

double pow_d(double x, double y) {
  const double inf = packDouble2x32(uvec2(0u, 0x7ff00000u));
  if (y == 0.0lf || x == 1.0lf) return 1.0lf;
  if (isnan(x) || isnan(y)) return x + y;
  if (isinf(y)) {
    if (abs(x) == 1.0lf) return 1.0lf;
    return (abs(x) > 1.0lf) == (y > 0.0lf) ? inf : 0.0lf;
  }
  if (x == 0.0lf || isinf(x)) {
    const bool big = (x != 0.0lf) == (y > 0.0lf);  // 0^-y and inf^y are infinite
    const double r = big ? inf : 0.0lf;
    return (is_odd(y) && (x < 0.0lf || (x == 0.0lf && unpackDouble2x32(x).y >> 31 != 0u))) ? -r : r;
  }
  if (x < 0.0lf && !is_integer(y)) return inf - inf;  // NaN
  double r;
  if (is_integer(y) && abs(y) < 2147483648.0lf) {  // repeated squaring: exact where the result is (2^3 = 8, not 7.99..)
    uint n = uint(abs(y));
    precise double acc = 1.0lf, b = abs(x);
    while (n > 0u) {
      if ((n & 1u) != 0u) acc = acc * b;
      n >>= 1;
      if (n > 0u) b = b * b;
    }
    r = y < 0.0lf ? 1.0lf / acc : acc;
  } else {
    r = exp_d(clamp(y * ln_d(abs(x)), -700.0lf, 700.0lf));
  }
  return (x < 0.0lf && is_odd(y)) ? -r : r;
}

int64_t ipow(int64_t x, int64_t n) {
  if (n < 0) return x == 1L ? 1L : x == -1L ? ((n & 1L) != 0L ? -1L : 1L) : 0L;  // the double's truncation
  int64_t r = 1L, b = x;
  while (n > 0L) {
    if ((n & 1L) != 0L) r *= b;
    n >>= 1;
    if (n > 0L) b *= b;
  }
  return r;
}

void main() {
  const uint n = param(TE_N), rank = param(TE_RANK), out_at = param(TE_OUT);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
    uint rest = i;
    int ia = 0, ib = 0;
    for (int d = int(rank) - 1; d >= 0; --d) {
      int c = int(rest);
      if (d > 0) {
        const uint dim = param(TE_DIMS + d);
        c = int(rest % dim);
        rest /= dim;
      }
      ia += c * iparam(TE_IN + 1 + d);
      ib += c * iparam(TE_IN + TE_IN_WORDS + 1 + d);
    }
    const uint a = uint(iparam(TE_IN) + ia * int(width(TA)));
    const uint b = uint(iparam(TE_IN + TE_IN_WORDS) + ib * int(width(TB)));
    const uint o = out_at + i * width(TO);
    if (TA != TY_F32 && TB != TY_F32) {
      store_i(o, ipow(load_i(TA, a), load_i(TB, b)));
    } else {
      const double r = pow_d(load_d(TA, a), load_d(TB, b));
      if (TO == TY_F32) words[o] = floatBitsToUint(float(r));
      else store_i(o, int64_t(r));  // an integer base: truncated, as the cpu's cast
    }
  }
}
