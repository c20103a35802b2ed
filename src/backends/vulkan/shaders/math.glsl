// float32 math with stated error bounds (docs/vulkan.md, tests/vulkan/math_test.cpp). Only what
// Vulkan defines exactly is trusted: OpFAdd/OpFSub/OpFMul (correctly rounded), comparisons, bit
// casts, floor/ceil/abs. The driver's division (2.5 ulp in Vulkan's precision table) and sqrt
// (inherited from inversesqrt) get one correction from an exactly computed residual; exp, tanh and
// sigmoid are written here (the builtins' errors are unspecified or grow with |x|). Every result
// is a `precise` variable: no contraction into fused multiply-adds, so every driver rounds the
// same operations (same bits run to run; across drivers up to the corrected ops' last ulp).
#ifndef LOCKSTEP_VULKAN_MATH_GLSL
#define LOCKSTEP_VULKAN_MATH_GLSL

float pow2i(int k) { return intBitsToFloat((k + 127) << 23); }  // 2^k for k in [-126, 127]

// Veltkamp split: a == hi + lo, each with at most 12 significant bits (|a| < 2^115).
vec2 split12(float a) {
  precise float c = 4097.0 * a;
  precise float hi = c - (c - a);
  precise float lo = a - hi;
  return vec2(hi, lo);
}

// Dekker's product without fma: p + e == a * b exactly (no over/underflow on the way).
vec2 two_prod(float a, float b) {
  vec2 as = split12(a), bs = split12(b);
  precise float p = a * b;
  precise float e = ((as.x * bs.x - p) + as.x * bs.y + as.y * bs.x) + as.y * bs.y;
  return vec2(p, e);
}

// |v| in [2^-40, 2^40]: where the residual corrections below cannot over- or underflow.
bool mid_range(float v) {
  float m = abs(v);
  return m >= 9.094947e-13 && m <= 1.0995116e12;
}

// a / b, correctly rounded but for near ties (|error| <= 0.5 ulp + 2^-20 ulp) where a, b and the
// quotient lie in [2^-40, 2^40]; elsewhere the driver's quotient (zero, inf, NaN exact).
float div_rn(float a, float b) {
  precise float q = a / b;
  if (!(mid_range(a) && mid_range(b) && mid_range(q))) return q;
  vec2 pe = two_prod(q, b);
  precise float r = (a - pe.x) - pe.y;  // a - p is exact (Sterbenz: p is within a few ulp of a)
  precise float q2 = q + r / b;
  return q2;
}

// sqrt(x) to the same bound as div_rn for x in [2^-40, 2^40]; elsewhere the driver's.
float sqrt_rn(float x) {
  precise float s = sqrt(x);
  if (!(mid_range(x) && mid_range(s))) return s;
  vec2 pe = two_prod(s, s);
  precise float r = (x - pe.x) - pe.y;
  precise float s2 = s + r / (s + s);
  return s2;
}

// e^x: Cody-Waite reduction x = n ln2 + r (n*C1 exact, x - n*C1 exact), Cephes' degree-7
// polynomial on |r| <= ln2/2, then 2^n applied as two exact power-of-two factors (one rounding,
// gradual underflow). Bound 1 ulp (measured 0.95, math_test.cpp); 0 below -103.98, inf above 88.7229.
float exp_f(float x) {
  if (isnan(x)) return x;
  if (x > 88.72284) return uintBitsToFloat(0x7f800000u);
  if (x < -103.98) return 0.0;
  precise float n = floor(x * 1.442695041 + 0.5);
  precise float r = (x - n * 0.693359375) - n * -2.12194440e-4;
  precise float z = r * r;
  precise float p = (((((1.9875691500e-4 * r + 1.3981999507e-3) * r + 8.3334519073e-3) * r + 4.1665795894e-2) * r +
                      1.6666665459e-1) * r + 5.0000001201e-1) * z + r + 1.0;
  int k = int(n);
  int k1 = k >> 1;
  precise float y = (p * pow2i(k1)) * pow2i(k - k1);
  return y;
}

