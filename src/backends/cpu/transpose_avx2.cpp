// The 8x8 transpose tile for AVX2 (x86-64 only: CMake compiles this file there alone).
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/simd/target.h"

LOCKSTEP_TARGET_AVX2_BEGIN
namespace lockstep::cpu {

// out[c * out_ld + r] = in[r * in_ld + c] for an 8x8 tile: pairs, then quads, then halves.
void transpose_tile8(const float* in, int64_t in_ld, float* out, int64_t out_ld) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * in_ld);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
    t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
  }
  for (int i = 0; i < 8; ++i) _mm256_storeu_ps(out + i * out_ld, t[i]);
}

}  // namespace lockstep::cpu
LOCKSTEP_TARGET_END
