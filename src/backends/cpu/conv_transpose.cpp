// 1-D stride-s ConvTranspose as one stride-1 convolution (polyphase): output position
// o' = s*m + r (before the begin pad is cut) is sum_j x[m - j] * w[r + s*j], so the s phases
// r are s*Co output channels of a J = ceil(K/s)-tap convolution. Its channels-last result
// [m][r][c] is byte for byte the channels-last upsampled signal, computed by our Winograd
// kernel where it applies (J >= 2 taps, enough channels): oneDNN JIT-compiles a primitive for
// each new length (3-4 ms per upsampler of a voice, a tile's remainder when tiled), while the
// Winograd kernel's transformed weights are shared across lengths, at 0.7-1.35x oneDNN's speed
// on the voice's upsamplers (lockstep_conv_bench, docs/cpu.md). Else oneDNN's brgemm forward
// kernels in fixed time tiles (2-4x faster here than its deconvolution), or our GEMM
// convolution where oneDNN has only a reference loop.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/conv_transpose.h"
#include "backends/cpu/conv_gemm.h"
#include "backends/cpu/conv_tiling.h"
#include "backends/cpu/conv_winograd.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/onednn_impl.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/profile.h"
#include "backends/cpu/shared_weights.h"
#include "backends/cpu/transpose.h"
#include "core/hash.h"

