#include "backends/cpu/transpose.h"

#include <algorithm>

#include "backends/cpu/isa.h"
#include "backends/cpu/parallel.h"

namespace lockstep::cpu {

#if defined(__x86_64__) || defined(_M_X64)
void transpose_tile16(const float* in, int64_t in_ld, float* out, int64_t out_ld);  // transpose_avx512.cpp
void transpose_tile8(const float* in, int64_t in_ld, float* out, int64_t out_ld);   // transpose_avx2.cpp
#endif

namespace {

// Without a vector tile: square blocks that stay in L1 on both sides.
constexpr int64_t kScalarBlock = 8;

// W positions per work item: about 16K floats (L1/L2 resident) whatever the channel count,
// a multiple of 16; a function of the shape only, never of the thread count.
int64_t tile_w(int64_t c) { return std::max<int64_t>(64, (16384 / std::max<int64_t>(c, 1)) / 16 * 16); }

void scalar_block(const float* in, int64_t in_ld, float* out, int64_t out_ld, int64_t rows, int64_t cols) {
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) out[c * out_ld + r] = in[r * in_ld + c];
}

// The vector tile of the active ISA: its size and kernel (none: scalar blocks only).
struct Tile {
  int size = 0;
  void (*fn)(const float*, int64_t, float*, int64_t) = nullptr;
};
Tile vector_tile() {
  static const Tile tile = [] {
#if defined(__x86_64__) || defined(_M_X64)
    if (active_isa() == Isa::Avx512) return Tile{16, transpose_tile16};
    if (active_isa() == Isa::Avx2) return Tile{8, transpose_tile8};
#endif
    return Tile{};
  }();
  return tile;
}

}  // namespace

void transpose_plane(const float* in, int64_t in_ld, float* out, int64_t out_ld, int64_t rows, int64_t cols) {
  const Tile tile = vector_tile();
  const int64_t t = tile.size ? tile.size : kScalarBlock;
  const int64_t rt = rows / t * t, ct = cols / t * t;
  for (int64_t r = 0; r < rt; r += t)
    for (int64_t c = 0; c < ct; c += t) {
      if (tile.fn) tile.fn(in + r * in_ld + c, in_ld, out + c * out_ld + r, out_ld);
      else scalar_block(in + r * in_ld + c, in_ld, out + c * out_ld + r, out_ld, t, t);
    }
  // Ragged edges: the columns past ct for all rows, the rows past rt for the tiled columns.
  scalar_block(in + ct, in_ld, out + ct * out_ld, out_ld, rows, cols - ct);
  scalar_block(in + rt * in_ld, in_ld, out + rt, out_ld, rows - rt, ct);
}

void ncw_to_nwc(const float* in, float* out, int64_t n, int64_t c, int64_t w) {
  const int64_t tw = tile_w(c), tiles = (w + tw - 1) / tw, items = n * tiles;
  parallel_for(items, [&](int64_t item, int) {
    const int64_t p = item / tiles, w0 = (item % tiles) * tw, len = std::min(tw, w - w0);
    // Plane p is [c][w]; the tile is rows c, columns [w0, w0 + len) -> out rows w0.., columns c.
    transpose_plane(in + p * c * w + w0, w, out + p * c * w + w0 * c, c, c, len);
  });
}

void nwc_to_ncw(const float* in, float* out, int64_t n, int64_t c, int64_t w,
                const std::function<void(int64_t, int64_t, int64_t)>& after) {
  const int64_t tw = tile_w(c), tiles = (w + tw - 1) / tw, items = n * tiles;
  parallel_for(items, [&](int64_t item, int) {
    const int64_t p = item / tiles, w0 = (item % tiles) * tw, len = std::min(tw, w - w0);
    transpose_plane(in + p * c * w + w0 * c, c, out + p * c * w + w0, w, len, c);
    if (after) after(p, w0, w0 + len);
  });
}

}  // namespace lockstep::cpu
