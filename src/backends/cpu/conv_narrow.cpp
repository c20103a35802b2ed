// 1-D convolutions to very few output channels (a vocoder's conv_post: 32 -> 1) from a
// channels-last input: each output is a dot product of K rows of C contiguous floats (one run of
// K*C floats when undilated). oneDNN pads such weights to 16 output channels and ran at ~15
// GFLOP/s here. Each output is computed whole by one thread: same bits at any thread count.
#include <algorithm>

#include "backends/cpu/conv_narrow.h"
#include "backends/cpu/conv1d_geometry.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd/target.h"

namespace lockstep::cpu {

namespace {

constexpr int64_t kMaxNarrowChannels = 4;
constexpr int64_t kPositionsPerItem = 1024;

[[gnu::always_inline]] inline float dot(const float* a, const float* b, int64_t n) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// Eight consecutive outputs at once (rows `stride` floats apart): eight independent FMA chains
// instead of one latency-bound chain.
[[gnu::always_inline]] inline void dot8(const float* a, int64_t stride, const float* b, int64_t n, float* out) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3, s4, s5, s6, s7)
  for (int64_t i = 0; i < n; ++i) {
    const float v = b[i];
    s0 += a[i] * v;
    s1 += a[i + stride] * v;
    s2 += a[i + 2 * stride] * v;
    s3 += a[i + 3 * stride] * v;
    s4 += a[i + 4 * stride] * v;
    s5 += a[i + 5 * stride] * v;
    s6 += a[i + 6 * stride] * v;
    s7 += a[i + 7 * stride] * v;
  }
  out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3, out[4] = s4, out[5] = s5, out[6] = s6, out[7] = s7;
}

struct Geometry {
  int64_t c, w_in, k, d, pad;
};

// Outputs [p0, p1) of one output channel: `x` is one batch item's channels-last rows, `w` the
// channel's weights [t][c]. One function per clone so that the dot products inline.
LOCKSTEP_X86_CLONES
void narrow_rows(const Geometry& g, const float* x, const float* w, float bias, float* out, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t first = p - g.pad;  // input position of tap 0
    if (g.d == 1 && first >= 0 && first + 7 + g.k <= g.w_in && p + 8 <= p1) {
      float acc8[8];
      dot8(x + first * g.c, g.c, w, g.k * g.c, acc8);
      for (int j = 0; j < 8; ++j) out[p + j] = acc8[j] + bias;
      p += 7;
      continue;
    }
    float acc = 0.0f;
    if (g.d == 1 && first >= 0 && first + g.k <= g.w_in) {
      acc = dot(x + first * g.c, w, g.k * g.c);
    } else {
      for (int64_t t = 0; t < g.k; ++t) {
        const int64_t at = first + t * g.d;
        if (at >= 0 && at < g.w_in) acc += dot(x + at * g.c, w + t * g.c, g.c);
      }
    }
    out[p] = acc + bias;
  }
}

class NarrowConvKernel final : public Kernel {
 public:
  NarrowConvKernel(CompileContext& ctx, const ir::Node& node) : epilogue_(ctx, node) {
    const Shape& x = ctx.value(node.inputs[0]).shape;
    const Shape& y = ctx.value(node.outputs[0]).shape;
    n_ = x[0];
    c_ = x[1];
    w_in_ = x[2];
    co_ = y[1];
    w_out_ = y[2];
    k_ = ctx.value(node.inputs[1]).shape[2];
    d_ = node.attrs.get_ints("dilations", {1})[0];
    pad_ = node.attrs.get_ints("pads", {0, 0})[0];
    x_ = ctx.fptr(node.inputs[0]);
    y_ = ctx.fptr(node.outputs[0]);
    // Weights [co][t][c]: tap t's C channels contiguous, as the channels-last rows are.
    const float* w = ctx.fptr(node.inputs[1]);
    w_.resize(static_cast<size_t>(co_ * k_ * c_));
    for (int64_t o = 0; o < co_; ++o)
      for (int64_t i = 0; i < c_; ++i)
        for (int64_t t = 0; t < k_; ++t) w_[static_cast<size_t>((o * k_ + t) * c_ + i)] = w[(o * c_ + i) * k_ + t];
    const bool has_bias = node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue;
    bias_.assign(static_cast<size_t>(co_), 0.0f);
    if (has_bias) std::copy(ctx.fptr(node.inputs[2]), ctx.fptr(node.inputs[2]) + co_, bias_.begin());
  }

  std::string implementation() const override { return "lockstep:narrow-conv"; }
  void run() override {
    const int64_t per_n = (w_out_ + kPositionsPerItem - 1) / kPositionsPerItem, items = n_ * per_n;
    parallel_for(items, [&](int64_t item, int) {
      const int64_t n = item / per_n, w0 = (item % per_n) * kPositionsPerItem;
      const int64_t w1 = std::min(w_out_, w0 + kPositionsPerItem);
      const float* xn = x_ + n * w_in_ * c_;
      const Geometry g{c_, w_in_, k_, d_, pad_};
      for (int64_t o = 0; o < co_; ++o)
        narrow_rows(g, xn, w_.data() + o * k_ * c_, bias_[static_cast<size_t>(o)], y_ + (n * co_ + o) * w_out_, w0, w1);
    });
    epilogue_.apply_all(y_);
  }

 private:
  Epilogue epilogue_;
  int64_t n_ = 1, c_ = 1, w_in_ = 1, co_ = 1, w_out_ = 1, k_ = 1, d_ = 1, pad_ = 0;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  std::vector<float> w_, bias_;
};

}  // namespace

KernelPtr make_narrow_conv(CompileContext& ctx, const ir::Node& node) {
  const std::optional<PlainConv1d> conv = plain_conv1d(ctx, node);
  if (!conv || conv->co > kMaxNarrowChannels || !ctx.is_nwc(node.inputs[0]) || ctx.is_nwc(node.outputs[0])) return nullptr;
  return std::make_unique<NarrowConvKernel>(ctx, node);
}

}  // namespace lockstep::cpu
