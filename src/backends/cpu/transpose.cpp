#include "backends/cpu/transpose.h"

#include <immintrin.h>

#include <algorithm>

namespace lockstep::cpu {

namespace {

// W positions per work item: about 16K floats (L1/L2 resident) whatever the channel count,
// a multiple of 16; a function of the shape only, never of the thread count.
int64_t tile_w(int64_t c) { return std::max<int64_t>(64, (16384 / std::max<int64_t>(c, 1)) / 16 * 16); }

__attribute__((target("avx512f"))) void tile16(const float* in, int64_t in_ld, float* out, int64_t out_ld) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(in + i * in_ld);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(out + i * out_ld, r[i]);
}

void scalar_block(const float* in, int64_t in_ld, float* out, int64_t out_ld, int64_t rows, int64_t cols) {
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) out[c * out_ld + r] = in[r * in_ld + c];
}

bool have_avx512() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return yes;
}

}  // namespace

void transpose_plane(const float* in, int64_t in_ld, float* out, int64_t out_ld, int64_t rows, int64_t cols) {
  const bool vec = have_avx512();
  const int64_t r16 = vec ? rows / 16 * 16 : 0, c16 = vec ? cols / 16 * 16 : 0;
  for (int64_t r = 0; r < r16; r += 16)
    for (int64_t c = 0; c < c16; c += 16) tile16(in + r * in_ld + c, in_ld, out + c * out_ld + r, out_ld);
  // Ragged edges: the columns past c16 for all rows, the rows past r16 for the tiled columns.
  scalar_block(in + c16, in_ld, out + c16 * out_ld, out_ld, rows, cols - c16);
  scalar_block(in + r16 * in_ld, in_ld, out + r16, out_ld, rows - r16, c16);
}

void ncw_to_nwc(const float* in, float* out, int64_t n, int64_t c, int64_t w) {
  const int64_t tw = tile_w(c), tiles = (w + tw - 1) / tw, items = n * tiles;
#pragma omp parallel for schedule(static)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t p = item / tiles, w0 = (item % tiles) * tw, len = std::min(tw, w - w0);
    // Plane p is [c][w]; the tile is rows c, columns [w0, w0 + len) -> out rows w0.., columns c.
    transpose_plane(in + p * c * w + w0, w, out + p * c * w + w0 * c, c, c, len);
  }
}

void nwc_to_ncw(const float* in, float* out, int64_t n, int64_t c, int64_t w,
                const std::function<void(int64_t, int64_t, int64_t)>& after) {
  const int64_t tw = tile_w(c), tiles = (w + tw - 1) / tw, items = n * tiles;
#pragma omp parallel for schedule(static)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t p = item / tiles, w0 = (item % tiles) * tw, len = std::min(tw, w - w0);
    transpose_plane(in + p * c * w + w0 * c, c, out + p * c * w + w0, w, len, c);
    if (after) after(p, w0, w0 + len);
  }
}

}  // namespace lockstep::cpu
