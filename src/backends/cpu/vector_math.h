// Branch-free float32 exp / sigmoid / tanh that the compiler vectorizes (glibc's scalar
// expf/tanhf would dominate the gated activations). Error: a few ulp over the float range.
#pragma once

#include <bit>
#include <cstdint>

namespace lockstep::cpu {

[[gnu::always_inline]] inline float fast_exp(float in) {
  // NaN is computed as 0 and put back at the end: a NaN must not reach the int conversion (UB)
  // and must still come out as NaN.
  float x = in == in ? in : 0.0f;
  x = x < -87.33654f ? -87.33654f : (x > 88.72283f ? 88.72283f : x);
  // Round to nearest with the 1.5 * 2^23 trick (vectorizes; a libm call would not).
  float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  // Cody-Waite: ln2 split so that n * kLn2Hi is exact.
  float r = x - n * 0.693145751953125f;
  r = r - n * 1.428606765330187045e-06f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n in two halves so that n = 128 (x near 88.7) does not overflow the exponent field.
  int32_t ni = static_cast<int32_t>(n);
  int32_t n1 = ni >> 1, n2 = ni - n1;
  float s1 = std::bit_cast<float>(static_cast<int32_t>((n1 + 127) << 23));
  float s2 = std::bit_cast<float>(static_cast<int32_t>((n2 + 127) << 23));
  return in == in ? p * s1 * s2 : in;
}

[[gnu::always_inline]] inline float fast_sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

[[gnu::always_inline]] inline float fast_tanh(float x) {
  float a = x < 0 ? -x : x;
  // Small |x|: odd Taylor series to x^15 (truncation < 1e-9 relative below 0.4) avoids the
  // cancellation of 1 - e^-2|x|.
  float a2 = a * a;
  float q = -929569.0f / 638512875.0f;
  q = q * a2 + 21844.0f / 6081075.0f;
  q = q * a2 - 1382.0f / 155925.0f;
  q = q * a2 + 62.0f / 2835.0f;
  q = q * a2 - 17.0f / 315.0f;
  q = q * a2 + 2.0f / 15.0f;
  q = q * a2 - 1.0f / 3.0f;
  float small = a + a * a2 * q;
  float e = fast_exp(-2.0f * a);
  float large = (1.0f - e) / (1.0f + e);
  float t = a < 0.4f ? small : large;
  return x < 0 ? -t : t;
}

}  // namespace lockstep::cpu
