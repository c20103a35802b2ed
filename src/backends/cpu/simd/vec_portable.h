// Vectors of float for CPUs without a kernel of their own (same interface as vec_avx2.h):
// NEON on arm64, plain lanes elsewhere. fmadd rounds once everywhere (vfmaq_f32, std::fma), so
// a kernel gives the same bits over any V when it performs the same operations per lane.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace lockstep::cpu::simd {

#if defined(__aarch64__)
struct Neon {
  using T = float32x4_t;
  static constexpr int kLanes = 4, kRegisters = 32;
  static T zero() { return vdupq_n_f32(0.0f); }
  static T set1(float x) { return vdupq_n_f32(x); }
  static T load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, T v) { vst1q_f32(p, v); }
  static T load_n(const float* p, int64_t n) {
    if (n >= kLanes) return load(p);
    float b[kLanes] = {};
    std::memcpy(b, p, static_cast<size_t>(n) * sizeof(float));
    return load(b);
  }
  static void store_n(float* p, T v, int64_t n) {
    if (n >= kLanes) return store(p, v);
    float b[kLanes];
    store(b, v);
    std::memcpy(p, b, static_cast<size_t>(n) * sizeof(float));
  }
  static T add(T a, T b) { return vaddq_f32(a, b); }
  static T sub(T a, T b) { return vsubq_f32(a, b); }
  static T mul(T a, T b) { return vmulq_f32(a, b); }
  static T fmadd(T a, T b, T c) { return vfmaq_f32(c, a, b); }
};
#endif

struct Portable {
  static constexpr int kLanes = 4, kRegisters = 32;
  struct T {
    float v[kLanes];
  };
  template <class F>
  static T map(T a, T b, F f) {
    T r;
    for (int i = 0; i < kLanes; ++i) r.v[i] = f(a.v[i], b.v[i]);
    return r;
  }
  static T zero() { return T{}; }
  static T set1(float x) {
    T r;
    for (float& e : r.v) e = x;
    return r;
  }
  static T load(const float* p) { return load_n(p, kLanes); }
  static void store(float* p, T v) { store_n(p, v, kLanes); }
  static T load_n(const float* p, int64_t n) {
    T r{};
    std::memcpy(r.v, p, static_cast<size_t>(n < kLanes ? n : kLanes) * sizeof(float));
    return r;
  }
  static void store_n(float* p, T v, int64_t n) {
    std::memcpy(p, v.v, static_cast<size_t>(n < kLanes ? n : kLanes) * sizeof(float));
  }
  static T add(T a, T b) { return map(a, b, [](float x, float y) { return x + y; }); }
  static T sub(T a, T b) { return map(a, b, [](float x, float y) { return x - y; }); }
  static T mul(T a, T b) { return map(a, b, [](float x, float y) { return x * y; }); }
  static T fmadd(T a, T b, T c) {
    T r;
    for (int i = 0; i < kLanes; ++i) r.v[i] = std::fma(a.v[i], b.v[i], c.v[i]);
    return r;
  }
};

}  // namespace lockstep::cpu::simd
