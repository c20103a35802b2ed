// im2col + GEMM, one time tile at a time: col[t][tap * ig + c] = x[c][t * stride + tap * dil -
// pad] (zero outside), then y_tile = col x wt per group, where wt[tap * ig + c][o] holds the
// weights transposed once at compile time. A channels-last output is the GEMM's C directly; a
// planar one is its transpose (the same GEMM with both operands transposed).
#include "backends/cpu/conv_gemm.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "backends/cpu/conv1d_geometry.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/parallel.h"
#include "core/hash.h"
#include "core/shared_by_key.h"

namespace lockstep::cpu {

namespace {

// Outputs per tile: about 64K floats of col (L2-resident beside the weights), between 32 and
// 512 rows; a function of the shape only, never of the thread count.
int64_t tile_outputs(int64_t k_len) { return std::clamp<int64_t>(65536 / std::max<int64_t>(k_len, 1), 32, 512) / 16 * 16; }

}  // namespace

GemmConv1d::GemmConv1d(const GemmConv1dShape& shape, const float* weights, const float* bias, int threads)
    : GemmConv1d(shape, [weights] { return weights; }, bias,
                 sha256_of_constant(weights, static_cast<size_t>(shape.co * (shape.ci / std::max<int64_t>(shape.groups, 1)) *
                                                                 shape.k) * sizeof(float)),
                 threads) {}

GemmConv1d::GemmConv1d(const GemmConv1dShape& shape, const std::function<const float*()>& weights_of, const float* bias,
                       const std::string& weights_key, int threads)
    : s_(shape), threads_(std::max(1, threads)) {
  ig_ = s_.ci / s_.groups;
  og_ = s_.co / s_.groups;
  kk_ = s_.k * ig_;
  tile_ = std::min(tile_outputs(kk_), s_.w_out);
  tiles_ = (s_.w_out + tile_ - 1) / tile_;
  col_floats_ = direct() ? 0 : tile_ * kk_;
  const std::string key = "gemm-conv/" + weights_key + "/" + std::to_string(s_.groups) + "/" + std::to_string(og_) +
                          "/" + std::to_string(ig_) + "/" + std::to_string(s_.k);
  wt_ = shared_by_key<std::vector<float>>(key, [&] {
    const float* weights = weights_of();
    auto wt = std::make_shared<std::vector<float>>(static_cast<size_t>(s_.groups * kk_ * og_), 0.0f);
    for (int64_t g = 0; g < s_.groups; ++g)
      for (int64_t o = 0; o < og_; ++o)
        for (int64_t c = 0; c < ig_; ++c)
          for (int64_t tap = 0; tap < s_.k; ++tap)
            (*wt)[static_cast<size_t>((g * kk_ + tap * ig_ + c) * og_ + o)] = weights[((g * og_ + o) * ig_ + c) * s_.k + tap];
    return wt;
  });
  bias_.assign(static_cast<size_t>(s_.co), 0.0f);
  if (bias) std::copy(bias, bias + s_.co, bias_.begin());
}

bool GemmConv1d::direct() const { return s_.k == 1 && s_.stride == 1 && s_.pad_begin == 0 && s_.x_nwc; }

void GemmConv1d::gather(const float* x, int64_t n, int64_t g, int64_t t0, int64_t len, float* col) const {
  for (int64_t i = 0; i < len; ++i) {
    float* row = col + i * kk_;
    for (int64_t tap = 0; tap < s_.k; ++tap) {
      const int64_t pos = (t0 + i) * s_.stride + tap * s_.dilation - s_.pad_begin;
      float* to = row + tap * ig_;
      if (pos < 0 || pos >= s_.w_in) {
        std::fill_n(to, ig_, 0.0f);
      } else if (s_.x_nwc) {
        std::memcpy(to, x + (n * s_.w_in + pos) * s_.ci + g * ig_, static_cast<size_t>(ig_) * sizeof(float));
      } else {
        const float* from = x + (n * s_.ci + g * ig_) * s_.w_in + pos;
        for (int64_t c = 0; c < ig_; ++c) to[c] = from[c * s_.w_in];
      }
    }
  }
}

void GemmConv1d::run(const float* x, float* y, std::byte* scratch) const {
  const int64_t items = s_.n * s_.groups * tiles_;
  parallel_for(items, threads_, [&](int64_t item, int slot) {
    const int64_t n = item / (s_.groups * tiles_), g = item / tiles_ % s_.groups, t0 = item % tiles_ * tile_;
    const int64_t len = std::min(tile_, s_.w_out - t0);
    const float* a = nullptr;
    int64_t lda = kk_;
    if (direct()) {
      a = x + (n * s_.w_in + t0) * s_.ci + g * ig_;
      lda = s_.ci;
    } else {
      float* col = reinterpret_cast<float*>(scratch) + slot * col_floats_;
      gather(x, n, g, t0, len, col);
      a = col;
    }
    const float* wt = wt_->data() + g * kk_ * og_;
    const float* b = bias_.data() + g * og_;
    if (s_.y_nwc) {  // C[t][o] = col[t][:] . wt[:][o] + bias[o]
      float* c = y + (n * s_.w_out + t0) * s_.co + g * og_;
      for (int64_t i = 0; i < len; ++i) std::copy(b, b + og_, c + i * s_.co);
      sgemm(false, false, len, og_, kk_, 1.0f, a, lda, wt, og_, 1.0f, c, s_.co);
    } else {  // C[o][t] = wt[:][o] . col[t][:] + bias[o]
      float* c = y + (n * s_.co + g * og_) * s_.w_out + t0;
      for (int64_t o = 0; o < og_; ++o) std::fill_n(c + o * s_.w_out, len, b[o]);
      sgemm(true, true, og_, len, kk_, 1.0f, wt, og_, a, lda, 1.0f, c, s_.w_out);
    }
  });
}

namespace {

class GemmConvKernel final : public Kernel {
 public:
  GemmConvKernel(CompileContext& ctx, const ir::Node& node, const GemmConv1dShape& shape)
      : conv_(shape, ctx.fptr(node.inputs[1]),
              node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue ? ctx.fptr(node.inputs[2]) : nullptr,
              ctx.threads),
        epilogue_(ctx, node),
        x_(ctx.fptr(node.inputs[0])),
        y_(ctx.fptr(node.outputs[0])) {
    ctx.workspace_bytes = std::max(ctx.workspace_bytes, conv_.scratch_bytes());
  }
  void bind_workspace(std::byte* base) override { scratch_ = base; }
  void run() override {
    conv_.run(x_, y_, scratch_);
    epilogue_.apply_all(y_);
  }
  std::string implementation() const override { return std::string("lockstep:gemm-conv:") + sgemm_implementation(); }

