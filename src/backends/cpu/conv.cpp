// Conv and ConvTranspose through oneDNN. Activations stay plain NC[D][H]W in the arena; the
// primitive picks its own layout (format_tag::any: blocked nCw16c brgemm kernels measured
// 1.5-10x faster than plain-layout gemm convolution here), with src/dst reorders through the
// shared workspace and weights reordered once at compile time. 1x1 stride-1 convolutions use
// the plain layout (a GEMM, faster than reorder + blocked). 1-D channels-last (nwc) with >= 16
// channels uses our AVX-512 transposes, the epilogue applied per tile as it is written back;
// otherwise the epilogue runs per output row after oneDNN's reorder.
// 1-D convs longer than a tile run as time-axis tiles on channels-last buffers (conv_tiling.h):
// oneDNN's brgconv primitives otherwise grow with T (memory and JIT time).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <unordered_map>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/conv1d_geometry.h"
#include "backends/cpu/conv_f64.h"
#include "backends/cpu/conv_gemm.h"
#include "backends/cpu/conv_narrow.h"
#include "backends/cpu/conv_tiling.h"
#include "backends/cpu/conv_transpose.h"
#include "backends/cpu/conv_winograd.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/onednn_impl.h"
#include "backends/cpu/profile.h"
#include "backends/cpu/shared_weights.h"
#include "backends/cpu/transpose.h"
#include "core/hash.h"

