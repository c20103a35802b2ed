// The arithmetic of the Winograd 1-D convolution (conv_winograd.cpp plans and threads it):
// F(m,r)'s transforms derived at compile time, the input transform of one tile, the register-
// blocked AVX-512 GEMM of one point, and the output transform of one register block.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backends/cpu/conv_winograd.h"

namespace lockstep::cpu::winograd {

constexpr int kLanes = 16;
constexpr double kFinitePoints[] = {0, 1, -1, 2, -2};

// One register block of one point's product: m[r][lane] = sum_k v[r * v_ld + k] * u[k][lane],
// for R tiles and NV vectors of 16 output channels. k runs in order, in runs of kSumRun whose
// sums are then added in order: a fixed summation order whose error grows with the run length
// plus the number of runs, not with all of K (K reaches C_in x 4 here).
constexpr int64_t kSumRun = 64;
template <int R, int NV>
[[gnu::target("avx512f")]] void multiply_block(const float* v, int64_t v_ld, const float* u, int64_t k_len, float* m) {
  for (int64_t k0 = 0; k0 < k_len; k0 += kSumRun) {
    const int64_t k1 = std::min(k_len, k0 + kSumRun);
    __m512 acc[R][NV];
#pragma GCC unroll 24
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
      for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_setzero_ps();
    for (int64_t k = k0; k < k1; ++k) {
      __m512 w[NV];
#pragma GCC unroll 3
      for (int j = 0; j < NV; ++j) w[j] = _mm512_loadu_ps(u + k * NV * kLanes + j * kLanes);
#pragma GCC unroll 24
      for (int r = 0; r < R; ++r) {
        const __m512 b = _mm512_set1_ps(v[r * v_ld + k]);
#pragma GCC unroll 3
        for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_fmadd_ps(b, w[j], acc[r][j]);
      }
    }
    if (k0 == 0) {
#pragma GCC unroll 24
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
        for (int j = 0; j < NV; ++j) _mm512_storeu_ps(m + (r * NV + j) * kLanes, acc[r][j]);
    } else {
#pragma GCC unroll 24
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
        for (int j = 0; j < NV; ++j) {
          float* at = m + (r * NV + j) * kLanes;
          _mm512_storeu_ps(at, _mm512_add_ps(_mm512_loadu_ps(at), acc[r][j]));
        }
    }
  }
}

using BlockFn = void (*)(const float*, int64_t, const float*, int64_t, float*);

// Register blocks: 24 accumulators each (of 32 zmm registers).
inline BlockFn block_fn(int vectors) {
  switch (vectors) {
    case 3: return multiply_block<8, 3>;
    case 2: return multiply_block<12, 2>;
    default: return multiply_block<24, 1>;
  }
}
inline int block_rows(int vectors) { return vectors == 3 ? 8 : vectors == 2 ? 12 : 24; }
constexpr int kBlockFloats = 24 * kLanes;

// Tile i's first output: tiles of m outputs d apart interleave in blocks of m * d outputs.
inline int64_t tile_start(int64_t tile, int64_t m, int64_t d) { return tile / d * m * d + tile % d; }

// Where tile i's outputs go: t, t + d, ..., t + (m-1)d in rows of co channels.
struct OutputMap {
  int64_t tile = 2, dilation = 1, w_out = 1, co = 1;
  int64_t time(int64_t i) const { return tile_start(i, tile, dilation); }
};

// F(m,r)'s transforms, computed at compile time in double: B^T = (V^-1)^T for the Vandermonde
// matrix V of the group's points, each row scaled to integers; G's rows take the inverse scale.
struct GroupTransform {
  int inputs = 0;                     // n = m + r - 1 (also the number of points)
  int point[Winograd1d::kMaxPoints] = {};  // global point index of local point i
  float b[Winograd1d::kMaxPoints][Winograd1d::kMaxPoints] = {};  // v_i = sum_j b[i][j] d_j
  double g_scale[Winograd1d::kMaxPoints] = {};                    // u_i = g_scale[i] * (G g)_i
};

constexpr double ipow(double x, int e) {
  double r = 1.0;
  for (int i = 0; i < e; ++i) r *= x;
  return r;
}
constexpr double cabs(double x) { return x < 0 ? -x : x; }
constexpr double cround(double x) {
  return x < 0 ? -static_cast<double>(static_cast<long long>(-x + 0.5)) : static_cast<double>(static_cast<long long>(x + 0.5));
}

constexpr GroupTransform make_group_transform(int m, int r) {
  constexpr int kN = Winograd1d::kMaxPoints;
  GroupTransform t;
  const int n = m + r - 1;
  t.inputs = n;
  double a[kN][kN] = {}, inv[kN][kN] = {};
  for (int i = 0; i + 1 < n; ++i)
    for (int e = 0; e < n; ++e) a[i][e] = ipow(kFinitePoints[i], e);
  a[n - 1][n - 1] = 1.0;  // inf: the leading coefficient
  for (int i = 0; i < n; ++i) inv[i][i] = 1.0;
  for (int col = 0; col < n; ++col) {  // Gauss-Jordan with partial pivoting
    int pivot = col;
    for (int i = col + 1; i < n; ++i)
      if (cabs(a[i][col]) > cabs(a[pivot][col])) pivot = i;
    for (int j = 0; j < n; ++j) {
      const double ta = a[col][j], ti = inv[col][j];
      a[col][j] = a[pivot][j], inv[col][j] = inv[pivot][j];
      a[pivot][j] = ta, inv[pivot][j] = ti;
    }
    const double scale = a[col][col];
    for (int j = 0; j < n; ++j) a[col][j] /= scale, inv[col][j] /= scale;
    for (int i = 0; i < n; ++i) {
      const double f = a[i][col];
      if (i == col || f == 0.0) continue;
      for (int j = 0; j < n; ++j) a[i][j] -= f * a[col][j], inv[i][j] -= f * inv[col][j];
    }
  }
  for (int i = 0; i < n; ++i) {
    t.point[i] = i + 1 < n ? i : m + 1;
    int s = 1;  // the smallest integer scale of B^T row i (column i of V^-1)
    for (; s < 720; ++s) {
      bool whole = true;
      for (int j = 0; j < n; ++j) whole = whole && cabs(inv[j][i] * s - cround(inv[j][i] * s)) < 1e-9;
      if (whole) break;
    }
    for (int j = 0; j < n; ++j) t.b[i][j] = static_cast<float>(cround(inv[j][i] * s));
    t.g_scale[i] = 1.0 / s;
  }
  return t;
}

template <int M, int R>
inline constexpr GroupTransform kGroup = make_group_transform(M, R);

// The output transform shared by all groups: finite point p adds p^j * m_p to output j, inf
// adds m_inf to the last output.
template <int M>
constexpr float output_coefficient(int j, int q) {
  return q == M + 1 ? (j == M - 1 ? 1.0f : 0.0f) : static_cast<float>(ipow(kFinitePoints[q], j));
}

// acc + coef * x for a constant coefficient, folded: the first term sets acc, and +-1 add or
// subtract (the input and output transforms' sums, term by term in order).
[[gnu::target("avx512f"), gnu::always_inline]] inline __m512 add_scaled(__m512 acc, bool first, float coef, __m512 x) {
  if (first) return coef == 1.0f ? x : _mm512_mul_ps(_mm512_set1_ps(coef), x);
  if (coef == 1.0f) return _mm512_add_ps(acc, x);
  if (coef == -1.0f) return _mm512_sub_ps(acc, x);
  return _mm512_fmadd_ps(_mm512_set1_ps(coef), x, acc);
}

// One tile's input transform for one group, 16 channels at a time in registers: each input row
// read once, each point's row written once; the constant coefficients fold into adds.
template <int M, int R>
[[gnu::target("avx512f")]] void transform_group(const float* const* d, float* const* o, int64_t ci) {
  static constexpr GroupTransform t = kGroup<M, R>;
  constexpr int n = M + R - 1;
  for (int64_t c = 0; c < ci; c += kLanes) {
    const __mmask16 mask = ci - c >= kLanes ? __mmask16(0xFFFF) : __mmask16((1u << (ci - c)) - 1);
    __m512 dv[n];
#pragma GCC unroll 6
    for (int j = 0; j < n; ++j) dv[j] = _mm512_maskz_loadu_ps(mask, d[j] + c);
#pragma GCC unroll 6
    for (int i = 0; i < n; ++i) {
      __m512 acc = _mm512_setzero_ps();
      bool first = true;
#pragma GCC unroll 6
      for (int j = 0; j < n; ++j) {
        if (t.b[i][j] == 0.0f) continue;
        acc = add_scaled(acc, first, t.b[i][j], dv[j]);
        first = false;
      }
      _mm512_mask_storeu_ps(o[t.point[i]] + c, mask, acc);
    }
  }
}

using TransformFn = void (*)(const float* const*, float* const*, int64_t);
inline TransformFn transform_fn(int m, int r) {
  static constexpr TransformFn table[3][3] = {
      {transform_group<2, 1>, transform_group<2, 2>, transform_group<2, 3>},
      {transform_group<3, 1>, transform_group<3, 2>, transform_group<3, 3>},
      {transform_group<4, 1>, transform_group<4, 2>, transform_group<4, 3>}};
  return table[m - 2][r - 1];
}
inline GroupTransform group_transform(int m, int r) {
  static constexpr GroupTransform table[3][3] = {{kGroup<2, 1>, kGroup<2, 2>, kGroup<2, 3>},
                                                 {kGroup<3, 1>, kGroup<3, 2>, kGroup<3, 3>},
                                                 {kGroup<4, 1>, kGroup<4, 2>, kGroup<4, 3>}};
  return table[m - 2][r - 1];
}

// One register block's outputs: tile r's m outputs = A^T (its points' products) + bias, written
// to the lanes [0, lanes) of the panel (masked tail).
template <int M>
[[gnu::target("avx512f")]] void store_block(const float (*m)[kBlockFloats], int rows, int vectors, int64_t tile0,
                                            int64_t tiles, const OutputMap& map, const float* bias, int64_t lanes,
                                            float* y) {
  for (int r = 0; r < rows; ++r) {
    const int64_t tile = tile0 + r;
    if (tile >= tiles) break;
    const int64_t t = map.time(tile);
#pragma GCC unroll 4
    for (int j = 0; j < M; ++j) {
      if (t + j * map.dilation >= map.w_out) break;
      float* out = y + (t + j * map.dilation) * map.co;
      for (int e = 0; e < vectors && e * kLanes < lanes; ++e) {
        const int64_t left = lanes - e * kLanes;
        const __mmask16 mask = left >= kLanes ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
        const int64_t at = (r * vectors + e) * kLanes;
        __m512 acc = _mm512_setzero_ps();
        bool first = true;
#pragma GCC unroll 6
        for (int q = 0; q < M + 2; ++q) {
          const float a = output_coefficient<M>(j, q);
          if (a == 0.0f) continue;
          acc = add_scaled(acc, first, a, _mm512_load_ps(m[q] + at));
          first = false;
        }
        acc = _mm512_add_ps(acc, _mm512_loadu_ps(bias + e * kLanes));
        _mm512_mask_storeu_ps(out + e * kLanes, mask, acc);
      }
    }
  }
}

}  // namespace lockstep::cpu::winograd
