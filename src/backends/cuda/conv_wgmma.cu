// Strict-fp32 1-D convolution on Hopper's warpgroup MMA (wgmma, sm_90a): the 3xTF32 scheme of
// conv_tc_kernel.h with the activations as the M operand (output steps) and the weights as N
// (output channels), both read by the tensor cores straight from shared memory.
//
// Layout trick: wgmma's tf32 operands are K-major, in 8-row x 16-byte core matrices without
// swizzle. The chunk's 8 input channels are split (hi, lo) and transposed into [K half][row][4 ch],
// one 16-byte row per input step, so tap k of the output rows [m0, m0+64) is the same buffer
// started k*dil rows further down: one descriptor per tap, no im2col copy.
// Accuracy: hi*hi restarts every 8-channel chunk and joins the float32 sum with IEEE adds; the two
// small products keep their own accumulator; fixed order, no atomics (as the mma.sync kernel).
#include "backends/cuda/conv_wgmma.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/conv_tc_kernel.h"

namespace lockstep::cuda::wg {
namespace {

constexpr int kThreads = 256;  // two warpgroups, 64 output steps each

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LOCKSTEP_WGMMA 1
#endif

__device__ __forceinline__ uint64_t desc(const void* smem, uint32_t lbo, uint32_t sbo) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return static_cast<uint64_t>((a >> 4) & 0x3FFF) | (static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32);  // swizzle bits 62-63 = 0: none
}

#ifdef LOCKSTEP_WGMMA
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// D[64 x 64] (+)= A[64 x 8] * B[8 x 64], tf32 inputs, f32 accumulators (32 per thread).
__device__ __forceinline__ void wgmma_64x64x8(float* d, uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(accumulate));
}
#endif