namespace lockstep::cpu {

namespace {

using dnnl::memory;


memory::desc plain_desc(const Dims& dims, const Dims& strides) {
  return memory::desc(dims, memory::data_type::f32, strides);
}

Dims plain_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

size_t round64(size_t n) { return (n + 63) / 64 * 64; }

class ConvKernel final : public Kernel {
 public:
  // With `may_decline`, a 1-D Conv whose oneDNN pick is a reference loop or a slow one stops
  // before its primitive is built (declined(): make_conv_kernel takes the GEMM convolution).
  ConvKernel(CompileContext& ctx, const ir::Node& node, bool may_decline)
      : engine_(*ctx.engine), stream_(*ctx.stream), epilogue_(ctx, node), profile_(ctx.profile) {
    auto t_start = std::chrono::steady_clock::now();
    const bool transposed = node.op == ir::Op::ConvTranspose;
    ConvGeometry g = conv_geometry(ctx.graph, node, transposed);
    const Shape& xs = ctx.value(node.inputs[0]).shape;
    const Shape& ws = ctx.value(node.inputs[1]).shape;
    const Shape& ys = ctx.value(node.outputs[0]).shape;
    const int64_t G = g.group, Ci = xs[1], Co = ys[1];
    if (G <= 0 || Ci % G != 0 || Co % G != 0)
      throw Error(ErrorCode::UnsupportedAttribute, "cpu: channels not divisible by group", node.name, ir::op_name(node.op));
    Dims x_dims(xs.begin(), xs.end()), y_dims(ys.begin(), ys.end());
    Dims y_view = y_dims;  // the part oneDNN computes (ConvTranspose extra positions excluded)
    has_extra_ = false;
    for (size_t i = 0; i < g.extra.size(); ++i) {
      y_view[i + 2] -= g.extra[i];
      has_extra_ = has_extra_ || g.extra[i] > 0;
    }
    extra_ = g.extra;
    out_shape_ = ys;
    out_ = ctx.fptr(node.outputs[0]);
    bias_ = node.inputs.size() > 2 ? ctx.fptr(node.inputs[2]) : nullptr;

    // Logical weights (g)oi<k> and how ONNX stores them: Conv [G*O, I, k], ConvTranspose [G*I, O, k].
    const int64_t O = Co / G, I = Ci / G;
    Dims w_dims;
    int64_t ksize = 1;
    for (auto k : g.kernel) ksize *= k;
    Dims w_strides;
    if (G == 1) {
      w_dims = {O, I};
      w_strides = transposed ? Dims{ksize, O * ksize} : Dims{I * ksize, ksize};
    } else {
      w_dims = {G, O, I};
      w_strides = transposed ? Dims{I * O * ksize, ksize, O * ksize} : Dims{O * I * ksize, I * ksize, ksize};
    }
    Dims kstrides = plain_strides(g.kernel);
    for (size_t i = 0; i < g.kernel.size(); ++i) {
      w_dims.push_back(g.kernel[i]);
      w_strides.push_back(kstrides[i]);
    }

    const bool pointwise = !transposed && ksize == 1 &&
                           std::all_of(g.strides.begin(), g.strides.end(), [](int64_t s) { return s == 1; }) &&
                           std::all_of(g.pad_begin.begin(), g.pad_begin.end(), [](int64_t p) { return p == 0; });
    auto tag_any = memory::format_tag::any;
    // The arena layouts (layout.h): channels-last values are read/written in place as nwc.
    const bool x_nwc = ctx.is_nwc(node.inputs[0]), y_nwc = ctx.is_nwc(node.outputs[0]);
    if (y_nwc && has_extra_)
      throw Error(ErrorCode::Internal, "cpu: channels-last output with extra positions", node.name, ir::op_name(node.op));
    // Only 1-D values are ever channels-last (an nwc desc of another rank would throw).
    memory::desc x_nwc_d = x_nwc ? memory::desc(x_dims, memory::data_type::f32, memory::format_tag::nwc) : memory::desc();
    memory::desc y_nwc_d = y_nwc ? memory::desc(y_view, memory::data_type::f32, memory::format_tag::nwc) : memory::desc();
    memory::desc x_plain = x_nwc ? x_nwc_d : plain_desc(x_dims, plain_strides(x_dims));
    memory::desc y_plain = y_nwc ? y_nwc_d : plain_desc(y_view, plain_strides(y_dims));  // view into the full output rows
    // Pointwise convs are GEMMs on the plain layout, unless one side is channels-last: then the
    // other side is left to oneDNN too (mixed nwc/ncw has no fast kernel).
    const bool plain_gemm = pointwise && !x_nwc && !y_nwc;
    // ConvTranspose keeps format_tag::any (its fast kernel is a plain-layout GEMM; an nwc one
    // is the reference loop), converting channels-last values with our transposes.
    memory::desc x_md = (plain_gemm || x_nwc) && !transposed ? x_plain : memory::desc(x_dims, memory::data_type::f32, tag_any);
    memory::desc y_md = y_nwc && !transposed ? y_nwc_d
                        : plain_gemm ? plain_desc(y_view, plain_strides(y_view))
                                     : memory::desc(y_view, memory::data_type::f32, tag_any);
    if (pointwise && has_extra_) y_md = y_plain;
    memory::desc w_md(w_dims, memory::data_type::f32, tag_any);
    memory::desc b_md = bias_ ? memory::desc({Co}, memory::data_type::f32, memory::format_tag::a) : memory::desc();

    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    memory::desc src_d, dst_d, wei_d, scratch_d;
    // Long 1-D time axes: fixed-length tiles on channels-last buffers (conv_tiling.h), so the
    // primitives' memory and JIT time do not grow with T.
    if (!transposed && x_dims.size() == 3 && !plain_gemm) {
      const Conv1dShape shape{.n = ys[0], .ci = Ci, .co = Co, .groups = G, .w_in = xs[2], .w_out = ys[2],
                              .k = g.kernel[0], .stride = g.strides[0], .dilation = g.dilations[0],
                              .pad_begin = g.pad_begin[0]};
      try {
        tiles_ = TiledConv1d(engine_, shape, bias_ != nullptr, ctx.threads);
      } catch (const dnnl::error&) {
        tiles_ = TiledConv1d();  // the whole-axis primitive below
      }
    }
    if (tiles_.tiled()) {
      impl_ = tiles_.implementation();
      src_d = memory::desc(x_dims, memory::data_type::f32, memory::format_tag::nwc);
      dst_d = memory::desc(y_view, memory::data_type::f32, memory::format_tag::nwc);
      wei_d = tiles_.weights_desc();
      scratch_d = memory::desc({static_cast<int64_t>(std::max<size_t>(tiles_.scratch_bytes(), 64))},
                               memory::data_type::u8, memory::format_tag::a);
    } else {
      try {
        if (!transposed) {
          auto d = bias_ ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                           dnnl::algorithm::convolution_direct, x_md, w_md, b_md, y_md,
                                                           g.strides, g.dilations, g.pad_begin, g.pad_end)
                         : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                           dnnl::algorithm::convolution_direct, x_md, w_md, y_md,
                                                           g.strides, g.dilations, g.pad_begin, g.pad_end);
          dnnl::convolution_forward::primitive_desc pd(d, attr, engine_);
          impl_ = pd.impl_info_str();
          if (may_decline && x_dims.size() == 3 && (reference() || slow_for_1d())) {
            declined_ = true;  // no JIT, no weight reorder for a kernel that would not run
            return;
          }
          primitive_ = dnnl::convolution_forward(pd);
          src_d = pd.src_desc(); dst_d = pd.dst_desc(); wei_d = pd.weights_desc(); scratch_d = pd.scratchpad_desc();
        } else {
          auto d = bias_ ? dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                             dnnl::algorithm::deconvolution_direct, x_md, w_md, b_md, y_md,
                                                             g.strides, g.dilations, g.pad_begin, g.pad_end)
                         : dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                             dnnl::algorithm::deconvolution_direct, x_md, w_md, y_md,
                                                             g.strides, g.dilations, g.pad_begin, g.pad_end);
          dnnl::deconvolution_forward::primitive_desc pd(d, attr, engine_);
          impl_ = pd.impl_info_str();
          primitive_ = dnnl::deconvolution_forward(pd);
          src_d = pd.src_desc(); dst_d = pd.dst_desc(); wei_d = pd.weights_desc(); scratch_d = pd.scratchpad_desc();
        }
      } catch (const dnnl::error& e) {
        throw Error(ErrorCode::UnsupportedAttribute, std::string("cpu: oneDNN cannot build this convolution: ") + e.what(),
                    node.name, ir::op_name(node.op));
      }
    }

    if (profile_) profile_->add_compile("conv primitive", ms_since(t_start));
    t_start = std::chrono::steady_clock::now();
    // Plain arena views.
    x_mem_ = memory(x_plain, engine_, ctx.ptr(node.inputs[0]));
    y_mem_ = memory(y_plain, engine_, out_);
    if (bias_) b_mem_ = memory(b_md, engine_, const_cast<float*>(bias_));
    // Weights: constant ones reordered now; runtime ones each run through the workspace.
    memory w_user(plain_desc(w_dims, w_strides), engine_, ctx.ptr(node.inputs[1]));
    weights_const_ = ctx.graph.is_constant(node.inputs[1]);
    if (weights_const_) {
      // Shared with every compile of the same weights and layout (another length's segment).
      std::string key = "conv/" + sha256_of_constant(ctx.ptr(node.inputs[1]), static_cast<size_t>(num_elements(ws)) * sizeof(float)) +
                        (transposed ? "/t" : "/c");
      for (int64_t d : w_dims) key += "/" + std::to_string(d);
      SharedOnednnWeights shared = shared_onednn_weights(key, wei_d, engine_, stream_, [&] { return w_user; });
      w_mem_ = shared.memory;
      w_shared_ = shared.bytes;
    } else {
      w_user_ = w_user;
    }
    reorder_src_ = !(src_d == x_plain);
    reorder_dst_ = !(dst_d == y_plain);
    // 1-D channels-last: our own tiled transposes (faster than oneDNN's reorder here), the
    // epilogue applied per tile as it is written.
    if (x_dims.size() == 3) {
      // Below 16 channels the 16x16 tiles do not apply: oneDNN's reorder is the faster one.
      // Channels-last arena values (>= 16 channels) the primitive wants plain: the other way round.
      const memory::desc x_ncw = plain_desc(x_dims, plain_strides(x_dims)), y_ncw = plain_desc(y_view, plain_strides(y_view));
      own_src_ = reorder_src_ && (x_nwc ? src_d == x_ncw
                                        : Ci >= 16 && src_d == memory::desc(x_dims, memory::data_type::f32, memory::format_tag::nwc));
      own_dst_ = reorder_dst_ && !has_extra_ &&
                 (y_nwc ? dst_d == y_ncw
                        : Co >= 16 && dst_d == memory::desc(y_view, memory::data_type::f32, memory::format_tag::nwc));
      src_from_nwc_ = x_nwc;
      dst_to_nwc_ = y_nwc;
    }
    n_ = ys[0];
    c_in_ = Ci;
    c_out_ = Co;
    w_in_ = xs[2];
    w_out_ = ys[2];
    // Workspace layout: [src blocked][dst blocked][runtime weights][scratchpad].
    size_t off = 0;
    auto region = [&](const memory::desc& d, bool used) {
      size_t at = off;
      if (used) off += round64(d.get_size());
      return at;
    };
    src_off_ = region(src_d, reorder_src_);
    dst_off_ = region(dst_d, reorder_dst_);
    wei_off_ = region(wei_d, !weights_const_);
    scratch_off_ = region(scratch_d, true);
    ctx.workspace_bytes = std::max(ctx.workspace_bytes, off);
    src_d_ = src_d; dst_d_ = dst_d; wei_d_ = wei_d; scratch_d_ = scratch_d;
    if (reorder_src_ && !own_src_)
      src_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine_, x_plain, engine_, src_d));
    if (reorder_dst_ && !own_dst_)
      dst_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine_, dst_d, engine_, y_plain));
    if (!weights_const_)
      wei_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine_, w_user_.get_desc(), engine_, wei_d));
    if (profile_) profile_->add_compile("conv weights+reorders", ms_since(t_start));
  }

  std::string implementation() const override { return "onednn:" + impl_; }
  bool declined() const { return declined_; }
  // Whether oneDNN picked one of its reference loops (make_conv_kernel then takes another kernel).
  bool reference() const { return is_reference_impl(impl_); }
  // Whether lockstep's GEMM convolution beats oneDNN's pick for a 1-D conv (onednn_impl.h).
  bool slow_for_1d() const {
    return is_slow_conv1d_impl(impl_, host_has_avx2());
  }

  void bind_workspace(std::byte* base) override {
    src_mem_ = reorder_src_ ? memory(src_d_, engine_, base + src_off_) : x_mem_;
    dst_mem_ = reorder_dst_ ? memory(dst_d_, engine_, base + dst_off_) : y_mem_;
    if (!weights_const_) w_mem_ = memory(wei_d_, engine_, base + wei_off_);
    scratch_mem_ = memory(scratch_d_, engine_, base + scratch_off_);
    args_ = {{DNNL_ARG_SRC, src_mem_}, {DNNL_ARG_WEIGHTS, w_mem_}, {DNNL_ARG_DST, dst_mem_},
             {DNNL_ARG_SCRATCHPAD, scratch_mem_}};
    if (bias_) args_[DNNL_ARG_BIAS] = b_mem_;
    if (tiles_.tiled()) tiles_.bind(base + scratch_off_, w_mem_, bias_ ? &b_mem_ : nullptr);
  }

  void compute() {
    if (tiles_.tiled()) {
      tiles_.run(stream_, static_cast<const float*>(src_mem_.get_data_handle()),
                 static_cast<float*>(dst_mem_.get_data_handle()));
      return;
    }
    primitive_.execute(stream_, args_);
    stream_.wait();
  }

  void run() override {
    if (profile_ && profile_->recording()) return run_profiled();
    if (!weights_const_) wei_reorder_.execute(stream_, w_user_, w_mem_);
    reorder_in();
    compute();
    reorder_out_with_epilogue();
  }

  void reorder_in() {
    if (own_src_ && src_from_nwc_) {
      nwc_to_ncw(static_cast<const float*>(x_mem_.get_data_handle()), static_cast<float*>(src_mem_.get_data_handle()),
                 n_, c_in_, w_in_, nullptr);
    } else if (own_src_) {
      ncw_to_nwc(static_cast<const float*>(x_mem_.get_data_handle()), static_cast<float*>(src_mem_.get_data_handle()),
                 n_, c_in_, w_in_);
    } else if (reorder_src_) {
      src_reorder_.execute(stream_, x_mem_, src_mem_);
      stream_.wait();
    }
  }

  void reorder_out_with_epilogue() {
    if (own_dst_ && dst_to_nwc_) {
      ncw_to_nwc(static_cast<const float*>(dst_mem_.get_data_handle()), out_, n_, c_out_, w_out_);
      epilogue_.apply_all(out_);
      return;
    }
    if (own_dst_) {
      const float* from = static_cast<const float*>(dst_mem_.get_data_handle());
      if (epilogue_.empty()) {
        nwc_to_ncw(from, out_, n_, c_out_, w_out_, nullptr);
      } else {
        nwc_to_ncw(from, out_, n_, c_out_, w_out_, [this](int64_t p, int64_t w0, int64_t w1) {
          for (int64_t ch = 0; ch < c_out_; ++ch) epilogue_.apply_row(out_, p * c_out_ + ch, w0, w1);
        });
      }
      return;
    }
    if (reorder_dst_) {
      dst_reorder_.execute(stream_, dst_mem_, y_mem_);
      stream_.wait();
    }
    if (has_extra_) fill_extra();
    epilogue_.apply_all(out_);
  }

  // The same steps as run(), each timed.
  void run_profiled() {
    auto t = std::chrono::steady_clock::now();
    auto lap = [&](const char* part) {
      profile_->add(part, ms_since(t));
      t = std::chrono::steady_clock::now();
    };
    if (!weights_const_) wei_reorder_.execute(stream_, w_user_, w_mem_);
    reorder_in();
    stream_.wait();
    lap("  conv: src reorder");
    compute();
    lap("  conv: oneDNN compute");
    reorder_out_with_epilogue();
    lap("  conv: dst reorder + epilogue");
  }

 private:
  // ConvTranspose positions past the full result (output_padding) hold only the bias.
  void fill_extra() {
    const int64_t N = out_shape_[0], C = out_shape_[1];
    const size_t sp = extra_.size();
    int64_t plane = 1;
    for (size_t i = 0; i < sp; ++i) plane *= out_shape_[i + 2];
    for (int64_t nc = 0; nc < N * C; ++nc) {
      float b = bias_ ? bias_[nc % C] : 0.0f;
      float* row = out_ + nc * plane;
      for (int64_t p = 0; p < plane; ++p) {
        int64_t rest = p;
        bool outside = false;
        for (size_t i = sp; i-- > 0;) {
          int64_t dim = out_shape_[i + 2], idx = rest % dim;
          rest /= dim;
          outside = outside || idx >= dim - extra_[i];
        }
        if (outside) row[p] = b;
      }
    }
  }

  dnnl::engine& engine_;
  dnnl::stream& stream_;
  Epilogue epilogue_;
  Profile* profile_ = nullptr;
  dnnl::primitive primitive_;
  TiledConv1d tiles_;  // tiled() for long 1-D time axes, instead of primitive_
  dnnl::reorder src_reorder_, dst_reorder_, wei_reorder_;
  memory x_mem_, y_mem_, b_mem_, w_mem_, w_user_, src_mem_, dst_mem_, scratch_mem_;
  std::shared_ptr<const SharedBytes> w_shared_;  // what w_mem_ reads when the weights are constant
  memory::desc src_d_, dst_d_, wei_d_, scratch_d_;
  std::unordered_map<int, memory> args_;
  size_t src_off_ = 0, dst_off_ = 0, wei_off_ = 0, scratch_off_ = 0;
  bool reorder_src_ = false, reorder_dst_ = false, weights_const_ = true, has_extra_ = false;
  bool own_src_ = false, own_dst_ = false;  // our transposes instead of oneDNN reorders
  bool declined_ = false;
  bool src_from_nwc_ = false, dst_to_nwc_ = false;  // their direction: from/to a channels-last arena value
  int64_t n_ = 1, c_in_ = 1, c_out_ = 1, w_in_ = 1, w_out_ = 1;
  Dims extra_;
  std::string impl_;  // oneDNN's implementation name
  Shape out_shape_;
  float* out_ = nullptr;
  const float* bias_ = nullptr;
};

}  // namespace

