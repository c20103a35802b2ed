// The SIMD kernels of the Winograd 1-D convolution (conv_winograd.cpp plans and threads them),
// written once over a vector type V (simd/vec_avx512.h, simd/vec_avx2.h, simd/vec_portable.h): the input transform
// of one tile, the register-blocked GEMM of one point, and the output transform of one block.
// Each ISA's file (conv_winograd_avx512.cpp, _avx2.cpp, _portable.cpp) instantiates them into a
// WinogradKernels table. Per output element every V performs the same operations in the same
// order (fmadd rounds once on all of them), so the bits do not depend on the ISA.
// Include after every standard header: an ISA file includes this inside its target region.
#pragma once

#include "backends/cpu/conv_winograd_isa.h"
#include "backends/cpu/conv_winograd_transforms.h"

namespace lockstep::cpu::winograd {

// Tiles per register block for NV vectors: three quarters of the vector registers hold
// accumulators (24 of 32 zmm, 12 of 16 ymm), the rest the weights and the broadcast input.
template <class V>
constexpr int block_rows_for(int nv) {
  return V::kRegisters * 3 / 4 / nv;
}

// One register block of one point's product: m[r][lane] = sum_k v[r * v_ld + k] * u[k][lane],
// for R tiles and NV vectors of output channels. k runs in order, in runs of kSumRun whose
// sums are then added in order: a fixed summation order whose error grows with the run length
// plus the number of runs, not with all of K (K reaches C_in x 4 here).
template <class V, int R, int NV>
void multiply_block(const float* v, int64_t v_ld, const float* u, int64_t k_len, float* m) {
  constexpr int L = V::kLanes;
  using T = typename V::T;
  for (int64_t k0 = 0; k0 < k_len; k0 += kSumRun) {
    const int64_t k1 = k_len < k0 + kSumRun ? k_len : k0 + kSumRun;
    T acc[R][NV];
#pragma GCC unroll 24
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
      for (int j = 0; j < NV; ++j) acc[r][j] = V::zero();
    for (int64_t k = k0; k < k1; ++k) {
      T w[NV];
#pragma GCC unroll 3
      for (int j = 0; j < NV; ++j) w[j] = V::load(u + k * NV * L + j * L);
#pragma GCC unroll 24
      for (int r = 0; r < R; ++r) {
        const T b = V::set1(v[r * v_ld + k]);
#pragma GCC unroll 3
        for (int j = 0; j < NV; ++j) acc[r][j] = V::fmadd(b, w[j], acc[r][j]);
      }
    }
#pragma GCC unroll 24
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
      for (int j = 0; j < NV; ++j) {
        float* at = m + (r * NV + j) * L;
        V::store(at, k0 == 0 ? acc[r][j] : V::add(V::load(at), acc[r][j]));
      }
  }
}

// acc + coef * x for a constant coefficient, folded: the first term sets acc, and +-1 add or
// subtract (the input and output transforms' sums, term by term in order).
template <class V>
inline typename V::T add_scaled(typename V::T acc, bool first, float coef, typename V::T x) {
  if (first) return coef == 1.0f ? x : V::mul(V::set1(coef), x);
  if (coef == 1.0f) return V::add(acc, x);
  if (coef == -1.0f) return V::sub(acc, x);
  return V::fmadd(V::set1(coef), x, acc);
}

// One tile's input transform for one group, one vector of channels at a time in registers:
// each input row read once, each point's row written once; the coefficients fold into adds.
template <class V, int M, int R>
void transform_group(const float* const* d, float* const* o, int64_t ci) {
  static constexpr GroupTransform t = kGroup<M, R>;
  constexpr int n = M + R - 1;
  using T = typename V::T;
  for (int64_t c = 0; c < ci; c += V::kLanes) {
    const int64_t left = ci - c;
    T dv[n];
#pragma GCC unroll 6
    for (int j = 0; j < n; ++j) dv[j] = V::load_n(d[j] + c, left);
#pragma GCC unroll 6
    for (int i = 0; i < n; ++i) {
      T acc = V::zero();
      bool first = true;
#pragma GCC unroll 6
      for (int j = 0; j < n; ++j) {
        if (t.b[i][j] == 0.0f) continue;
        acc = add_scaled<V>(acc, first, t.b[i][j], dv[j]);
        first = false;
      }
      V::store_n(o[t.point[i]] + c, acc, left);
    }
  }
}

// One register block's outputs: tile r's m outputs = A^T (its points' products) + bias, written
// to the lanes [0, lanes) of the panel (partial tail).
template <class V, int M>
void store_block(const float (*m)[kBlockFloats], int rows, int vectors, int64_t tile0, int64_t tiles,
                 const OutputMap& map, const float* bias, int64_t lanes, float* y) {
  constexpr int L = V::kLanes;
  using T = typename V::T;
  for (int r = 0; r < rows; ++r) {
    const int64_t tile = tile0 + r;
    if (tile >= tiles) break;
    const int64_t t = map.time(tile);
#pragma GCC unroll 4
    for (int j = 0; j < M; ++j) {
      if (t + j * map.dilation >= map.w_out) break;
      float* out = y + (t + j * map.dilation) * map.co;
      for (int e = 0; e < vectors && e * L < lanes; ++e) {
        const int64_t at = (r * vectors + e) * L;
        T acc = V::zero();
        bool first = true;
#pragma GCC unroll 6
        for (int q = 0; q < M + 2; ++q) {
          const float a = output_coefficient<M>(j, q);
          if (a == 0.0f) continue;
          acc = add_scaled<V>(acc, first, a, V::load(m[q] + at));
          first = false;
        }
        acc = V::add(acc, V::load(bias + e * L));
        V::store_n(out + e * L, acc, lanes - e * L);
      }
    }
  }
}

// The table one ISA file exports.
template <class V>
WinogradKernels make_kernels(const char* name) {
  constexpr int r1 = block_rows_for<V>(1), r2 = block_rows_for<V>(2), r3 = block_rows_for<V>(3);
  static_assert(r1 * V::kLanes <= kBlockFloats, "a register block must fit the block buffer");
  WinogradKernels k;
  k.name = name;
  k.lanes = V::kLanes;
  k.rows[0] = r1, k.rows[1] = r2, k.rows[2] = r3;
  k.block[0] = multiply_block<V, r1, 1>;
  k.block[1] = multiply_block<V, r2, 2>;
  k.block[2] = multiply_block<V, r3, 3>;
  k.transform[0][0] = transform_group<V, 2, 1>, k.transform[0][1] = transform_group<V, 2, 2>;
  k.transform[0][2] = transform_group<V, 2, 3>, k.transform[1][0] = transform_group<V, 3, 1>;
  k.transform[1][1] = transform_group<V, 3, 2>, k.transform[1][2] = transform_group<V, 3, 3>;
  k.transform[2][0] = transform_group<V, 4, 1>, k.transform[2][1] = transform_group<V, 4, 2>;
  k.transform[2][2] = transform_group<V, 4, 3>;
  k.store[0] = store_block<V, 2>, k.store[1] = store_block<V, 3>, k.store[2] = store_block<V, 4>;
  return k;
}

}  // namespace lockstep::cpu::winograd
