// Strict-fp32 1-D convolution on tensor cores (3xTF32), device code only: included by
// conv_tc.cu and by bench/gpu/conv3xtf32_probe.cu, so the probe measures exactly these kernels.
//
// y[n, co, t] = bias[co] + sum_{ci, k} w[co, ci, k] * x[n, ci, t + k*dil - pad]   (NCW, stride 1)
// Each float v = hi + lo with hi = tf32(v), lo = tf32(v - hi) (round to nearest even); a*b ~ ah*bh + ah*bl + al*bh:
// ah*bh on mma.sync m16n8k8 (TF32), the two small products together as one fp16 m16n8k16 over
// [ah | al*2^11] x [bl*2^11 | bh] — TF32's 11 bits fit fp16 exactly, the scaling keeps lo above
// fp16's subnormals, and fp16 runs at twice TF32's rate (ljs's convs 9-17% faster, same rel L2).
// Activations past fp16's range send the block through a second pass with TF32 small products.
// The tensor core truncates its float accumulation, a bias that grows with the reduction length
// (2e-5 at K = 3584 when one accumulator runs the whole reduction), so: ah*bh restarts from zero
// every 8-channel chunk and joins the sum with IEEE adds, and the small products (2^-11 of the
// result) keep their own tensor-core accumulator. Measured on an
// H200: rel L2 1.4e-7..2.7e-7 against float64, below cuDNN FMA's 3.5e-7..1.1e-6 on the same shapes.
// Fixed reduction order, no atomics: the same inputs give the same bits (whatever the tile).
// Infinite activations give the float64 reference's +-inf, not NaN (see the final merge).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "conv_tc_rules.h"  // same directory: the probe includes this header by path
#include "conv_tc_weights.h"
#include "cp_async.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace lockstep::cuda::tc {

#ifdef __CUDACC__