namespace lockstep::cpu {

namespace {

using dnnl::memory;
using Dims = memory::dims;

size_t round64(size_t n) { return (n + 63) / 64 * 64; }

struct Phases {
  int64_t n = 1, ci = 1, co = 1, in_w = 1, out_w = 1;  // logical shapes
  int64_t k = 1, s = 1, pad_begin = 0, taps = 1, groups = 1;  // taps J; groups m = in_w + J - 1
};

// The polyphase geometry, or false when the node needs the general kernel.
bool phases_of(const CompileContext& ctx, const ir::Node& node, Phases& p) {
  if (node.op != ir::Op::ConvTranspose || node.inputs.size() < 2 || node.inputs[0] == ir::kNoValue) return false;
  const Shape& x = ctx.value(node.inputs[0]).shape;
  const Shape& w = ctx.value(node.inputs[1]).shape;
  const Shape& y = ctx.value(node.outputs.at(0)).shape;
  if (x.size() != 3 || w.size() != 3 || y.size() != 3 || !ctx.graph.is_constant(node.inputs[1])) return false;
  if (node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue && !ctx.graph.is_constant(node.inputs[2])) return false;
  if (node.attrs.get_int("group", 1) != 1 || node.attrs.get_string("auto_pad", "NOTSET") != "NOTSET") return false;
  if (node.attrs.get_ints("dilations", {1}) != std::vector<int64_t>{1}) return false;
  const std::vector<int64_t> strides = node.attrs.get_ints("strides", {1});
  const std::vector<int64_t> pads = node.attrs.get_ints("pads", {0, 0});
  if (strides.size() != 1 || pads.size() != 2 || strides[0] < 2 || pads[0] < 0 || pads[1] < 0) return false;
  p.n = x[0];
  p.ci = x[1];
  p.in_w = x[2];
  p.co = y[1];
  p.out_w = y[2];
  p.k = w[2];
  p.s = strides[0];
  p.pad_begin = pads[0];
  if (w[0] != p.ci || w[1] != p.co || p.k < 1) return false;
  // Exactly the full result less the pads (no output_padding positions past it).
  if (p.out_w != (p.in_w - 1) * p.s + p.k - pads[0] - pads[1] || p.out_w <= 0) return false;
  p.taps = (p.k + p.s - 1) / p.s;
  p.groups = p.in_w + p.taps - 1;
  return true;
}

class PolyphaseKernel final : public Kernel {
 public:
  PolyphaseKernel(CompileContext& ctx, const ir::Node& node, const Phases& p)
      : p_(p), engine_(*ctx.engine), stream_(*ctx.stream), epilogue_(ctx, node), profile_(ctx.profile) {
    auto t_start = std::chrono::steady_clock::now();
    x_ = ctx.fptr(node.inputs[0]);
    y_ = ctx.fptr(node.outputs[0]);
    x_nwc_ = ctx.is_nwc(node.inputs[0]);
    y_nwc_ = ctx.is_nwc(node.outputs[0]);
    const int64_t oc = p.s * p.co, J = p.taps;
    // Weights [r*Co + c][ci][t] = w[ci][c][r + s*(J-1-t)] (zero past K), and the bias per phase.
    const float* w = ctx.fptr(node.inputs[1]);
    std::vector<float> wc;  // made on demand: shared reordered weights skip it
    auto phase_weights = [&]() -> const std::vector<float>& {
      if (!wc.empty()) return wc;
      wc.assign(static_cast<size_t>(oc * p.ci * J), 0.0f);
      for (int64_t r = 0; r < p.s; ++r)
        for (int64_t c = 0; c < p.co; ++c)
          for (int64_t i = 0; i < p.ci; ++i)
            for (int64_t t = 0; t < J; ++t) {
              const int64_t k = r + p.s * (J - 1 - t);
              if (k < p.k) wc[static_cast<size_t>(((r * p.co + c) * p.ci + i) * J + t)] = w[(i * p.co + c) * p.k + k];
            }
      return wc;
    };
    // The phases' weights reordered for a primitive: shared with other compiles of these weights.
    const std::string weights_key = "polyphase/" +
                                    sha256_of_constant(w, static_cast<size_t>(p.ci * p.co * p.k) * sizeof(float)) + "/" +
                                    std::to_string(p.ci) + "/" + std::to_string(p.co) + "/" + std::to_string(p.k) +
                                    "/" + std::to_string(p.s);
    auto reordered = [&](const memory::desc& desc) {
      SharedOnednnWeights shared = shared_onednn_weights(weights_key, desc, engine_, stream_, [&] {
        return memory({{oc, p.ci, J}, memory::data_type::f32, memory::format_tag::oiw}, engine_,
                      const_cast<float*>(phase_weights().data()));
      });
      w_shared_ = shared.bytes;
      return shared.memory;
    };
    const float* b = node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue ? ctx.fptr(node.inputs[2]) : nullptr;
    if (b) {
      bias_.resize(static_cast<size_t>(oc));
      for (int64_t r = 0; r < p.s; ++r) std::copy(b, b + p.co, bias_.begin() + r * p.co);
    }
    const memory::desc src_d({p.n, p.ci, p.in_w}, memory::data_type::f32, memory::format_tag::nwc);
    const memory::desc dst_d({p.n, oc, p.groups}, memory::data_type::f32, memory::format_tag::nwc);
    const memory::desc w_any({oc, p.ci, J}, memory::data_type::f32, memory::format_tag::any);
    const memory::desc b_d = b ? memory::desc({oc}, memory::data_type::f32, memory::format_tag::a) : memory::desc();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    try {
      const int wino_tile = winograd_tile(p.ci, oc, J);
      // Otherwise long inputs: time-axis tiles of the same stride-1 convolution (conv_tiling.h).
      if (wino_tile == 0) {
        try {
          tiles_ = TiledConv1d(engine_, Conv1dShape{.n = p.n, .ci = p.ci, .co = oc, .groups = 1, .w_in = p.in_w,
                                                    .w_out = p.groups, .k = J, .stride = 1, .dilation = 0, .pad_begin = J - 1},
                               b != nullptr, ctx.threads);
        } catch (const dnnl::error&) {
          tiles_ = TiledConv1d();  // the whole-axis primitive below
        }
      }
      if (wino_tile != 0) {
        const std::string bias_key =
            b ? sha256_of_constant(b, static_cast<size_t>(p.co) * sizeof(float)) : std::string("-");
        winograd_.emplace(Winograd1dShape{.n = p.n, .ci = p.ci, .co = oc, .w_in = p.in_w, .w_out = p.groups, .k = J,
                                          .dilation = 1, .pad_begin = J - 1, .tile = wino_tile},
                          [&] { return phase_weights().data(); }, b ? bias_.data() : nullptr,
                          weights_key + "/" + bias_key, ctx.threads);
        impl_ = std::string("lockstep:winograd:") + winograd_->isa_name();
        scratch_d_ = memory::desc({static_cast<int64_t>(std::max<size_t>(winograd_->scratch_bytes(), 64))},
                                  memory::data_type::u8, memory::format_tag::a);
      } else if (tiles_.tiled()) {
        impl_ = "onednn:" + tiles_.implementation();
        w_mem_ = reordered(tiles_.weights_desc());
        scratch_d_ = memory::desc({static_cast<int64_t>(std::max<size_t>(tiles_.scratch_bytes(), 64))},
                                  memory::data_type::u8, memory::format_tag::a);
      } else {
        auto d = b ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                                     src_d, w_any, b_d, dst_d, {1}, {0}, {J - 1}, {J - 1})
                   : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                                     src_d, w_any, dst_d, {1}, {0}, {J - 1}, {J - 1});
        dnnl::convolution_forward::primitive_desc pd(d, attr, engine_);
        impl_ = std::string("onednn:") + pd.impl_info_str();
        if (is_slow_conv1d_impl(pd.impl_info_str(), host_has_avx2())) {
          // our GEMM convolution instead (conv_gemm.h)
          gemm_.emplace(GemmConv1dShape{.n = p.n, .ci = p.ci, .co = oc, .w_in = p.in_w, .w_out = p.groups, .k = J,
                                        .pad_begin = J - 1, .x_nwc = true, .y_nwc = true},
                        [&] { return phase_weights().data(); }, b ? bias_.data() : nullptr, weights_key, ctx.threads);
          impl_ = std::string("lockstep:gemm-conv:") + sgemm_implementation();
          scratch_d_ = memory::desc({static_cast<int64_t>(std::max<size_t>(gemm_->scratch_bytes(), 64))},
                                    memory::data_type::u8, memory::format_tag::a);
        } else {
          primitive_ = dnnl::convolution_forward(pd);
          if (!(pd.src_desc() == src_d) || !(pd.dst_desc() == dst_d))
            throw Error(ErrorCode::Internal, "cpu: oneDNN changed the polyphase layouts", node.name, ir::op_name(node.op));
          w_mem_ = reordered(pd.weights_desc());
          scratch_d_ = pd.scratchpad_desc();
        }
      }
    } catch (const dnnl::error& e) {
      throw Error(ErrorCode::UnsupportedAttribute, std::string("cpu: oneDNN cannot build this convolution: ") + e.what(),
                  node.name, ir::op_name(node.op));
    }
    if (b) b_mem_ = memory(b_d, engine_, bias_.data());
    src_d_ = src_d;
    dst_d_ = dst_d;
    // Workspace: [channels-last input copy (NCW inputs)][phases][scratchpad].
    size_t off = 0;
    src_off_ = off;
    if (!x_nwc_) off += round64(src_d.get_size());
    dst_off_ = off;
    off += round64(dst_d.get_size());
    scratch_off_ = off;
    off += round64(scratch_d_.get_size());
    ctx.workspace_bytes = std::max(ctx.workspace_bytes, off);
    if (profile_) profile_->add_compile("conv transpose polyphase", ms_since(t_start));
  }

