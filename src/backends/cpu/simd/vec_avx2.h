// AVX2 vectors of float for the kernels written over a vector type V (conv_winograd_kernels.h,
// transpose kernels). Include only inside LOCKSTEP_TARGET_AVX2_BEGIN/END, and in one source file per
// ISA: the inline members must never be built for two targets under one name.
// Every V has: T, kLanes, kRegisters, zero, set1, load, store (unaligned), load_n/store_n (the
// first n < kLanes lanes, the rest zero), add, sub, mul, fmadd(a, b, c) = a * b + c rounded once.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace lockstep::cpu::simd {

struct Avx2 {
  using T = __m256;
  static constexpr int kLanes = 8, kRegisters = 16;
  [[gnu::always_inline]] static inline __m256i mask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  [[gnu::always_inline]] static inline T zero() { return _mm256_setzero_ps(); }
  [[gnu::always_inline]] static inline T set1(float x) { return _mm256_set1_ps(x); }
  [[gnu::always_inline]] static inline T load(const float* p) { return _mm256_loadu_ps(p); }
  [[gnu::always_inline]] static inline void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  [[gnu::always_inline]] static inline T load_n(const float* p, int64_t n) { return n >= kLanes ? load(p) : _mm256_maskload_ps(p, mask(n)); }
  [[gnu::always_inline]] static inline void store_n(float* p, T v, int64_t n) {
    if (n >= kLanes) store(p, v);
    else _mm256_maskstore_ps(p, mask(n), v);
  }
  [[gnu::always_inline]] static inline T add(T a, T b) { return _mm256_add_ps(a, b); }
  [[gnu::always_inline]] static inline T sub(T a, T b) { return _mm256_sub_ps(a, b); }
  [[gnu::always_inline]] static inline T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  [[gnu::always_inline]] static inline T fmadd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
};

}  // namespace lockstep::cpu::simd
