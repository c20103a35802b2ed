// The Hopper (sm_90a, wgmma) variant of the strict-fp32 tensor-core 1-D convolution: same
// Params, same eligibility (conv_tc.h), same 3xTF32 accuracy scheme; blocks of 128 output steps
// x 64 output channels, kernel sizes 3/5/7/11. Host helpers here; the kernel in conv_wgmma.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/conv_tc_kernel.h"

namespace lockstep::cuda::wg {

inline constexpr int kBlockSteps = 128, kBlockCout = 64;

inline bool supported_ks(int ks) { return ks == 3 || ks == 5 || ks == 7 || ks == 11; }

// True when conv_wgmma.cu was compiled for sm_90a (the only target where wgmma exists).
bool compiled_for_sm90a();

// Activation rows and row stride for the block's 128 steps (conv_tc_kernel.h's geometry rule).
inline void geometry(tc::Params& p, int ks) { tc::geometry(p, ks, kBlockSteps); }
inline size_t smem_bytes(const tc::Params& p, int ks) {
  const size_t stage = static_cast<size_t>(tc::kChunk) * p.xw + static_cast<size_t>(ks) * 1024;
  return (2 * stage + static_cast<size_t>(2) * 16 * p.ng * 4) * sizeof(float);
}

// Split weights: [co tile of 64][chunk][k][hl][half][64 co][4 ci], zero rows past cout: each
// (tile, chunk) is the K-major core-matrix image the kernel copies to shared memory as is.
inline size_t weight_floats(int cin, int cout, int ks) {
  return static_cast<size_t>((cout + kBlockCout - 1) / kBlockCout) * (cin / tc::kChunk) * ks * 1024;
}
inline void split_weights_host(const float* w, int cout, int cin, int ks, float* out) {
  const int chunks = cin / tc::kChunk;
  for (int co = 0; co < cout; ++co)
    for (int ci = 0; ci < cin; ++ci)
      for (int k = 0; k < ks; ++k) {
        const int tile = co / kBlockCout, row = co % kBlockCout, chunk = ci / tc::kChunk, half = (ci % 8) / 4, j = ci % 4;
        const size_t unit = (static_cast<size_t>(tile) * chunks + chunk) * ks * 1024;
        const size_t hi_at = unit + ((static_cast<size_t>(k) * 2 + 0) * 2 + half) * 256 + row * 4 + j;
        // lo (hl = 1) is two halves of 64 x 4 further
        tc::split_tf32_host(w[(static_cast<size_t>(co) * cin + ci) * ks + k], out[hi_at], out[hi_at + 512]);
      }
}

// Once per process before launches (not during capture): `bytes` of dynamic shared memory.
cudaError_t prepare(int bytes);
// `p` must have gone through wg::geometry; p.wp holds split_weights_host's layout.
cudaError_t launch(const tc::Params& p, int ks, int n, cudaStream_t s);

}  // namespace lockstep::cuda::wg
