// 1-D convolutions by Winograd's minimal filtering (conv_winograd.cpp): outputs in tiles of m,
// the taps in groups of three, each group F(m,3) (or F(m,2), F(m,1)) over the points
// {0, 1, -1, 2, -2 | inf}. m = 2 takes 1.4-1.5x fewer multiplications than direct convolution
// at ~1.4x its rounding error; m = 4 takes ~1.8x fewer at ~3x (docs/cpu.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernel.h"

namespace lockstep::cpu {

namespace winograd {
struct WinogradKernels;  // conv_winograd_isa.h
}

// A stride-1, group-1 1-D convolution on dense channels-last buffers (dilation counts from 1).
struct Winograd1dShape {
  int64_t n = 1, ci = 1, co = 1, w_in = 1, w_out = 1, k = 2, dilation = 1, pad_begin = 0;
  int tile = 2;  // m, outputs per tile: 2, 3 or 4
};

class Winograd1d {
 public:
  static constexpr int kMaxPoints = 6;  // m + 2 points for m <= 4

  // weights as ONNX stores them, [co][ci][k]; bias [co] or null. Work is split over `threads`;
  // the kernels are `isa`'s (the same bits on every ISA: conv_winograd_kernels.h).
  Winograd1d(const Winograd1dShape& shape, const float* weights, const float* bias, int threads,
             Isa isa = active_isa());
  // Weights made by the caller (e.g. a ConvTranspose's phases): `weights_key` names them and
  // the bias for the shared transform cache, and `weights` is called only when no transform
  // under that key is alive, so a new length neither rebuilds nor rehashes them.
  Winograd1d(const Winograd1dShape& shape, const std::function<const float*()>& weights, const float* bias,
             const std::string& weights_key, int threads, Isa isa = active_isa());
  // Scratch bytes run() needs (one transformed-input buffer per thread).
  size_t scratch_bytes() const { return static_cast<size_t>(threads_) * v_floats_ * sizeof(float); }
  // x [n][w_in][ci] -> y [n][w_out][co]. Each output is summed whole by one thread in a fixed
  // order, so the bits do not depend on the thread count.
  void run(const float* x, float* y, std::byte* scratch) const;
  const Winograd1dShape& shape() const { return s_; }
  // The instruction set its kernels were built for ("avx512", "avx2", "neon", "portable").
  const char* isa_name() const;
  // Whether the active ISA has a vector FMA kernel (AVX-512F, AVX2+FMA, NEON); without one the
  // factory below keeps oneDNN.
  static bool available();

 private:
  struct Group {
    int64_t first_tap = 0, taps = 0, inputs = 0;  // inputs: m + taps - 1
    int64_t offset[kMaxPoints] = {-1, -1, -1, -1, -1, -1};  // the group's channels in each point's K
  };
  void transform_chunk(const float* x, int64_t tile0, float* v) const;
  // Output channel panels [panel0, panel1) of one chunk.
  void multiply_chunk(const float* v, int64_t tile0, float* y, int64_t panel0, int64_t panel1) const;
  int64_t tile_time(int64_t tile) const;  // the tile's first output

  Winograd1dShape s_;
  int threads_ = 1;
  const winograd::WinogradKernels* kernels_ = nullptr;
  std::vector<Group> groups_;
  int points_ = 4;                             // m + 2: finite points 0..m, then inf
  int64_t k_[kMaxPoints] = {};                 // reduction length of each point's product
  int64_t v_offset_[kMaxPoints] = {};          // each point's block in a chunk's V buffer
  // Transformed weights [panel][k][panel width] per point and the bias padded to the panels:
  // shared by every Winograd1d of the same weights and geometry (a new length compiles again).
  struct Transformed {
    std::vector<float> u[kMaxPoints];
    std::vector<float> bias;
  };
  std::shared_ptr<const Transformed> w_;
  std::vector<float> zeros_;         // one row of ci zeros: the input outside [0, w_in)
  int vectors_ = 1;                  // vectors of output channels per panel (1..3)
  int rows_ = 8;                     // tiles per register block
  int64_t panels_ = 1, tiles_ = 0, chunk_ = 0, chunks_ = 0, v_floats_ = 0;
  // Short inputs (fewer chunks than threads) split each chunk's panels across threads instead:
  // every chunk reads all the transformed weights, which is most of a short conv's time.
  int64_t panel_parts_ = 1;
};

// The tile m the kernel takes for a stride-1, group-1 conv of k taps from ci to co channels, or
// 0 where it does not apply (no vector FMA kernel, LOCKSTEP_CPU_WINOGRAD=0, k < 2, too few channels).
int winograd_tile(int64_t ci, int64_t co, int64_t k);

// The kernel for `node` when it fits (1-D Conv, stride 1, group 1, constant weights, k >= 2,
// enough channels to pay, a vector FMA kernel, LOCKSTEP_CPU_WINOGRAD not 0); null otherwise. Planar
// inputs and outputs are transposed through the workspace.
KernelPtr make_winograd_conv(CompileContext& ctx, const ir::Node& node);

}  // namespace lockstep::cpu
