#include "backends/cpu/gemm.h"

#include "backends/cpu/isa.h"
#include "lockstep/error.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <oneapi/dnnl/dnnl.hpp>
#define LOCKSTEP_GEMM_ONEDNN 1
#endif
#include <cblas.h>

namespace lockstep::cpu {

#if defined(__x86_64__) || defined(_M_X64)
void dgemm_avx512(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb, bool add,
                  double* c, int64_t ldc);  // dgemm_avx512.cpp
void dgemm_packed_avx512(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* bp, bool add,
                         double* c, int64_t ldc);
#endif

namespace {
// OpenBLAS's own threads would oversubscribe the OpenMP ones that call it.
void openblas_single_thread() {
  static const bool single = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)single;
}
}  // namespace

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.0f : beta * c[i * ldc + j];
    return;
  }
#if defined(LOCKSTEP_GEMM_ONEDNN)
  const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (st != dnnl_success) throw Error(ErrorCode::Internal, "cpu: dnnl_sgemm failed");
#else
  openblas_single_thread();
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
#endif
}

void dgemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
           double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
#if defined(__x86_64__) || defined(_M_X64)
  // Ours on AVX-512 (OpenBLAS takes its AVX2 kernel on AMD hosts); OpenBLAS elsewhere.
  if (active_isa() == Isa::Avx512 && (beta == 0.0 || beta == 1.0))
    return dgemm_avx512(m, n, k, a, lda, b, ldb, beta == 1.0, c, ldc);
#endif
  openblas_single_thread();
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0,
              a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

bool dgemm_packs_b() {
#if defined(__x86_64__) || defined(_M_X64)
  return active_isa() == Isa::Avx512;
#else
  return false;
#endif
}

void pack_b_16(const double* b, int64_t ldb, int64_t k, int64_t n, double* out) {
  for (int64_t j0 = 0; j0 < n; j0 += kPackedCols) {
    const int64_t cols = std::min(kPackedCols, n - j0);
    for (int64_t p = 0; p < k; ++p) {
      double* dst = out + j0 * k + p * kPackedCols;
      for (int64_t j = 0; j < cols; ++j) dst[j] = b[p * ldb + j0 + j];
      for (int64_t j = cols; j < kPackedCols; ++j) dst[j] = 0.0;
    }
  }
}

void dgemm_packed(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* bp, bool add, double* c,
                  int64_t ldc) {
  if (m == 0 || n == 0) return;
#if defined(__x86_64__) || defined(_M_X64)
  if (dgemm_packs_b()) return dgemm_packed_avx512(m, n, k, a, lda, bp, add, c, ldc);
#endif
  throw Error(ErrorCode::Internal, "cpu: dgemm_packed without a packed kernel on this host");
}

const char* sgemm_implementation() {
#if defined(LOCKSTEP_GEMM_ONEDNN)
  return "onednn:sgemm";
#else
  return "openblas:sgemm";
#endif
}

}  // namespace lockstep::cpu
