// The strict-fp32 tensor-core conv's parameters and host-side rules: the kernel's Params, the
// block tiles and their choice, pipeline depth per kernel size, the split-reduction rule and the
// shared-memory sizes. Host and device code; the kernels are in conv_tc_kernel.h, which includes
// this (as does the probe, by path).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "conv_tc_weights.h"  // kChunk; same directory, for the probe

namespace lockstep::cuda::tc {

inline constexpr int kMaxPost = 2;
enum Post : int { kPostNone = 0, kPostAdd = 1, kPostLeaky = 2, kPostRelu = 3 };

// Block tiles: WM x WN warps of 32 (co) x 32 (t) each.
enum class TileKind : int { k64x128 = 0, k32x256 = 1, k64x64 = 2 };
template <int WM, int WN>
struct Tile {
  static constexpr int bm = 32 * WM, bn = 32 * WN, threads = 32 * WM * WN, mbs = bm / 16;
  // 4-warp 64x64 blocks: three per SM, so that the flows' 384 split blocks (96 x 4) fit the H200's 132 SMs in
  // one wave (a cap of 168 registers, no spills; uncapped, k5 took 174 registers, two blocks per
  // SM and two waves). The 128 cap of four blocks per SM spilled 44-144 bytes.
  static constexpr int minb_cap = threads == 128 ? 3 : 0;  // 0: MINB 256-thread blocks' worth
};

struct Params {
  const float* x;     // [n, cin, t_in], 16-byte aligned
  // 1: t_in % 4 == 0, rows load as 16-byte granules; 0: any t_in, four 4-byte copies a granule.
  int x_vec = 1;
  const float* wp;    // split weights (split_weights_host)
  const float* bias;  // [cout] or nullptr
  float* y;           // [n, cout, t_out]
  // Up to kMaxPost leading epilogue steps applied in the store (the node's epilogue semantics):
  // kPostAdd adds z (the output's shape), kPostLeaky is LeakyRelu(alpha), kPostRelu is Relu.
  const float* z;
  int post[2];
  float alpha;
  int cin, cout, t_in, t_out, dil, pad;
  int xw, ng, r;      // shared row stride, 16-byte granules per row, (-pad) mod 4 (set by geometry)
  // Split reduction (choose_splits): splits > 1 divides the 8-channel chunks into `splits` ranges,
  // one block row each; blocks write their unmerged sums to `partial` and split_reduce finishes.
  int splits = 1;
  float* partial = nullptr;  // [n][splits][split_planes][cout][t_out]
  // 1: each block stores acc + small (its own final merge) and the merge sums the splits; 2: acc
  // and small apart, merged as the unsplit kernel merges them (LOCKSTEP_CUDA_CONV_TC_SPLIT_PLANES=2).
  int split_planes = 1;
  // Prologue: LeakyRelu(pre_alpha) applied to every activation as it is read (the producer
  // LeakyRelu node's kernel then does not run in graph replay); 1 is none.
  float pre_alpha = 1.0f;
  // ConvTranspose as one conv (polyphase): row r = co*shuffle + phase of the virtual conv, step u,
  // is output (co, u*shuffle + phase - shuffle_pad) of a y with y_len steps. shuffle 1: a Conv.
  int shuffle = 1, shuffle_pad = 0, y_len = 0;
  // The small products (hi*lo + lo*hi) as one fp16 m16n8k16 per position; 0: two TF32 m16n8k8,
  // as the first version (LOCKSTEP_CUDA_CONV_TC_F16=0). Same accuracy, different bits.
  int small_f16 = 1;
  // Split reductions whose merge the caller launches itself (conv_tc.cu's WN gate): set, launch()
  // runs the conv kernel alone and the partial sums wait in `partial`.
  int merge_elsewhere = 0;
  // Split reductions merged inside a thread-block cluster (one block per range, conv_tc.cu's gate
  // cluster kernel): each block leaves its range's sums in its shared memory, [bm][bn], instead of
  // `partial` (split_planes 1 only).
  int cluster_tile = 0;
};

// ConvTranspose phases: virtual row `row` is real channel co (set) at step u * shuffle + the
// returned offset of y (before the crop test).
__host__ __device__ inline int phase_of(const Params& p, int row, int& co) {
  co = row / p.shuffle;
  return row - co * p.shuffle - p.shuffle_pad;
}
// Where virtual output (row, u) lands: false outside y (ConvTranspose crops); sets the flat
// index in the batch item and the real output channel (for the bias).
__host__ __device__ inline bool out_at(const Params& p, int row, int u, size_t& idx, int& co) {
  if (p.shuffle == 1) {
    co = row;
    idx = static_cast<size_t>(row) * p.t_out + u;
    return true;
  }
  const int t = u * p.shuffle + phase_of(p, row, co);
  idx = static_cast<size_t>(co) * p.y_len + t;
  return t >= 0 && t < p.y_len;
}
__host__ __device__ inline size_t y_plane(const Params& p) {  // output floats per batch item
  return p.shuffle == 1 ? static_cast<size_t>(p.cout) * p.t_out : static_cast<size_t>(p.cout / p.shuffle) * p.y_len;
}

inline void geometry(Params& p, int ks, int bn) {
  p.r = ((-p.pad) % 4 + 4) % 4;
  p.ng = (p.r + bn + (ks - 1) * p.dil + 3) / 4;
  p.xw = ((p.ng * 4 + 23) / 32) * 32 + 8;  // >= 4*ng and = 8 mod 32: conflict-free B loads
}
// Per kernel size: pipeline stages, min 256-thread blocks per SM (2 caps registers at 128),
// tap-loop unroll. Chosen from the probe's sweep (bench/gpu/conv3xtf32_probe.cu).
template <int KS> struct Config;

template <> struct Config<1> { static constexpr int stages = 3, minb = 2, unroll = 1; };  // not yet measured
template <> struct Config<2> { static constexpr int stages = 3, minb = 2, unroll = 2; };  // ConvTranspose phases
// k3 and k5 unrolled by 2 since the fp16 small products (k5 unrolled whole spilled 272 bytes on
// the 8-warp tiles): the V3-type k5 d2 shape 18% faster, k3 3-4% (H200 probe, 2026-11-30).
template <> struct Config<3> { static constexpr int stages = 3, minb = 2, unroll = 2; };
template <> struct Config<5> { static constexpr int stages = 3, minb = 2, unroll = 2; };
template <> struct Config<7> { static constexpr int stages = 2, minb = 2, unroll = 2; };
template <> struct Config<11> { static constexpr int stages = 2, minb = 2, unroll = 2; };
inline int stages_for(int ks) {
  return ks == 1 ? Config<1>::stages : ks == 2 ? Config<2>::stages : ks == 3 ? Config<3>::stages : ks == 5 ? Config<5>::stages : ks == 7 ? Config<7>::stages : Config<11>::stages;
}
inline size_t smem_bytes(const Params& p, int ks, int stages, int bm) {
  return static_cast<size_t>(stages) * (kChunk * p.xw + 2 * ks * bm * kChunk) * sizeof(float);
}
inline int tile_bm(TileKind t) { return t == TileKind::k32x256 ? 32 : 64; }
inline int tile_bn(TileKind t) { return t == TileKind::k32x256 ? 256 : t == TileKind::k64x64 ? 64 : 128; }
// From the H200 probe (2026-11-30, every tile on 17 shapes): C_out <= 32 takes the 32-row tile
// (1.9-2.1x faster than 64x128 there); a 64x128 grid of at most half the SMs the 4-warp 64x64 tile
// (1.2-1.25x faster; it loses 10-35% on grids of 128+ blocks); kernels of 5+ taps with C_out % 32 == 0
// the 32x256 tile (3-5% faster); else 64x128. The ConvTranspose phases (kernel 2 here) take 32x256
// too: 2-4% faster than 64x128 on all six of the presets' phase convs at 1024 frames, the same at
// 128 (H200, 2026-12-01; 64x64 was 3-6% slower, kernel 3 on 32x256 up to 5% slower at 128 frames).
inline TileKind choose_tile(int n, int cout, int t_out, int ks, int sms) {
  if (cout <= 32) return TileKind::k32x256;
  const long blocks = static_cast<long>(n) * ((cout + 63) / 64) * ((t_out + 127) / 128);
  if (2 * blocks <= sms) return TileKind::k64x64;
  return (ks >= 5 || ks == 2) && cout % 32 == 0 ? TileKind::k32x256 : TileKind::k64x128;
}

// The LeakyRelu prologue (conv_tc.cu) by default only where one 32-row output tile covers cout.
inline constexpr int kPrologueMaxCout = 32;

// Reduction splits for grids that leave SMs idle (the flows' convs at 1024 frames fill 96 of 132
// SMs with one 4-warp block each): double the ranges while the grid stays under
// kSplitTargetBlocks and each range keeps kSplitMinTaps channel-taps; grids under kSplitSmallGrid
// blocks split down to kSplitSmallMinTaps. A function of the shape and the tile; the tile
// (choose_tile) also reads the SM count, so two GPU models with different SM counts can sum some
// convs in a different order (same bits run to run on one model); splits are part of the numerics.
// H200, 2026-12-01, against the first rule (384 blocks, 64 taps), device ms: 1024 frames seed
// 2.467 -> 2.325, low 2.223 -> 2.215, ljs 11.503 -> 11.501; 128 frames seed 1.157 -> 1.173 (without
// the small-grid floor 1.236: its flows want 4 ranges there), low 0.916 -> 0.889, ljs 2.751 -> 2.642.
// With one-plane merges (a range costs less) 96 taps instead of 160: 1024 frames within 0.2%,
// 128 frames seed 1.123 -> 1.105, low 0.835 -> 0.784, ljs 2.537 -> 2.495 ms (H200, 2026-12-01).
// LOCKSTEP_CUDA_CONV_TC_SPLIT_RULE=blocks:taps overrides the first two (A/B timing).
inline constexpr long kSplitTargetBlocks = 256, kSplitSmallGrid = 32;
inline constexpr int kSplitMinTaps = 96, kSplitSmallMinTaps = 64, kMaxSplits = 8;
inline int choose_splits(int n, int cin, int cout, int t_out, int ks, TileKind tile, long target_blocks = kSplitTargetBlocks,
                         int min_taps = kSplitMinTaps) {
  // The 8-warp tiles lost 5-70% when split (H200, 2026-11-30: ljs 16.79 -> 17.07 ms, seed 3.81 -> 4.18;
  // again with one-plane merges, 2026-12-01, where fewer than 200-400 blocks: within 0.3% at 1024
  // frames, up to +14% at 128).
  if (tile != TileKind::k64x64) return 1;
  const long blocks = static_cast<long>(n) * ((cout + tile_bm(tile) - 1) / tile_bm(tile)) * ((t_out + tile_bn(tile) - 1) / tile_bn(tile));
  const int chunks = cin / kChunk;
  auto min_chunks = [&](int taps) { return (taps + kChunk * ks - 1) / (kChunk * ks); };
  int splits = 1;
  while (splits < kMaxSplits && blocks * splits < target_blocks &&
         chunks / (2 * splits) >= min_chunks(blocks * splits < kSplitSmallGrid ? std::min(min_taps, kSplitSmallMinTaps) : min_taps))
    splits *= 2;
  return splits;
}
inline size_t split_partial_floats(int n, int cout, int t_out, int splits, int planes) {  // Params::partial
  return splits > 1 ? static_cast<size_t>(n) * splits * planes * cout * t_out : 0;
}

// The kernel sizes with an instantiation; others are not supported (conv_tc.cu checks first).
// Kernel size 1 (the flow's 1x1 convs) is instantiated but not yet measured: opt-in only.
inline bool supported_ks(int ks) { return ks == 3 || ks == 5 || ks == 7 || ks == 11; }
inline bool instantiated_ks(int ks) { return ks == 1 || ks == 2 || supported_ks(ks); }

}  // namespace lockstep::cuda::tc
