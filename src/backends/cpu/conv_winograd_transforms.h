// The ISA-free arithmetic of the Winograd 1-D convolution: F(m,r)'s transforms derived at
// compile time in double, the output transform's coefficients, and where a tile's outputs go.
// The SIMD kernels that apply them are in conv_winograd_kernels.h.
#pragma once

#include <cstdint>

#include "backends/cpu/conv_winograd.h"

namespace lockstep::cpu::winograd {

constexpr double kFinitePoints[] = {0, 1, -1, 2, -2};

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

inline GroupTransform group_transform(int m, int r) {
  static constexpr GroupTransform table[3][3] = {{kGroup<2, 1>, kGroup<2, 2>, kGroup<2, 3>},
                                                 {kGroup<3, 1>, kGroup<3, 2>, kGroup<3, 3>},
                                                 {kGroup<4, 1>, kGroup<4, 2>, kGroup<4, 3>}};
  return table[m - 2][r - 1];
}

}  // namespace lockstep::cpu::winograd
