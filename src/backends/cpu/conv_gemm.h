// 1-D convolution as im2col + GEMM (gemm.h) in fixed time tiles: any group, stride, dilation
// and padding, either layout on either side. The kernel lockstep falls back to where oneDNN
// would pick a reference implementation (mixed-layout pointwise convs on AVX2, every conv on
// arm64 without SVE): never oneDNN's reference loops (docs/cpu.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/kernel.h"

namespace lockstep::cpu {

// dilation counts from 1; x is [n][ci][w_in] or, with x_nwc, [n][w_in][ci] (y likewise).
struct GemmConv1dShape {
  int64_t n = 1, ci = 1, co = 1, groups = 1, w_in = 1, w_out = 1, k = 1, stride = 1, dilation = 1, pad_begin = 0;
  bool x_nwc = false, y_nwc = false;
};

class GemmConv1d {
 public:
  // weights as ONNX stores a Conv's, [co][ci / groups][k]; bias [co] or null.
  GemmConv1d(const GemmConv1dShape& shape, const float* weights, const float* bias, int threads);
  // Weights made by the caller: `weights_key` names them for the shared cache of transposed
  // weights, and `weights` is called only when none under that key is alive.
  GemmConv1d(const GemmConv1dShape& shape, const std::function<const float*()>& weights, const float* bias,
             const std::string& weights_key, int threads);
  size_t scratch_bytes() const { return static_cast<size_t>(threads_) * col_floats_ * sizeof(float); }
  // Each output tile is one GEMM on one thread; tiles are a function of the shape alone, so the
  // bits do not depend on the thread count.
  void run(const float* x, float* y, std::byte* scratch) const;
  const GemmConv1dShape& shape() const { return s_; }

 private:
  // Whether tile rows can be read from x in place (pointwise, channels-last input).
  bool direct() const;
  void gather(const float* x, int64_t n, int64_t g, int64_t t0, int64_t len, float* col) const;

  GemmConv1dShape s_;
  int threads_ = 1;
  int64_t ig_ = 1, og_ = 1, kk_ = 1, tile_ = 1, tiles_ = 1, col_floats_ = 0;
  // [group][tap * ig + c][og]: shared by every GemmConv1d of the same weights and geometry
  // (another length's segment transposes nothing).
  std::shared_ptr<const std::vector<float>> wt_;
  std::vector<float> bias_;
};

// Whether make_gemm_conv takes the node: a 1-D Conv with constant weights (and bias) whose
// channels split into its groups.
bool gemm_conv_applies(const CompileContext& ctx, const ir::Node& node);
// A 1x1, stride-1, unpadded 1-D Conv whose input and output are both planar (NCW) in the arena.
bool planar_pointwise_conv1d(const CompileContext& ctx, const ir::Node& node);
// The kernel for such a Conv in the node's arena layouts; null for anything else.
KernelPtr make_gemm_conv(CompileContext& ctx, const ir::Node& node);

}  // namespace lockstep::cpu
