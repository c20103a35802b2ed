// Branch-free float32 exp / sigmoid / tanh that the compiler vectorizes (glibc's scalar
// expf/tanhf would dominate the gated activations). Error: a few ulp over the float range.
#pragma once

#include <bit>
#include <cstdint>

namespace lockstep::cpu {

// The shared core of the exps below: n = round(x / ln2) (the 1.5 * 2^23 trick vectorizes; a
// libm call would not), r = x - n ln2 (Cody-Waite: ln2 split so that n * its high part is exact),
// and returns p with e^r - 1 = p * r (Taylor to r^7).
[[gnu::always_inline]] inline float exp_reduce(float x, float& n, float& r) {
  n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  r = x - n * 0.693145751953125f;
  r = r - n * 1.428606765330187045e-06f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  return p * r + 1.0f;
}

[[gnu::always_inline]] inline float fast_exp(float in) {
  // NaN is computed as 0 and put back at the end: a NaN must not reach the int conversion (UB)
  // and must still come out as NaN.
  float x = in == in ? in : 0.0f;
  x = x < -87.33654f ? -87.33654f : (x > 88.72283f ? 88.72283f : x);
  float n, r;
  float p = exp_reduce(x, n, r) * r + 1.0f;
  // 2^n in two halves so that n = 128 (x near 88.7) does not overflow the exponent field.
  int32_t ni = static_cast<int32_t>(n);
  int32_t n1 = ni >> 1, n2 = ni - n1;
  float s1 = std::bit_cast<float>(static_cast<int32_t>((n1 + 127) << 23));
  float s2 = std::bit_cast<float>(static_cast<int32_t>((n2 + 127) << 23));
  return in == in ? p * s1 * s2 : in;
}

// e^y = s * (1 + q) for y in [-87, 0] (callers clamp): s = 2^n a normal power of two and
// q = e^r - 1 (|r| <= ln2/2) kept apart, so that 1 - e^y keeps its low bits near y = 0.
[[gnu::always_inline]] inline void exp_split(float y, float& s, float& q) {
  float n, r;
  q = exp_reduce(y, n, r) * r;
  s = std::bit_cast<float>(static_cast<int32_t>((static_cast<int32_t>(n) + 127) << 23));
}

// 1 / (1 + e^-x) as 1 / (1 + e) or e / (1 + e) with e = e^-|x| in (0, 1]: no overflow, one
// division. NaN is clamped like any
// value (no NaN reaches the int conversion) and put back at the end.
[[gnu::always_inline]] inline float fast_sigmoid(float x) {
  float a = x < 0 ? -x : x;
  a = a < 87.0f ? a : 87.0f;
  float s, q;
  exp_split(-a, s, q);
  float e = s + s * q;
  float r = (x < 0 ? e : 1.0f) / (1.0f + e);
  return x == x ? r : x;
}

// (1 - e) / (1 + e) with e = e^-2|x| = s (1 + q): 1 - e = (1 - s) - s q has no cancellation
// near 0, so one formula serves the whole range. tanh(9) already rounds to 1.
[[gnu::always_inline]] inline float fast_tanh(float x) {
  float a = x < 0 ? -x : x;
  a = a < 9.0f ? a : 9.0f;
  float s, q;
  exp_split(-2.0f * a, s, q);
  float t = ((1.0f - s) - s * q) / ((1.0f + s) + s * q);
  t = x < 0 ? -t : t;
  return x == x ? t : x;
}

// erf as x P(x^2) / Q(x^2) on x clamped to [-4, 4] (erf(4) rounds to 1 in float32): the
// rational approximation of Eigen / XLA (generic_fast_erf_float). Measured against double
// std::erf on every float32 in [-4, 4] (and beyond): at most 3.4e-7 absolute and 2 ulp
// relative where |erf| >= 1e-3 (CpuErf.MaxErrorOverTheFloatRange). NaN stays NaN (the clamp
// compares false).
[[gnu::always_inline]] inline float fast_erf(float in) {
  float x = in < -4.0f ? -4.0f : (in > 4.0f ? 4.0f : in);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}

// log(1 + e) for e in [0, 1] as 2 atanh(s): s = e / (2 + e) below sqrt(2) - 1, else
// log(2) + 2 atanh((e - 1) / (e + 3)); |s| <= 0.1716, so the odd series to s^9 is exact to
// float32 rounding, with no cancellation as e -> 0.
[[gnu::always_inline]] inline float log1p_unit(float e) {
  const bool hi = e > 0.41421356f;
  const float s = hi ? (e - 1.0f) / (e + 3.0f) : e / (2.0f + e);
  const float s2 = s * s;
  float p = 2.0f / 9.0f;
  p = p * s2 + 2.0f / 7.0f;
  p = p * s2 + 2.0f / 5.0f;
  p = p * s2 + 2.0f / 3.0f;
  p = p * s2 + 2.0f;
  return s * p + (hi ? 0.693147180559945309f : 0.0f);
}

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large x, full relative precision
// for very negative x (e^-|x| as (e^-|x|/2)^2 past fast_exp's clamp at -87, so that the
// result goes gradually to 0 instead of stopping at e^-87).
[[gnu::always_inline]] inline float fast_softplus(float x) {
  const float a = x < 0 ? -x : x;
  float e = fast_exp(-a);
  const float h = fast_exp(-0.5f * a);
  e = a < 87.0f ? e : h * h;
  const float r = (x > 0 ? x : 0.0f) + log1p_unit(e);
  return x == x ? r : x;
}

}  // namespace lockstep::cpu
