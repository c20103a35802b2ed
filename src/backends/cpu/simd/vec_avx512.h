// AVX-512 vectors of float for the kernels written over a vector type V (conv_winograd_kernels.h,
// transpose kernels). Include only inside LOCKSTEP_TARGET_AVX512_BEGIN/END, and in one source file per
// ISA: the inline members must never be built for two targets under one name.
// Every V has: T, kLanes, kRegisters, zero, set1, load, store (unaligned), load_n/store_n (the
// first n < kLanes lanes, the rest zero), add, sub, mul, fmadd(a, b, c) = a * b + c rounded once.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace lockstep::cpu::simd {

struct Avx512 {
  using T = __m512;
  static constexpr int kLanes = 16, kRegisters = 32;
  [[gnu::always_inline]] static inline __mmask16 mask(int64_t n) { return n >= kLanes ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }
  [[gnu::always_inline]] static inline T zero() { return _mm512_setzero_ps(); }
  [[gnu::always_inline]] static inline T set1(float x) { return _mm512_set1_ps(x); }
  [[gnu::always_inline]] static inline T load(const float* p) { return _mm512_loadu_ps(p); }
  [[gnu::always_inline]] static inline void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  [[gnu::always_inline]] static inline T load_n(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  [[gnu::always_inline]] static inline void store_n(float* p, T v, int64_t n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  [[gnu::always_inline]] static inline T add(T a, T b) { return _mm512_add_ps(a, b); }
  [[gnu::always_inline]] static inline T sub(T a, T b) { return _mm512_sub_ps(a, b); }
  [[gnu::always_inline]] static inline T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  [[gnu::always_inline]] static inline T fmadd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
};

}  // namespace lockstep::cpu::simd