__device__ __forceinline__ void mma_tf32(float* c, const uint32_t* a, const uint32_t* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Round to TF32, nearest even; NaN stays NaN, inf stays inf. On sm_90 one native F2FP that
// leaves the low 13 bits zero (the probe prints its edge cases); cvt.rna (ties away, the first
// version) is emulated there in 3-4 instructions, and the split runs 16 times per tap and warp:
// moving to RN made the kernel 15-25% faster (H200 probe, 2026-11-30). Elsewhere the same bits
// by integer rounding, as the host's weight split.
__device__ __forceinline__ uint32_t tf32_rn(float v) {
#if __CUDA_ARCH__ >= 900
  uint32_t r;
  asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
  return r;
#else
  return tf32_rn_bits(__float_as_uint(v));
#endif
}
__device__ __forceinline__ void split_tf32(float v, uint32_t& hi, uint32_t& lo) {
  hi = tf32_rn(v);
  lo = tf32_rn(v - __uint_as_float(hi));
}

// Two floats as one f16x2 register (nearest even), `first` in the low half (the lower k index).
__device__ __forceinline__ uint32_t pack_f16x2(float first, float second) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(second), "f"(first));
  return r;
}
__device__ __forceinline__ void mma_f16(float* c, const uint32_t* a, const uint32_t* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// The weights' TF32 lo fragment (rows g, g+8 x channels q, q+4) from the pairs of split_index's
// layout: pairs 2 and 3 hold lo*2^11 of rows g and g+8, channels q (low half) and q+4 (high).
__device__ __forceinline__ void lo_from_pairs(const uint32_t* pairs, uint32_t* lo) {
  auto half_at = [](uint32_t pair, int high) {
    return __float_as_uint(__half2float(__ushort_as_half(static_cast<unsigned short>(high ? pair >> 16 : pair & 0xffffu))) / kLoScale);
  };
  lo[0] = half_at(pairs[2], 0);
  lo[1] = half_at(pairs[3], 0);
  lo[2] = half_at(pairs[2], 1);
  lo[3] = half_at(pairs[3], 1);
}

// The activation as the conv sees it: elementwise.cu's LeakyRelu (same float ops, same bits).
// pre_alpha = 1 (no prologue) gives v itself, bit for bit (v * 1 == v, NaN stays NaN): no flag
// to test in the loop.
__device__ __forceinline__ float prologue(const Params& p, float v) { return v >= 0.0f ? v : v * p.pre_alpha; }

// Bias (b, when the conv has one) and the fused leading epilogue steps on one merged output; zv is
// its residual when a step adds one. As elementwise.cu's epilogue: same float ops, same bits.
__device__ __forceinline__ float finish_value(const Params& p, float v, float b, float zv) {
  if (p.bias) v = v + b;
#pragma unroll
  for (int s = 0; s < kMaxPost; ++s) {
    if (p.post[s] == kPostAdd) v = v + zv;
    else if (p.post[s] == kPostLeaky) v = v >= 0.0f ? v : v * p.alpha;
    else if (p.post[s] == kPostRelu) v = v > 0.0f ? v : 0.0f;
  }
  return v;
}
// The same with the bias of channel co and the residual at z (nullptr when no step adds one).
__device__ __forceinline__ float finish(const Params& p, float v, int co, const float* z) {
  return finish_value(p, v, p.bias ? p.bias[co] : 0.0f, z ? *z : 0.0f);
}

// Four activations of a row from step t (a multiple of 4) into shared memory, zero outside
// [0, t_in): one 16-byte copy where rows are 16-byte aligned (vec: t_in % 4 == 0, so the granule
// is all in or all out), else four 4-byte copies (odd lengths: a voice's flows at most lengths).
__device__ __forceinline__ void load_granule(float* dst, const float* row, int t, int t_in, bool vec) {
  if (vec) {
    const bool ok = t >= 0 && t < t_in;
    cp_async16(dst, row + (ok ? t : 0), ok);
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const bool ok = t + j >= 0 && t + j < t_in;
    cp_async4(dst + j, row + (ok ? t + j : 0), ok);
  }
}

// Activations stream through a STAGES-deep cp.async ring of 8-channel chunks (load_granule), with the
// chunk's split weights beside them ([mb][hl][k][lane][4], as in global memory). grid (t, cout, n).
// F16: the small products as one fp16 m16n8k16 per position (the weights' [hi | lo*2^11] against
// the activations' [lo*2^11 | hi], both halves exact to the TF32 split's 11 bits), small scaled
// by 2^11; returns true, having stored nothing, when an fp16 half overflowed (the caller reruns
// the block with F16 false: two TF32 products, as the first version). Returns false otherwise.
template <bool F16, int KS, int STAGES, int UNROLL, int WM, int WN>
__device__ __forceinline__ bool conv_block(const Params& p) {
  using T = Tile<WM, WN>;
  extern __shared__ __align__(16) float tc_smem[];
  constexpr int WSTAGE = 2 * KS * T::mbs * 128;  // weight floats per stage
  constexpr int UNIT = 2 * KS * 32;              // 16-byte granules per (mb16, chunk)
  const int xstage = kChunk * p.xw, stage = xstage + WSTAGE;
  const int co0 = blockIdx.y * T::bm, t0 = blockIdx.x * T::bn;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const int wm = (warp / WN) * 32, wn = (warp % WN) * 32;
  const int chunks = p.cin / kChunk, mb_total = (p.cout + 15) / 16, mb0 = co0 / 16;
  const int batch = blockIdx.z / p.splits, split = blockIdx.z % p.splits;
  const int c_begin = split * chunks / p.splits, c_end = (split + 1) * chunks / p.splits;
  const float* x = p.x + static_cast<size_t>(batch) * p.cin * p.t_in;
  const int a0 = t0 - p.pad - p.r;  // first column held in shared memory (a multiple of 4)
  constexpr int kWarps = T::threads / 32;
  auto load = [&](int chunk, int s) {
    if (chunk < c_end) {
      float* xs = tc_smem + s * stage;
      // Warp w copies rows w, w + warps, ...: no division by the runtime row length (the old
      // i / ng, i % ng form cost 5-27% of the kernel's time, H200 probe 2026-11-30).
      for (int row = warp; row < kChunk; row += kWarps) {
        const float* src = x + static_cast<size_t>(chunk * kChunk + row) * p.t_in;
#pragma unroll 1
        for (int gi = lane; gi < p.ng; gi += 32) load_granule(xs + row * p.xw + gi * 4, src, a0 + gi * 4, p.t_in, p.x_vec);
      }
      float* ws = xs + xstage;
      const float* wc = p.wp + static_cast<size_t>(chunk) * (UNIT * 4);  // 64-bit math once per chunk
      for (int i = threadIdx.x; i < T::mbs * UNIT; i += T::threads) {
        const int mbl = i / UNIT, mbg = mb0 + mbl;
        const bool ok = mbg < mb_total;
        // 32-bit offsets: conv_tc_eligible keeps the split weights under 2^31 floats.
        cp_async16(ws + i * 4, wc + ((ok ? mbg : 0) * chunks * (UNIT * 4) + (i - mbl * UNIT) * 4), ok);
      }
    }
    cp_commit();
  };
  float acc[2][4][4] = {}, small[2][4][4] = {};
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) load(c_begin + s, s);
  for (int c = 0; c < c_end - c_begin; ++c) {
    cp_wait<STAGES - 2>();
    __syncthreads();
    load(c_begin + c + STAGES - 1, (c + STAGES - 1) % STAGES);
    const float* xs = tc_smem + (c % STAGES) * stage;
    if (p.pre_alpha != 1.0f) {  // the LeakyRelu prologue, once per chunk in place (not in the tap loop: registers)
      // A warp per row and a 16-byte granule per lane, as the loads: no division by the runtime row
      // length per value (with the cheaper overflow test below: low 2.052 -> 1.993 ms, seed 2.208 ->
      // 2.118, ljs 11.47 -> 11.40 device at 1024 frames, H200 2026-12-01).
      float* xm = tc_smem + (c % STAGES) * stage;
      for (int row = warp; row < kChunk; row += kWarps)
        for (int gi = lane; gi < p.ng; gi += 32) {
          float4& v = *reinterpret_cast<float4*>(xm + row * p.xw + gi * 4);
          v = make_float4(prologue(p, v.x), prologue(p, v.y), prologue(p, v.z), prologue(p, v.w));
        }
      __syncthreads();
    }
    const float* ws = xs + xstage;
    float part[2][4][4] = {};
#pragma unroll UNROLL
    for (int k = 0; k < KS; ++k) {
      uint32_t ah[2][4], ap[2][4], bh[4][2], bl[4][2];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const int mbl = wm / 16 + mi;
        const uint4 h = *reinterpret_cast<const uint4*>(ws + (mbl * 2 * KS + k) * 128 + lane * 4);
        const uint4 l = *reinterpret_cast<const uint4*>(ws + (mbl * 2 * KS + KS + k) * 128 + lane * 4);
        ah[mi][0] = h.x; ah[mi][1] = h.y; ah[mi][2] = h.z; ah[mi][3] = h.w;
        ap[mi][0] = l.x; ap[mi][1] = l.y; ap[mi][2] = l.z; ap[mi][3] = l.w;
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const int col = p.r + wn + ni * 8 + g + k * p.dil;
        const float x0 = xs[q * p.xw + col], x1 = xs[(q + 4) * p.xw + col];
        if constexpr (F16) {  // bl: the fp16 pair [lo*2^11 of rows q, q+4 | hi of rows q, q+4]
          bh[ni][0] = tf32_rn(x0);
          bh[ni][1] = tf32_rn(x1);
          const float h0 = __uint_as_float(bh[ni][0]), h1 = __uint_as_float(bh[ni][1]);
          bl[ni][0] = pack_f16x2((x0 - h0) * kLoScale, (x1 - h1) * kLoScale);
          bl[ni][1] = pack_f16x2(h0, h1);
        } else {
          split_tf32(x0, bh[ni][0], bl[ni][0]);
          split_tf32(x1, bh[ni][1], bl[ni][1]);
        }
      }
      if constexpr (F16) {
#pragma unroll
        for (int mi = 0; mi < 2; ++mi)
#pragma unroll
          for (int ni = 0; ni < 4; ++ni) {
            mma_f16(small[mi][ni], ap[mi], bl[ni]);
            mma_tf32(part[mi][ni], ah[mi], bh[ni]);
          }
      } else {
#pragma unroll
        for (int mi = 0; mi < 2; ++mi) {
          uint32_t al[4];
          lo_from_pairs(ap[mi], al);
#pragma unroll
          for (int ni = 0; ni < 4; ++ni) {
            mma_tf32(small[mi][ni], al, bh[ni]);
            mma_tf32(small[mi][ni], ah[mi], bl[ni]);
            mma_tf32(part[mi][ni], ah[mi], bh[ni]);
          }
        }
      }
    }
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mi][ni][e] += part[mi][ni][e];
  }
  cp_wait<0>();
  if constexpr (F16) {
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) small[mi][ni][e] *= 1.0f / kLoScale;  // exact: a power of two
    // An activation past fp16's range (|x| >= 65520) made an fp16 half infinite: small is then
    // inf or NaN while acc is finite (an infinite acc is the result anyway, see the merge below).
    // One add per value first: their sum is finite unless some value is not (or the sum overflows),
    // and only then each value is tested (the test per value cost three instructions each).
    float probe = 0.0f;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) probe += small[mi][ni][e];
    bool overflow = false;
    if (!isfinite(probe)) {
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
          for (int e = 0; e < 4; ++e) overflow |= !isfinite(small[mi][ni][e]) && isfinite(acc[mi][ni][e]);
    }
    if (__syncthreads_or(overflow)) return true;
  }
  // Visits this thread's outputs inside the (virtual) conv output: f(mi, ni, e, row, step).
  auto each_output = [&](auto&& f) {
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = co0 + wm + mi * 16 + g + (e >= 2 ? 8 : 0), t = t0 + wn + ni * 8 + 2 * q + (e & 1);
          if (row < p.cout && t < p.t_out) f(mi, ni, e, row, t);
        }
  };
  if (p.splits > 1 && p.split_planes == 2) {  // acc and small apart; split_reduce merges them in split order
    const size_t plane = static_cast<size_t>(p.cout) * p.t_out;
    float* pa = p.partial + static_cast<size_t>(blockIdx.z) * p.split_planes * plane;
    each_output([&](int mi, int ni, int e, int row, int t) {
      const size_t i = static_cast<size_t>(row) * p.t_out + t;
      pa[i] = acc[mi][ni][e];
      pa[plane + i] = small[mi][ni][e];
    });
    return false;
  }
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        // An infinite activation x (or a finite one that rounds to inf) makes ah*bh = +-inf, the
        // float64 result, in acc, but lo = x - hi = NaN and al*inf of either sign (NaN when al = 0)
        // in small: an infinite acc is the result. A NaN acc stays NaN; a finite acc has finite
        // parts, so small is finite. Costs nothing in the loop (no extra registers).
        const float a = acc[mi][ni][e];
        acc[mi][ni][e] = isinf(a) ? a : a + small[mi][ni][e];  // small's registers free for the store
      }
  if (p.splits > 1 && p.cluster_tile) {  // this range's sums for the cluster's merge
    __syncthreads();  // every warp is done with the ring's buffers
    each_output([&](int mi, int ni, int e, int row, int t) { tc_smem[(row - co0) * T::bn + (t - t0)] = acc[mi][ni][e]; });
    return false;
  }
  // The fragment pairs (e, e + 1): adjacent steps of one row. A tile inside the output with an even
  // row length (most of them) takes them without the bounds and pairing tests: a second copy of
  // the stores with those tests compiled out (after the prologue change above, device ms at 1024
  // frames: low 1.993 -> 1.861, seed 2.118 -> 2.099, ljs 11.398 -> 10.920; paired stores of the
  // split ranges and one division per row for the ConvTranspose phases then: low 1.866 -> 1.791,
  // seed 2.104 -> 2.020, ljs 10.898 -> 10.779; H200 2026-12-01).
  const bool pairs = p.t_out % 2 == 0;
  const bool full = pairs && co0 + T::bm <= p.cout && t0 + T::bn <= p.t_out;
  // f(v0, v1, row, t) per fragment pair in the output (v1 may lie past it where kFull is false).
  auto each_pair = [&](auto full_tag, auto&& f) {
    constexpr bool kFull = decltype(full_tag)::value;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = co0 + wm + mi * 16 + g + 8 * h;
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          const int t = t0 + wn + ni * 8 + 2 * q;
          if (kFull || (row < p.cout && t < p.t_out)) f(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1], row, t);
        }
      }
  };
  // Stores a pair at dst (row-major, t_out floats a row): one float2 where both lie in the row.
  auto put_pair = [&](auto full_tag, float* dst, float v0, float v1, int t) {
    if (decltype(full_tag)::value || (pairs && t + 1 < p.t_out)) {
      *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
    } else {
      dst[0] = v0;
      if (t + 1 < p.t_out) dst[1] = v1;
    }
  };
  if (p.splits > 1) {  // this chunk range's merged sums; split_reduce adds the ranges in split order
    float* pa = p.partial + static_cast<size_t>(blockIdx.z) * static_cast<size_t>(p.cout) * p.t_out;
    auto store_range = [&](auto full_tag) {
      each_pair(full_tag, [&](float& v0, float& v1, int row, int t) { put_pair(full_tag, pa + static_cast<size_t>(row) * p.t_out + t, v0, v1, t); });
    };
    if (full) store_range(std::true_type{});
    else store_range(std::false_type{});
    return false;
  }
  const size_t out_base = static_cast<size_t>(batch) * y_plane(p);
  float* y = p.y + out_base;
  const float* z = p.z ? p.z + out_base : nullptr;
  if (p.shuffle != 1) {  // ConvTranspose phases: scattered rows; channel, phase and bias once per row
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = co0 + wm + mi * 16 + g + 8 * h;
        if (row >= p.cout) continue;
        int co;
        const int phase = phase_of(p, row, co);
        const float b = p.bias ? p.bias[co] : 0.0f;
        const size_t base = static_cast<size_t>(co) * p.y_len;
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int u = t0 + wn + ni * 8 + 2 * q + j, t = u * p.shuffle + phase;
            if (u >= p.t_out || t < 0 || t >= p.y_len) continue;
            y[base + t] = finish_value(p, acc[mi][ni][2 * h + j], b, z ? z[base + t] : 0.0f);
          }
      }
    return false;
  }
  // A plain conv, step by step: the bias over all of this thread's outputs, then each fused step,
  // then the stores, with the step's test once per step instead of per output (same float ops,
  // same bits): ljs 13.60 -> 13.21 ms, low 2.65 -> 2.57 (H200, 2026-11-30). The two adjacent
  // steps (e, e + 1) of a fragment row load and store as one float2 when the row length is even.
  auto store = [&](auto full_tag) {
    constexpr bool kFull = decltype(full_tag)::value;
    if (p.bias)
      each_pair(full_tag, [&](float& v0, float& v1, int row, int) {
        const float b = p.bias[row];
        v0 = v0 + b;
        v1 = v1 + b;
      });
#pragma unroll
    for (int s = 0; s < kMaxPost; ++s) {
      if (p.post[s] == kPostNone) break;
      if (p.post[s] == kPostAdd) {
        each_pair(full_tag, [&](float& v0, float& v1, int row, int t) {
          const float* zr = z + static_cast<size_t>(row) * p.t_out + t;
          if (kFull || (pairs && t + 1 < p.t_out)) {
            const float2 zz = *reinterpret_cast<const float2*>(zr);
            v0 = v0 + zz.x;
            v1 = v1 + zz.y;
          } else {
            v0 = v0 + zr[0];
            if (t + 1 < p.t_out) v1 = v1 + zr[1];
          }
        });
      } else if (p.post[s] == kPostLeaky) {
        each_pair(full_tag, [&](float& v0, float& v1, int, int) {
          v0 = v0 >= 0.0f ? v0 : v0 * p.alpha;
          v1 = v1 >= 0.0f ? v1 : v1 * p.alpha;
        });
      } else {
        each_pair(full_tag, [&](float& v0, float& v1, int, int) {
          v0 = v0 > 0.0f ? v0 : 0.0f;
          v1 = v1 > 0.0f ? v1 : 0.0f;
        });
      }
    }
    each_pair(full_tag, [&](float& v0, float& v1, int row, int t) { put_pair(full_tag, y + static_cast<size_t>(row) * p.t_out + t, v0, v1, t); });
  };
  if (full) store(std::true_type{});
  else store(std::false_type{});
  return false;
}

