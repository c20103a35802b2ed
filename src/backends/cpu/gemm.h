// Row-major float32 GEMM for the CPU kernels (MatMul, Gemm, the GEMM convolution): oneDNN's
// sgemm on x86-64 (JIT for SSE4.1 up to AVX-512, deterministic for a fixed thread count) and
// OpenBLAS elsewhere, where oneDNN 2.6 has only its reference GEMM (arm64 without SVE).
#pragma once

#include <cstdint>

namespace lockstep::cpu {

// c = alpha * op(a) * op(b) + beta * c with op(x) = x or x^T; m x k times k x n, row-major with
// leading dimensions lda, ldb, ldc. Inside an OpenMP parallel region it runs on the calling
// thread alone (oneDNN nests no threads; OpenBLAS is set to one thread off x86-64).
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// c = a * b + beta * c in float64, row-major, no transposes, on the calling thread alone (callers
// split the work in fixed blocks, so an element's sum does not depend on the thread count):
// dgemm_avx512.cpp on AVX-512 (beta 0 or 1), else OpenBLAS.
// The float64 accumulation of Options::f64_accumulate (conv_f64.h, MatMul).
void dgemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
           double* c, int64_t ldc);

// Constant B operands packed once (conv_f64's weights) where dgemm has a kernel of its own
// (AVX-512): per block of 16 columns, k rows of 16, zero-padded; the block of a column offset
// that is a multiple of 16 starts at bp + offset * k. dgemm_packed computes C (+)= A B from it.
inline constexpr int64_t kPackedCols = 16;
inline int64_t packed_b_doubles(int64_t k, int64_t n) { return (n + kPackedCols - 1) / kPackedCols * kPackedCols * k; }
bool dgemm_packs_b();
void pack_b_16(const double* b, int64_t ldb, int64_t k, int64_t n, double* out);  // out: packed_b_doubles(k, n)
void dgemm_packed(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* bp, bool add, double* c,
                  int64_t ldc);

// What sgemm runs: "onednn:sgemm" or "openblas:sgemm" (kernel reports, docs/cpu.md).
const char* sgemm_implementation();

}  // namespace lockstep::cpu
