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

}  // namespace lockstep::cpu