// The TF32 rerun out of line: its registers do not weigh on the fp16 path's loop (inlined, the
// two passes raised the spills and cost the common path 4-12%, H200 probe 2026-11-30).
template <int KS, int STAGES, int UNROLL, int WM, int WN>
__device__ __noinline__ void conv_block_tf32(const Params& p) {
  conv_block<false, KS, STAGES, UNROLL, WM, WN>(p);
}

template <int KS, int STAGES, int MINB, int UNROLL, int WM, int WN>
__global__ void __launch_bounds__(Tile<WM, WN>::threads, Tile<WM, WN>::minb_cap ? Tile<WM, WN>::minb_cap : MINB * 256 / Tile<WM, WN>::threads) conv1d_3xtf32(const __grid_constant__ Params p) {
  if (!p.small_f16 || conv_block<true, KS, STAGES, UNROLL, WM, WN>(p)) conv_block_tf32<KS, STAGES, UNROLL, WM, WN>(p);
}

// The split sums of virtual output i (row * t_out + u) of batch item b, merged in split order:
// each split's own acc + small (split_planes 1), or acc and small apart, as the unsplit kernel
// keeps them, then the same final merge (2).
__device__ __forceinline__ float merged_sum(const Params& p, size_t b, size_t i) {
  const size_t plane = static_cast<size_t>(p.cout) * p.t_out;
  const float* pa = p.partial + b * p.splits * p.split_planes * plane + i;
  if (p.split_planes == 1) {  // each split already merged its own acc and small
    float v = pa[0];
    for (int s = 1; s < p.splits; ++s) v = v + pa[s * plane];
    return v;
  }
  float acc = pa[0], small = pa[plane];
  for (int s = 1; s < p.splits; ++s) {
    acc = acc + pa[s * 2 * plane];
    small = small + pa[s * 2 * plane + plane];
  }
  return isinf(acc) ? acc : acc + small;
}

