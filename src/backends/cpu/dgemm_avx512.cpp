// The float64 GEMM of the float64 accumulation (gemm.h's dgemm) for AVX-512F (x86-64 only: CMake
// compiles this file there alone). OpenBLAS 0.3.21 runs its AVX2 ("Haswell") kernel on AMD hosts
// with AVX-512; on the encoder's shapes (M 64-263, N 128-263, K 96-768) this one ran 47-62
// GFMA/s a core against OpenBLAS's 25-31 (AMD EPYC, 2026-12-04). Blocks of 8 rows x 16 columns
// in 16 named accumulators (an array of them was not kept in registers), B's 16 columns packed
// per block; every element sums its K products in order by FMA, so its bits depend on neither
// the blocking nor the thread.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/simd/target.h"

LOCKSTEP_TARGET_AVX512_BEGIN
namespace lockstep::cpu {

namespace {

constexpr int kRows = 8, kCols = kPackedCols;  // gemm.h's packed layout

// C[8 x 16 (masked)] (+)= A[8 x k] * Bp[k x 16].
void block8x16(int64_t k, const double* a, int64_t lda, const double* bp, double* c, int64_t ldc, bool add, __mmask8 m0,
               __mmask8 m1) {
  __m512d c00 = _mm512_setzero_pd(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  __m512d c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  const double *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda;
  const double *a4 = a + 4 * lda, *a5 = a + 5 * lda, *a6 = a + 6 * lda, *a7 = a + 7 * lda;
  for (int64_t p = 0; p < k; ++p) {
    const __m512d b0 = _mm512_loadu_pd(bp + p * kCols), b1 = _mm512_loadu_pd(bp + p * kCols + 8);
    __m512d v = _mm512_set1_pd(a0[p]);
    c00 = _mm512_fmadd_pd(v, b0, c00), c01 = _mm512_fmadd_pd(v, b1, c01);
    v = _mm512_set1_pd(a1[p]);
    c10 = _mm512_fmadd_pd(v, b0, c10), c11 = _mm512_fmadd_pd(v, b1, c11);
    v = _mm512_set1_pd(a2[p]);
    c20 = _mm512_fmadd_pd(v, b0, c20), c21 = _mm512_fmadd_pd(v, b1, c21);
    v = _mm512_set1_pd(a3[p]);
    c30 = _mm512_fmadd_pd(v, b0, c30), c31 = _mm512_fmadd_pd(v, b1, c31);
    v = _mm512_set1_pd(a4[p]);
    c40 = _mm512_fmadd_pd(v, b0, c40), c41 = _mm512_fmadd_pd(v, b1, c41);
    v = _mm512_set1_pd(a5[p]);
    c50 = _mm512_fmadd_pd(v, b0, c50), c51 = _mm512_fmadd_pd(v, b1, c51);
    v = _mm512_set1_pd(a6[p]);
    c60 = _mm512_fmadd_pd(v, b0, c60), c61 = _mm512_fmadd_pd(v, b1, c61);
    v = _mm512_set1_pd(a7[p]);
    c70 = _mm512_fmadd_pd(v, b0, c70), c71 = _mm512_fmadd_pd(v, b1, c71);
  }
  const __m512d acc[2 * kRows] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71};
  for (int r = 0; r < kRows; ++r) {
    double* row = c + r * ldc;
    __m512d x0 = acc[2 * r], x1 = acc[2 * r + 1];
    // Nothing past the block's last column is touched, not even by a fully masked access.
    if (add) x0 = _mm512_add_pd(x0, _mm512_maskz_loadu_pd(m0, row));
    _mm512_mask_storeu_pd(row, m0, x0);
    if (m1 == 0) continue;
    if (add) x1 = _mm512_add_pd(x1, _mm512_maskz_loadu_pd(m1, row + 8));
    _mm512_mask_storeu_pd(row + 8, m1, x1);
  }
}

}  // namespace

// C (+)= A B for B packed as gemm.h's pack_b_16 lays it out: per block of 16 columns, k rows of 16.
void dgemm_packed_avx512(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* bp, bool add,
                         double* c, int64_t ldc) {
  thread_local std::vector<double> rows_a;
  rows_a.resize(static_cast<size_t>(kRows * k));
  for (int64_t j0 = 0; j0 < n; j0 += kCols) {
    const int64_t cols = std::min<int64_t>(kCols, n - j0);
    const double* packed = bp + j0 * k;  // block j0 / 16 starts (j0 / 16) * k * 16 doubles in
    const __mmask8 m0 = static_cast<__mmask8>(cols >= 8 ? 0xff : (1u << cols) - 1);
    const __mmask8 m1 = static_cast<__mmask8>(cols <= 8 ? 0 : cols >= 16 ? 0xff : (1u << (cols - 8)) - 1);
    for (int64_t i0 = 0; i0 < m; i0 += kRows) {
      const int64_t rows = std::min<int64_t>(kRows, m - i0);
      if (rows == kRows) {
        block8x16(k, a + i0 * lda, lda, packed, c + i0 * ldc + j0, ldc, add, m0, m1);
        continue;
      }
      // The last rows: through zero-padded copies of A and C, the same arithmetic per element.
      std::fill(rows_a.begin(), rows_a.end(), 0.0);
      double out[kRows * kCols] = {};
      for (int64_t r = 0; r < rows; ++r) {
        std::copy(a + (i0 + r) * lda, a + (i0 + r) * lda + k, rows_a.data() + r * k);
        if (add) std::copy(c + (i0 + r) * ldc + j0, c + (i0 + r) * ldc + j0 + cols, out + r * kCols);
      }
      block8x16(k, rows_a.data(), k, packed, out, kCols, add, m0, m1);
      for (int64_t r = 0; r < rows; ++r) std::copy(out + r * kCols, out + r * kCols + cols, c + (i0 + r) * ldc + j0);
    }
  }
}

}  // namespace lockstep::cpu
LOCKSTEP_TARGET_END

namespace lockstep::cpu {

// C = A B (add false) or C += A B (add true: the finished sum added once), row-major: B packed
// per call (conv_f64 packs its constant weights once and calls dgemm_packed).
void dgemm_avx512(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb, bool add,
                  double* c, int64_t ldc) {
  thread_local std::vector<double> packed;
  packed.resize(static_cast<size_t>(packed_b_doubles(k, n)));
  pack_b_16(b, ldb, k, n, packed.data());
  dgemm_packed_avx512(m, n, k, a, lda, packed.data(), add, c, ldc);
}

}  // namespace lockstep::cpu