 private:
  GemmConv1d conv_;
  Epilogue epilogue_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  std::byte* scratch_ = nullptr;
};

}  // namespace

namespace {

// The GEMM convolution's shape for the node, or nothing when it does not apply.
std::optional<GemmConv1dShape> gemm_conv_shape(const CompileContext& ctx, const ir::Node& node) {
  if (node.op != ir::Op::Conv || node.inputs.size() < 2 || node.inputs[0] == ir::kNoValue) return std::nullopt;
  const Shape& x = ctx.value(node.inputs[0]).shape;
  const Shape& w = ctx.value(node.inputs[1]).shape;
  const Shape& y = ctx.value(node.outputs.at(0)).shape;
  if (x.size() != 3 || w.size() != 3 || y.size() != 3 || !ctx.graph.is_constant(node.inputs[1])) return std::nullopt;
  if (node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue && !ctx.graph.is_constant(node.inputs[2]))
    return std::nullopt;
  const ConvGeometry g = conv_geometry(ctx.graph, node, false);
  if (g.group <= 0 || x[1] % g.group != 0 || y[1] % g.group != 0 || w[1] * g.group != x[1] || w[0] != y[1])
    return std::nullopt;
  return GemmConv1dShape{.n = x[0], .ci = x[1], .co = y[1], .groups = g.group, .w_in = x[2], .w_out = y[2],
                         .k = w[2], .stride = g.strides[0], .dilation = g.dilations[0] + 1,
                         .pad_begin = g.pad_begin[0], .x_nwc = ctx.is_nwc(node.inputs[0]),
                         .y_nwc = ctx.is_nwc(node.outputs.at(0))};
}

}  // namespace

bool gemm_conv_applies(const CompileContext& ctx, const ir::Node& node) { return gemm_conv_shape(ctx, node).has_value(); }

bool planar_pointwise_conv1d(const CompileContext& ctx, const ir::Node& node) {
  const std::optional<GemmConv1dShape> s = gemm_conv_shape(ctx, node);
  return s && s->k == 1 && s->stride == 1 && s->pad_begin == 0 && s->w_out == s->w_in && !s->x_nwc && !s->y_nwc;
}

KernelPtr make_gemm_conv(CompileContext& ctx, const ir::Node& node) {
  const std::optional<GemmConv1dShape> shape = gemm_conv_shape(ctx, node);
  if (!shape) return nullptr;
  return std::make_unique<GemmConvKernel>(ctx, node, *shape);
}

}  // namespace lockstep::cpu