// tanh(x): x below 2^-12, Cephes' odd polynomial for |x| < 0.625, 1 - 2 / (e^{2|x|} + 1) above,
// +-1 past 44. Bound 1.5 ulp (measured 1.26, math_test.cpp).
float tanh_f(float x) {
  if (isnan(x)) return x;
  float z = abs(x);
  if (z > 44.0) return x > 0.0 ? 1.0 : -1.0;
  if (z < 2.44140625e-4) return x;  // |x| < 2^-12: x^3/3 is below half an ulp of x; keeps -0
  if (z >= 0.625) {
    precise float e = exp_f(z + z);
    precise float t = 1.0 - div_rn(2.0, e + 1.0);
    return x < 0.0 ? -t : t;
  }
  precise float s = x * x;
  precise float y = ((((-5.70498872745e-3 * s + 2.06390887954e-2) * s - 5.37397155531e-2) * s + 1.33314422036e-1) * s -
                     3.33332819422e-1) * s * x + x;
  return y;
}

// 1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0 (no cancellation, gradual underflow). Bound
// 2.5 ulp (measured 2.06 near x = -2: exp's ulp and two roundings, math_test.cpp).
float sigmoid_f(float x) {
  if (isnan(x)) return x;
  if (x < 0.0) {
    precise float e = exp_f(x);
    precise float d = 1.0 + e;
    return div_rn(e, d);
  }
  precise float d = 1.0 + exp_f(-x);
  return div_rn(1.0, d);
}

// erf as x P(x^2) / Q(x^2) on x clamped to [-4, 4] (erf(4) rounds to 1 in float32): the rational
// approximation of Eigen / XLA that the cpu backend uses (vector_math.h), with a correctly rounded
// division but no fma in the Horner steps. Bound 4.5e-7 absolute, 8 ulp where |erf| >= 1e-3
// (measured 4.4e-7 and 7.4 ulp, just below +-1; the cpu's: 4.7e-7, 8 ulp; math_test.cpp).
float erf_f(float v) {
  if (isnan(v)) return v;
  const float x = clamp(v, -4.0, 4.0);
  precise float x2 = x * x;
  precise float p = ((((((-2.72614225801306e-10 * x2 + 2.77068142495902e-08) * x2 - 2.10102402082508e-06) * x2 -
                        5.69250639462346e-05) * x2 - 7.34990630326855e-04) * x2 - 2.95459980854025e-03) * x2 -
                      1.60960333262415e-02);
  precise float q = ((((-1.45660718464996e-05 * x2 - 2.13374055278905e-04) * x2 - 1.68282697438203e-03) * x2 -
                      7.37332916720468e-03) * x2 - 1.42647390514189e-02);
  precise float xp = x * p;
  return div_rn(xp, q);
}

// log(1 + e) for e in [0, 1] as 2 atanh(s): s = e / (2 + e) below sqrt(2) - 1, else
// log(2) + 2 atanh((e - 1) / (e + 3)); |s| <= 0.1716: the odd series to s^9 is exact to float32.
float log1p_unit(float e) {
  const bool hi = e > 0.41421356;
  precise float s = hi ? div_rn(e - 1.0, e + 3.0) : div_rn(e, 2.0 + e);
  precise float s2 = s * s;
  precise float p = (((2.0 / 9.0 * s2 + 2.0 / 7.0) * s2 + 2.0 / 5.0) * s2 + 2.0 / 3.0) * s2 + 2.0;
  precise float r = s * p + (hi ? 0.693147180559945309 : 0.0);
  return r;
}

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow, e^x down to subnormals for very negative
// x (exp_f underflows gradually). Bound 3.5 ulp where the result is normal (measured 3.02 near
// x = -1.3: exp's ulp, the division and the series; math_test.cpp).
float softplus_f(float x) {
  if (isnan(x)) return x;
  precise float e = exp_f(-abs(x));
  // Below 2^-26, log1p(e) is e to a quarter ulp; the series' e / (2 + e) would be subnormal near
  // x = -87 and flushed to zero on drivers that flush denormals (NVIDIA's: measured 2026-12-02).
  precise float l = e < 1.4901161e-8 ? e : log1p_unit(e);
  precise float r = max(x, 0.0) + l;
  return r;
}

#endif