  void bind_workspace(std::byte* base) override {
    scratch_ = base + scratch_off_;
    src_ = x_nwc_ ? const_cast<float*>(x_) : reinterpret_cast<float*>(base + src_off_);
    z_ = reinterpret_cast<float*>(base + dst_off_);
    args_ = {{DNNL_ARG_SRC, memory(src_d_, engine_, src_)},
             {DNNL_ARG_WEIGHTS, w_mem_},
             {DNNL_ARG_DST, memory(dst_d_, engine_, z_)},
             {DNNL_ARG_SCRATCHPAD, memory(scratch_d_, engine_, base + scratch_off_)}};
    if (!bias_.empty()) args_[DNNL_ARG_BIAS] = b_mem_;
    if (tiles_.tiled()) tiles_.bind(base + scratch_off_, w_mem_, bias_.empty() ? nullptr : &b_mem_);
  }

  void run() override {
    const bool timed = profile_ && profile_->recording();
    auto t = std::chrono::steady_clock::now();
    auto lap = [&](const char* part) {
      if (!timed) return;
      profile_->add(part, ms_since(t));
      t = std::chrono::steady_clock::now();
    };
    if (!x_nwc_) ncw_to_nwc(x_, src_, p_.n, p_.ci, p_.in_w);
    lap("  conv transpose: src reorder");
    if (winograd_) {
      winograd_->run(src_, z_, scratch_);
    } else if (gemm_) {
      gemm_->run(src_, z_, scratch_);
    } else if (tiles_.tiled()) {
      tiles_.run(stream_, src_, z_);
    } else {
      primitive_.execute(stream_, args_);
      stream_.wait();
    }
    lap("  conv transpose: oneDNN compute");
    write_out();
    epilogue_.apply_all(y_);
    lap("  conv transpose: phases out + epilogue");
  }