// The same for four consecutive outputs (i % 4 == 0, t_out % 4 == 0: 16-byte aligned reads),
// each with merged_sum's float ops in its order.
__device__ __forceinline__ float4 merged_sum4(const Params& p, size_t b, size_t i) {
  const size_t plane = static_cast<size_t>(p.cout) * p.t_out;
  const float* pa = p.partial + b * p.splits * p.split_planes * plane + i;
  if (p.split_planes == 1) {
    float4 v = *reinterpret_cast<const float4*>(pa);
    for (int s = 1; s < p.splits; ++s) {
      const float4 a = *reinterpret_cast<const float4*>(pa + s * plane);
      v = make_float4(v.x + a.x, v.y + a.y, v.z + a.z, v.w + a.w);
    }
    return v;
  }
  float4 acc = *reinterpret_cast<const float4*>(pa), small = *reinterpret_cast<const float4*>(pa + plane);
  for (int s = 1; s < p.splits; ++s) {
    const float4 a = *reinterpret_cast<const float4*>(pa + s * 2 * plane);
    const float4 m = *reinterpret_cast<const float4*>(pa + s * 2 * plane + plane);
    acc = make_float4(acc.x + a.x, acc.y + a.y, acc.z + a.z, acc.w + a.w);
    small = make_float4(small.x + m.x, small.y + m.y, small.z + m.z, small.w + m.w);
  }
  return make_float4(isinf(acc.x) ? acc.x : acc.x + small.x, isinf(acc.y) ? acc.y : acc.y + small.y,
                     isinf(acc.z) ? acc.z : acc.z + small.z, isinf(acc.w) ? acc.w : acc.w + small.w);
}

