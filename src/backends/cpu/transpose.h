// Plane transposes between NCW (planar) and NWC (channels-last, the layout oneDNN's brgemm
// convolutions pick) in 16x16 (AVX-512) or 8x8 (AVX2) vector tiles, scalar 8x8 blocks
// elsewhere; pure data movement, so no effect on bits.
#pragma once

#include <cstdint>
#include <functional>

namespace lockstep::cpu {

// out[c * out_ld + r] = in[r * in_ld + c] for r < rows, c < cols.
void transpose_plane(const float* in, int64_t in_ld, float* out, int64_t out_ld, int64_t rows, int64_t cols);

// NCW -> NWC for each of n planes [c][w] -> [w][c], parallel over W tiles (static schedule).
void ncw_to_nwc(const float* in, float* out, int64_t n, int64_t c, int64_t w);

// NWC -> NCW; `after(plane, w_begin, w_end)` runs on each (plane, W tile) once it is written,
// so an epilogue can work on rows [c][w_begin, w_end) while they are in cache. Tile bounds do
// not depend on the thread count.
void nwc_to_ncw(const float* in, float* out, int64_t n, int64_t c, int64_t w,
                const std::function<void(int64_t, int64_t, int64_t)>& after);

}  // namespace lockstep::cpu