bool conv_can_write_nwc(const ir::Graph& graph, const ir::Node& node) {
  if (node.inputs.size() < 2 || node.inputs[0] == ir::kNoValue || node.inputs[1] == ir::kNoValue) return false;
  if (graph.value(node.outputs.at(0)).shape.size() != 3) return false;
  try {
    ConvGeometry g = conv_geometry(graph, node, node.op == ir::Op::ConvTranspose);
    return std::all_of(g.extra.begin(), g.extra.end(), [](int64_t e) { return e == 0; });
  } catch (const Error&) {
    return false;  // the kernel factory reports it
  }
}

KernelPtr make_conv_kernel(CompileContext& ctx, const ir::Node& node) {
  if (node.inputs.size() < 2 || node.inputs[0] == ir::kNoValue || node.inputs[1] == ir::kNoValue)
    throw Error(ErrorCode::InvalidModel, "cpu: Conv needs data and weights", node.name, ir::op_name(node.op));
  if (KernelPtr f64 = make_f64_conv(ctx, node)) return f64;
  if (KernelPtr polyphase = make_polyphase_conv_transpose(ctx, node)) return polyphase;
  if (KernelPtr narrow = make_narrow_conv(ctx, node)) return narrow;
  if (KernelPtr winograd = make_winograd_conv(ctx, node)) return winograd;
  // A pointwise 1-D conv between planar values is a GEMM, and oneDNN's pick for it is its gemm
  // convolution, which make_gemm_conv beats (onednn_impl.h): no oneDNN descriptor is made.
  const bool gemm_applies = gemm_conv_applies(ctx, node);
  if (gemm_applies && planar_pointwise_conv1d(ctx, node)) return make_gemm_conv(ctx, node);
  const size_t workspace = ctx.workspace_bytes;
  auto onednn = std::make_unique<ConvKernel>(ctx, node, gemm_applies);
  if (!onednn->declined() && !onednn->reference() && !onednn->slow_for_1d()) return onednn;
  // Never oneDNN's reference loops (nor its slow 1-D picks): our GEMM convolution covers every
  // 1-D Conv. What is left (N-D convs, 1-D ConvTranspose outside the polyphase rule) keeps
  // oneDNN's kernel, and reports it.
  const size_t onednn_workspace = ctx.workspace_bytes;
  ctx.workspace_bytes = workspace;
  if (gemm_applies) return make_gemm_conv(ctx, node);
  ctx.workspace_bytes = onednn_workspace;
  return onednn;
}

}  // namespace lockstep::cpu