// Merges the split sums, then the bias and epilogue steps. One thread per output element, or
// per four (a plain conv with t_out % 4 == 0: a quarter of the instructions, same float ops).
static __global__ void split_reduce(Params p, int n) {  // static: the header is in several .cu files
  const size_t plane = static_cast<size_t>(p.cout) * p.t_out, total = static_cast<size_t>(n) * plane;
  if (p.shuffle == 1 && p.t_out % 4 == 0) {
    for (size_t q = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; q < total / 4; q += static_cast<size_t>(gridDim.x) * blockDim.x) {
      const size_t idx = 4 * q, b = idx / plane, i = idx % plane;
      const int co = static_cast<int>(i / p.t_out);
      const float4 v = merged_sum4(p, b, i);
      const size_t at = b * plane + i;
      const float* z = p.z ? p.z + at : nullptr;
      *reinterpret_cast<float4*>(p.y + at) = make_float4(finish(p, v.x, co, z), finish(p, v.y, co, z ? z + 1 : nullptr),
                                                         finish(p, v.z, co, z ? z + 2 : nullptr), finish(p, v.w, co, z ? z + 3 : nullptr));
    }
    return;
  }
  for (size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; idx < total; idx += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t b = idx / plane, i = idx % plane;
    const float v = merged_sum(p, b, i);
    size_t at;
    int co;
    if (!out_at(p, static_cast<int>(i / p.t_out), static_cast<int>(i % p.t_out), at, co)) continue;
    at += b * y_plane(p);
    p.y[at] = finish(p, v, co, p.z ? p.z + at : nullptr);
  }
}

