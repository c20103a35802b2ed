// The strict-fp32 tensor-core conv's weights on the host: TF32 rounding, the hi/lo split and the
// layout the kernel (conv_tc_kernel.h) reads its A fragments from. Host code, but tf32_rn_bits is
// also the device's rounding rule; included by conv_tc_kernel.h (and so by the probe).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace lockstep::cuda::tc {

inline constexpr int kChunk = 8;  // input channels per pipeline stage (one mma k-depth)
// The fp16 halves carry lo * 2^11 (lo is within 2^-11 of its float): scaled, lo keeps its 11 bits
// above fp16's subnormals for activations and weights down to ~2^-14 (below, the lost bits are
// under 2^-36 of the products' scale).
inline constexpr float kLoScale = 2048.0f;

// Split weights: [mb16][chunk][hl][k][lane][4] (mb16 = 16-row block of cout, hl = hi/lo), so each
// thread reads its A fragment with one 16-byte load and any tile height reads whole 16-row blocks.
constexpr int split_unit_floats(int ks) { return 2 * ks * 32 * 4; }  // one (mb16, chunk)
inline size_t split_weight_floats(int cin, int cout, int ks) {
  return static_cast<size_t>((cout + 15) / 16) * (cin / kChunk) * split_unit_floats(ks);
}
// Index of the hi part of weight (co, ci, k); lo is ks*128 floats later.
__host__ __device__ inline size_t split_index(int co, int ci, int k, int cin, int ks) {
  const int mb = co / 16, row = co % 16, chunk = ci / kChunk, kk = ci % kChunk;
  const int e = (row >= 8 ? 1 : 0) + (kk >= 4 ? 2 : 0), lane = (row % 8) * 4 + kk % 4;
  const size_t unit = static_cast<size_t>(mb) * (cin / kChunk) + chunk;
  return unit * split_unit_floats(ks) + (static_cast<size_t>(k) * 32 + lane) * 4 + e;
}

// Round float32 bits to TF32, nearest even (cvt.rn.tf32.f32); inf and NaN pass through (a NaN
// that rounding would carry into the exponent keeps its own bits).
__host__ __device__ inline uint32_t tf32_rn_bits(uint32_t bits) {
  if ((bits & 0x7f800000u) == 0x7f800000u) return (bits & 0x007fffffu) ? (bits | 0x00400000u) & 0xffffe000u : bits;
  return (bits + 0x0fffu + ((bits >> 13) & 1u)) & 0xffffe000u;
}

// One float32 weight as TF32 hi + lo, rounded as the device splits the activations (nearest
// even, as cvt.rn); inf/NaN stay whole in hi with lo = 0, and a finite weight never rounds up to inf.
// Also the device's weight split (conv_tc_split.cu), so both give the same bits.
__host__ __device__ inline void split_tf32_host(float v, float& h, float& l) {
  uint32_t vb, hb, lb;
  __builtin_memcpy(&vb, &v, 4);
  hb = tf32_rn_bits(vb);
  if ((hb & 0x7f800000u) == 0x7f800000u && (vb & 0x7f800000u) != 0x7f800000u) hb = vb & 0xffffe000u;
  __builtin_memcpy(&h, &hb, 4);
  const float rest = (vb & 0x7f800000u) == 0x7f800000u ? 0.0f : v - h;
  __builtin_memcpy(&lb, &rest, 4);
  lb = tf32_rn_bits(lb);
  __builtin_memcpy(&l, &lb, 4);
}
// Host split of float32 weights w[cout, cin, ks] into `out` (split_weight_floats entries, zeros
// for the padding rows). Per (mb16, chunk, tap, lane): the TF32 hi fragment as 4 floats (rows g,
// g+8 x channels q, q+4: the order of split_index's e), then 4 fp16 pairs for the small products'
// m16n8k16 fragment — hi of rows g and g+8, then lo*2^11 of rows g and g+8, channel q in each
// pair's low half and q+4 in its high half. conv_tc_eligible keeps |w| < 2^15 (fp16's range).
inline void split_weights_host(const float* w, int cout, int cin, int ks, float* out) {
  const size_t half = static_cast<size_t>(ks) * 128;
  auto put = [&](size_t slot, bool high, float v) {
    const __half_raw h = __float2half_rn(v);
    uint32_t bits;
    __builtin_memcpy(&bits, out + slot, 4);
    bits = high ? (bits & 0x0000ffffu) | (static_cast<uint32_t>(h.x) << 16) : (bits & 0xffff0000u) | h.x;
    __builtin_memcpy(out + slot, &bits, 4);
  };
  for (int co = 0; co < cout; ++co)
    for (int ci = 0; ci < cin; ++ci)
      for (int k = 0; k < ks; ++k) {
        const size_t i = split_index(co, ci, k, cin, ks), lane0 = i - i % 4;
        const float v = w[(static_cast<size_t>(co) * cin + ci) * ks + k];
        float h, l;
        split_tf32_host(v, h, l);
        out[i] = h;
        const bool lower_row = co % 16 >= 8, high = ci % kChunk >= 4;
        put(lane0 + half + (lower_row ? 1 : 0), high, h);
        put(lane0 + half + (lower_row ? 3 : 2), high, (v - h) * kLoScale);  // v - h and the scaling are exact
      }
}

}  // namespace lockstep::cuda::tc