 private:
  // The output window starts pad_begin positions into the phases of each batch item.
  void write_out() {
    const int64_t z_plane = p_.groups * p_.s * p_.co, y_plane = p_.out_w * p_.co;
    for (int64_t n = 0; n < p_.n; ++n) {
      const float* from = z_ + n * z_plane + p_.pad_begin * p_.co;
      float* to = y_ + n * y_plane;
      if (!y_nwc_) {
        nwc_to_ncw(from, to, 1, p_.co, p_.out_w, nullptr);
        continue;
      }
      constexpr int64_t kChunk = 16384;  // floats per work item
      const int64_t items = (y_plane + kChunk - 1) / kChunk;
      parallel_for(items, [&](int64_t i, int) {
        const int64_t at = i * kChunk, len = std::min(kChunk, y_plane - at);
        std::memcpy(to + at, from + at, static_cast<size_t>(len) * sizeof(float));
      });
    }
  }

  Phases p_;
  dnnl::engine& engine_;
  dnnl::stream& stream_;
  Epilogue epilogue_;
  Profile* profile_ = nullptr;
  dnnl::primitive primitive_;
  TiledConv1d tiles_;  // tiled() for long inputs, instead of primitive_
  std::optional<GemmConv1d> gemm_;  // where oneDNN has only its reference loop, instead of both
  std::optional<Winograd1d> winograd_;  // short time axes, instead of oneDNN
  std::string impl_;
  std::byte* scratch_ = nullptr;
  memory w_mem_, b_mem_;
  std::shared_ptr<const SharedBytes> w_shared_;  // what w_mem_ reads
  memory::desc src_d_, dst_d_, scratch_d_;
  std::unordered_map<int, memory> args_;
  std::vector<float> bias_;
  size_t src_off_ = 0, dst_off_ = 0, scratch_off_ = 0;
  const float* x_ = nullptr;
  float* src_ = nullptr;
  float* y_ = nullptr;
  float* z_ = nullptr;
  bool x_nwc_ = false, y_nwc_ = false;

 public:
  std::string implementation() const override { return impl_; }
};

}  // namespace

KernelPtr make_polyphase_conv_transpose(CompileContext& ctx, const ir::Node& node) {
  Phases p;
  if (!phases_of(ctx, node, p)) return nullptr;
  return std::make_unique<PolyphaseKernel>(ctx, node, p);
}

}  // namespace lockstep::cpu