template <int KS, int STAGES, int MINB, int UNROLL, int WM, int WN>
cudaError_t launch_ks(const Params& p, int n, cudaStream_t s) {
  using T = Tile<WM, WN>;
  const dim3 grid((p.t_out + T::bn - 1) / T::bn, (p.cout + T::bm - 1) / T::bm, n * p.splits);
  conv1d_3xtf32<KS, STAGES, MINB, UNROLL, WM, WN><<<grid, T::threads, smem_bytes(p, KS, STAGES, T::bm), s>>>(p);
  if (p.splits > 1 && !p.merge_elsewhere) {
    const size_t total = static_cast<size_t>(n) * p.cout * p.t_out / (p.shuffle == 1 && p.t_out % 4 == 0 ? 4 : 1);
    const unsigned blocks = static_cast<unsigned>(std::min<size_t>((total + 255) / 256, size_t{65535} * 4));
    split_reduce<<<blocks, 256, 0, s>>>(p, n);
  }
  return cudaGetLastError();
}
template <int KS, int WM, int WN>
cudaError_t launch_config(const Params& p, int n, cudaStream_t s) {
  using C = Config<KS>;
  return launch_ks<KS, C::stages, C::minb, C::unroll, WM, WN>(p, n, s);
}
template <int KS, int WM, int WN>
cudaError_t prepare_config(int bytes) {
  using C = Config<KS>;
  return cudaFuncSetAttribute(conv1d_3xtf32<KS, C::stages, C::minb, C::unroll, WM, WN>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
template <int KS>
cudaError_t prepare_ks(int bytes) {
  cudaError_t e = prepare_config<KS, 2, 4>(bytes);
  if (e == cudaSuccess) e = prepare_config<KS, 1, 8>(bytes);
  if (e == cudaSuccess) e = prepare_config<KS, 2, 2>(bytes);
  return e;
}

// Host, once before any launch (not during graph capture): opts every instantiation into
// `bytes` of dynamic shared memory (the device's opt-in maximum; occupancy follows each launch).
inline cudaError_t prepare(int bytes) {
  cudaError_t e = prepare_ks<1>(bytes);
  if (e == cudaSuccess) e = prepare_ks<2>(bytes);
  if (e == cudaSuccess) e = prepare_ks<3>(bytes);
  if (e == cudaSuccess) e = prepare_ks<5>(bytes);
  if (e == cudaSuccess) e = prepare_ks<7>(bytes);
  if (e == cudaSuccess) e = prepare_ks<11>(bytes);
  return e;
}

template <int KS>
cudaError_t launch_tile(const Params& p, TileKind tile, int n, cudaStream_t s) {
  switch (tile) {
    case TileKind::k32x256: return launch_config<KS, 1, 8>(p, n, s);
    case TileKind::k64x64: return launch_config<KS, 2, 2>(p, n, s);
    default: return launch_config<KS, 2, 4>(p, n, s);
  }
}
// `p` must have gone through geometry(p, ks, tile_bn(tile)).
inline cudaError_t launch(const Params& p, int ks, TileKind tile, int n, cudaStream_t s) {
  switch (ks) {
    case 1: return launch_tile<1>(p, tile, n, s);
    case 2: return launch_tile<2>(p, tile, n, s);
    case 3: return launch_tile<3>(p, tile, n, s);
    case 5: return launch_tile<5>(p, tile, n, s);
    case 7: return launch_tile<7>(p, tile, n, s);
    case 11: return launch_tile<11>(p, tile, n, s);
    default: return cudaErrorInvalidValue;
  }
}

#endif  // __CUDACC__

}  // namespace lockstep::cuda::tc
