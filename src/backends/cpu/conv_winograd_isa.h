// The Winograd kernels of one instruction set, as a table of function pointers
// (conv_winograd_kernels.h writes them once; conv_winograd_{avx512,avx2,portable}.cpp
// instantiate them). Winograd1d picks a table once, at construction.
#pragma once

#include <cstdint>

#include "backends/cpu/isa.h"

namespace lockstep::cpu::winograd {

// Largest register block, in floats (24 rows x 16 lanes): the per-point block buffers' stride.
constexpr int kBlockFloats = 24 * 16;
// Sums over K run in runs of this many terms, then the runs are added in order.
constexpr int64_t kSumRun = 64;

struct OutputMap;

using BlockFn = void (*)(const float* v, int64_t v_ld, const float* u, int64_t k_len, float* m);
using TransformFn = void (*)(const float* const* d, float* const* o, int64_t ci);
using StoreFn = void (*)(const float (*m)[kBlockFloats], int rows, int vectors, int64_t tile0, int64_t tiles,
                         const OutputMap& map, const float* bias, int64_t lanes, float* y);

struct WinogradKernels {
  const char* name = "";
  int lanes = 4;                   // floats per vector
  int rows[3] = {};                // tiles per register block for 1, 2, 3 vectors of channels
  BlockFn block[3] = {};           // by vectors - 1
  TransformFn transform[3][3] = {};  // by [m - 2][taps - 1]
  StoreFn store[3] = {};           // by m - 2
};

// The table for `isa`: its own kernels where built (AVX-512 and AVX2 on x86-64, NEON on arm64),
// else the portable one.
const WinogradKernels& winograd_kernels(Isa isa);

}  // namespace lockstep::cpu::winograd