// Shared memory: a 2-deep cp.async ring of (raw activations [8][xw], split weights
// [k][hl][half][64][4]), then two buffers of split activations [hl][half][rows][4].
template <int KS>
__global__ void __launch_bounds__(kThreads, 1) conv1d_3xtf32_wgmma(tc::Params p) {
#ifdef LOCKSTEP_WGMMA
  extern __shared__ __align__(128) float wg_smem[];
  constexpr int kWStage = KS * 1024;  // weight floats per chunk
  const int rows = 4 * p.ng;          // activation rows held (raw columns)
  const int xstage = tc::kChunk * p.xw, stage = xstage + kWStage;
  float* split = wg_smem + 2 * stage;  // two buffers of split activations
  const int co0 = blockIdx.y * kBlockCout, t0 = blockIdx.x * kBlockSteps;
  const int wg = threadIdx.x / 128, lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const int chunks = p.cin / tc::kChunk;
  const float* x = p.x + static_cast<size_t>(blockIdx.z) * p.cin * p.t_in;
  const int a0 = t0 - p.pad - p.r;  // first raw column (a multiple of 4)
  const float* wsrc = p.wp + static_cast<size_t>(blockIdx.y) * chunks * kWStage;
  auto load = [&](int chunk, int s) {
    if (chunk < chunks) {
      float* xs = wg_smem + s * stage;
      for (int i = threadIdx.x; i < tc::kChunk * p.ng; i += kThreads) {
        const int row = i / p.ng, gi = i % p.ng;
        tc::load_granule(xs + row * p.xw + gi * 4, x + static_cast<size_t>(chunk * tc::kChunk + row) * p.t_in, a0 + gi * 4,
                         p.t_in, p.x_vec);
      }
      float* ws = xs + xstage;
      const float* src = wsrc + static_cast<size_t>(chunk) * kWStage;
      for (int i = threadIdx.x; i < kWStage / 4; i += kThreads) cp_async16(ws + i * 4, src + i * 4, true);
    }
    cp_commit();
  };
  // Split and transpose chunk `c` (raw, stage c%2) into split buffer c%2:
  // split[buf][hl][half][row][j] = hi/lo of x[4*half + j][row].
  const int split_floats = 16 * rows;
  auto split_chunk = [&](int c) {
    const float* xs = wg_smem + (c % 2) * stage;
    float* out = split + (c % 2) * split_floats;
    for (int i = threadIdx.x; i < 2 * rows; i += kThreads) {
      const int half = i / rows, row = i % rows;
      float4 h, l;
      uint32_t hb, lb;
      tc::split_tf32(tc::prologue(p, xs[(4 * half + 0) * p.xw + row]), hb, lb); h.x = __uint_as_float(hb); l.x = __uint_as_float(lb);
      tc::split_tf32(tc::prologue(p, xs[(4 * half + 1) * p.xw + row]), hb, lb); h.y = __uint_as_float(hb); l.y = __uint_as_float(lb);
      tc::split_tf32(tc::prologue(p, xs[(4 * half + 2) * p.xw + row]), hb, lb); h.z = __uint_as_float(hb); l.z = __uint_as_float(lb);
      tc::split_tf32(tc::prologue(p, xs[(4 * half + 3) * p.xw + row]), hb, lb); h.w = __uint_as_float(hb); l.w = __uint_as_float(lb);
      *reinterpret_cast<float4*>(out + (static_cast<size_t>(half) * rows + row) * 4) = h;
      *reinterpret_cast<float4*>(out + (static_cast<size_t>(2 + half) * rows + row) * 4) = l;
    }
    fence_async_smem();  // generic-proxy writes (this pass, the chunk's cp.async) -> visible to wgmma
  };
  float acc[32] = {}, part[32], small[32] = {};
  const uint32_t lbo_a = static_cast<uint32_t>(rows) * 16, lbo_b = 64 * 16;
  // Pipeline: chunk c's wgmmas run while chunk c+1 is split (and c+2 is in flight from global).
  load(0, 0);
  load(1, 1);
  cp_wait<1>();
  __syncthreads();
  split_chunk(0);
  __syncthreads();
  for (int c = 0; c < chunks; ++c) {
    const float* a_buf = split + (c % 2) * split_floats;
    const float* ws = wg_smem + (c % 2) * stage + xstage;
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < KS; ++k) {
      const int row0 = p.r + wg * 64 + k * p.dil;
      const uint64_t ah = desc(a_buf + static_cast<size_t>(row0) * 4, lbo_a, 128);
      const uint64_t al = desc(a_buf + (static_cast<size_t>(2 * rows) + row0) * 4, lbo_a, 128);
      const uint64_t bh = desc(ws + (k * 2 + 0) * 512, lbo_b, 128);
      const uint64_t bl = desc(ws + (k * 2 + 1) * 512, lbo_b, 128);
      wgmma_64x64x8(part, ah, bh, k > 0);
      wgmma_64x64x8(small, al, bh, 1);
      wgmma_64x64x8(small, ah, bl, 1);
    }
    wgmma_commit();
    if (c + 1 < chunks) {
      cp_wait<0>();
      __syncthreads();  // chunk c+1's raw data landed for every thread
      split_chunk(c + 1);  // into the other buffer: chunk c-1's wgmmas, its last readers, completed
    }
    wgmma_wait0();
#pragma unroll
    for (int i = 0; i < 32; ++i) acc[i] += part[i];
    __syncthreads();  // split c+1 visible; every warpgroup done with stage c%2
    load(c + 2, c % 2);
  }
  // D fragment: row (output step) 16*warp + lane/4 (+8 for i%4 >= 2), column (channel) 8*(i/4) + 2*(lane%4) + i%2.
  const size_t out_base = static_cast<size_t>(blockIdx.z) * p.cout * p.t_out;
  float* y = p.y + out_base;
  const float* z = p.z ? p.z + out_base : nullptr;
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int t = t0 + wg * 64 + 16 * warp + lane / 4 + ((i % 4) >= 2 ? 8 : 0);
    const int co = co0 + 8 * (i / 4) + 2 * (lane % 4) + (i % 2);
    if (co < p.cout && t < p.t_out) {
      const size_t at = static_cast<size_t>(co) * p.t_out + t;
      const float a = acc[i];
      const float v = isinf(a) ? a : a + small[i];  // as the mma.sync kernel: an infinite sum is the result
      y[at] = tc::finish(p, v, co, z ? z + at : nullptr);
    }
  }
#else
  __trap();  // built without sm_90a: available() is false, nothing launches this
#endif
}

template <int KS>
cudaError_t launch_ks(const tc::Params& p, int n, cudaStream_t s) {
  const dim3 grid((p.t_out + kBlockSteps - 1) / kBlockSteps, (p.cout + kBlockCout - 1) / kBlockCout, n);
  conv1d_3xtf32_wgmma<KS><<<grid, kThreads, smem_bytes(p, KS), s>>>(p);
  return cudaGetLastError();
}

}  // namespace

bool compiled_for_sm90a() {
#ifdef LOCKSTEP_CONV_WGMMA_SM90A
  return true;
#else
  return false;
#endif
}

cudaError_t prepare(int bytes) {
  cudaError_t e = cudaFuncSetAttribute(conv1d_3xtf32_wgmma<3>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e == cudaSuccess) e = cudaFuncSetAttribute(conv1d_3xtf32_wgmma<5>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e == cudaSuccess) e = cudaFuncSetAttribute(conv1d_3xtf32_wgmma<7>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e == cudaSuccess) e = cudaFuncSetAttribute(conv1d_3xtf32_wgmma<11>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  return e;
}

cudaError_t launch(const tc::Params& p, int ks, int n, cudaStream_t s) {
  switch (ks) {
    case 3: return launch_ks<3>(p, n, s);
    case 5: return launch_ks<5>(p, n, s);
    case 7: return launch_ks<7>(p, n, s);
    case 11: return launch_ks<11>(p, n, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace lockstep::cuda::wg
