// Convolution family: Conv as cudnnConvolutionForward, ConvTranspose as
// cudnnConvolutionBackwardData. Algorithms come from cuDNN's heuristics (no timing), filtered to
// deterministic, FMA-only, precision-preserving choices; bias and epilogue follow in one kernel.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "backends/cuda/families.h"

namespace lockstep::cuda {
namespace {

constexpr size_t kMaxConvWorkspace = size_t{512} << 20;

struct CudnnConv {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t bwd{};
  size_t workspace = 0;
  CudnnConv() {
    cudnnCreateTensorDescriptor(&x);
    cudnnCreateTensorDescriptor(&y);
    cudnnCreateFilterDescriptor(&w);
    cudnnCreateConvolutionDescriptor(&conv);
  }
  ~CudnnConv() {
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
  }
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;
};

// Spatial parameters of a 1-D or 2-D convolution, lifted to 2-D (H = 1 for 1-D).
struct Geometry {
  int64_t n = 1, c_in = 1, c_out = 1, group = 1;
  int64_t in[2] = {1, 1}, out[2] = {1, 1}, k[2] = {1, 1}, s[2] = {1, 1}, d[2] = {1, 1};
  int64_t pb[2] = {0, 0}, pe[2] = {0, 0}, op[2] = {0, 0};
};

std::vector<int64_t> lifted(const std::vector<int64_t>& v, size_t nsp, int64_t fallback, size_t offset = 0) {
  std::vector<int64_t> r(2, fallback);
  for (size_t i = 0; i < nsp; ++i)
    if (offset + i < v.size()) r[2 - nsp + i] = v[offset + i];
  return r;
}

Geometry geometry(const ir::Graph& g, const ir::Node& node) {
  const Shape& x = g.value(node.inputs[0]).shape;
  const Shape& w = g.value(node.inputs[1]).shape;
  const Shape& y = g.value(node.outputs[0]).shape;
  const size_t nsp = x.size() - 2;
  Geometry geo;
  geo.n = x[0];
  geo.c_in = x[1];
  geo.c_out = y[1];
  geo.group = node.attrs.get_int("group", 1);
  for (size_t i = 0; i < nsp; ++i) {
    geo.in[2 - nsp + i] = x[2 + i];
    geo.out[2 - nsp + i] = y[2 + i];
    geo.k[2 - nsp + i] = w[2 + i];
  }
  auto s = lifted(node.attrs.get_ints("strides"), nsp, 1), d = lifted(node.attrs.get_ints("dilations"), nsp, 1);
  auto pads = node.attrs.get_ints("pads");
  auto pb = lifted(pads, nsp, 0), pe = lifted(pads, nsp, 0, nsp);
  auto op = lifted(node.attrs.get_ints("output_padding"), nsp, 0);
  const std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
  const bool transpose = node.op == ir::Op::ConvTranspose;
  for (int i = 0; i < 2; ++i) {
    geo.s[i] = s[static_cast<size_t>(i)];
    geo.d[i] = d[static_cast<size_t>(i)];
    geo.op[i] = op[static_cast<size_t>(i)];
    geo.pb[i] = pb[static_cast<size_t>(i)];
    geo.pe[i] = pe[static_cast<size_t>(i)];
    const int64_t dk = (geo.k[i] - 1) * geo.d[i] + 1;
    if (!transpose && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
      const int64_t total = std::max<int64_t>(0, (geo.out[i] - 1) * geo.s[i] + dk - geo.in[i]);
      geo.pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      geo.pe[i] = total - geo.pb[i];
    } else if (!transpose && auto_pad == "VALID") {
      geo.pb[i] = geo.pe[i] = 0;
    } else if (transpose) {
      const int64_t total = geo.s[i] * (geo.in[i] - 1) + geo.op[i] + dk - geo.out[i];
      if (auto_pad == "SAME_UPPER") geo.pb[i] = total / 2;
      else if (auto_pad == "SAME_LOWER" || node.attrs.has("output_shape")) geo.pb[i] = total - total / 2;
      else if (auto_pad == "VALID") geo.pb[i] = 0;
      geo.pe[i] = total - geo.pb[i];
    }
  }
  return geo;
}

void set4d(cudnnTensorDescriptor_t desc, int64_t n, int64_t c, int64_t h, int64_t w, const std::string& node) {
  check_cudnn(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(n), static_cast<int>(c),
                                         static_cast<int>(h), static_cast<int>(w)), "tensor descriptor", node);
}

void set_conv(CudnnConv& p, const Geometry& geo, int64_t pad_h, int64_t pad_w, const std::string& node) {
  check_cudnn(cudnnSetConvolution2dDescriptor(p.conv, static_cast<int>(pad_h), static_cast<int>(pad_w), static_cast<int>(geo.s[0]),
                                              static_cast<int>(geo.s[1]), static_cast<int>(geo.d[0]), static_cast<int>(geo.d[1]),
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), "convolution descriptor", node);
  check_cudnn(cudnnSetConvolutionGroupCount(p.conv, static_cast<int>(geo.group)), "group count", node);
  // FMA math: no TF32 or other reduced-precision tensor-core paths.
  check_cudnn(cudnnSetConvolutionMathType(p.conv, CUDNN_FMA_MATH), "math type", node);
}

bool precise_fwd(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}

void choose_fwd(Context& ctx, CudnnConv& p, const std::string& node) {
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  check_cudnn(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, p.x, p.w, p.conv, p.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
              "forward heuristics", node);
  bool found = false;
  // LOCKSTEP_CUDA_FWD_ALGO=n (experiments): take algorithm n wherever it qualifies.
  const char* forced = std::getenv("LOCKSTEP_CUDA_FWD_ALGO");
  for (int pass = forced && *forced ? 0 : 1; pass < 2 && !found; ++pass)
    for (int i = 0; i < returned && !found; ++i) {
      const auto& r = perf[i];
      if (r.status != CUDNN_STATUS_SUCCESS || r.determinism != CUDNN_DETERMINISTIC || r.mathType != CUDNN_FMA_MATH ||
          !precise_fwd(r.algo) || r.memory > kMaxConvWorkspace)
        continue;
      if (pass == 0 && static_cast<int>(r.algo) != std::atoi(forced)) continue;
      p.fwd = r.algo;
      found = true;
    }
  if (!found) p.fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;  // deterministic, no workspace
  check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn, p.x, p.w, p.conv, p.y, p.fwd, &p.workspace), "forward workspace", node);
  ctx.need_workspace(p.workspace);
}

void choose_bwd(Context& ctx, CudnnConv& p, const std::string& node) {
  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int returned = 0;
  check_cudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx.cudnn, p.w, p.y, p.conv, p.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf),
              "backward-data heuristics", node);
  // ALGO_1 is the one deterministic, non-FFT, non-Winograd backward-data algorithm.
  p.bwd = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  for (int i = 0; i < returned; ++i)
    if (perf[i].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 && perf[i].status != CUDNN_STATUS_SUCCESS)
      throw Error(ErrorCode::UnsupportedAttribute, "cuda: cuDNN has no deterministic algorithm for this ConvTranspose", node, "ConvTranspose");
  check_cudnn(cudnnGetConvolutionBackwardDataWorkspaceSize(ctx.cudnn, p.w, p.y, p.conv, p.x, p.bwd, &p.workspace), "backward-data workspace", node);
  ctx.need_workspace(p.workspace);
}

void record_conv_forward(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const Geometry geo = geometry(g, node);
  auto p = std::make_shared<CudnnConv>();
  const bool symmetric = geo.pb[0] == geo.pe[0] && geo.pb[1] == geo.pe[1];
  const int64_t xh = symmetric ? geo.in[0] : geo.in[0] + geo.pb[0] + geo.pe[0];
  const int64_t xw = symmetric ? geo.in[1] : geo.in[1] + geo.pb[1] + geo.pe[1];
  set4d(p->x, geo.n, geo.c_in, xh, xw, node.name);
  set4d(p->y, geo.n, geo.c_out, geo.out[0], geo.out[1], node.name);
  check_cudnn(cudnnSetFilter4dDescriptor(p->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(geo.c_out),
                                         static_cast<int>(geo.c_in / geo.group), static_cast<int>(geo.k[0]), static_cast<int>(geo.k[1])),
              "filter descriptor", node.name);
  set_conv(*p, geo, symmetric ? geo.pb[0] : 0, symmetric ? geo.pb[1] : 0, node.name);
  int dims[4];
  check_cudnn(cudnnGetConvolutionNdForwardOutputDim(p->conv, p->x, p->w, 4, dims), "output dims", node.name);
  if (dims[0] != geo.n || dims[1] != geo.c_out || dims[2] != geo.out[0] || dims[3] != geo.out[1])
    throw Error(ErrorCode::Internal, "cuda: cuDNN's Conv output shape disagrees with shape inference", node.name, "Conv");
  choose_fwd(ctx, *p, node.name);
  const ir::ValueId x = node.inputs[0], w = node.inputs[1], y = node.outputs[0];
  const Context* c = &ctx;
  if (!symmetric) {  // asymmetric pads: pad into scratch, then an unpadded convolution
    PadParams pad;
    pad.rank = 4;
    const int64_t in_dims[4] = {geo.n, geo.c_in, geo.in[0], geo.in[1]}, out_dims[4] = {geo.n, geo.c_in, xh, xw};
    for (int d = 0; d < 4; ++d) { pad.in_dims[d] = in_dims[d]; pad.out_dims[d] = out_dims[d]; }
    pad.pad_begin[2] = geo.pb[0];
    pad.pad_begin[3] = geo.pb[1];
    ctx.need_scratch(static_cast<size_t>(geo.n * geo.c_in * xh * xw) * sizeof(float));
    program.launches.push_back({"conv_pad_input", [=](cudaStream_t s) {
      PadParams q = pad;
      q.src = c->ptr(x);
      q.dst = c->scratch();
      launch_pad(q, 4, s);
    }});
  }
  const std::string name = node.name;
  program.launches.push_back({"cudnn_conv_forward_algo" + std::to_string(static_cast<int>(p->fwd)), [=](cudaStream_t) {
    const float one = 1.0f, zero = 0.0f;
    const void* src = symmetric ? c->ptr(x) : c->scratch();
    check_cudnn(cudnnConvolutionForward(c->cudnn, &one, p->x, src, p->w, c->ptr(w), p->conv, p->fwd, c->workspace(),
                                        p->workspace, &zero, p->y, c->ptr(y)), "convolution forward", name);
  }});
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  record_epilogue(ctx, node_index, program, bias);
}

// ConvTranspose as one SGEMM into columns, col[(co,kh,kw), (ih,iw)] = sum_ci w[ci,(co,kh,kw)] x[ci,(ih,iw)],
// then a gather that sums each output's taps in a fixed order and adds the bias (no atomics).
struct Col2Im {
  int64_t n, c_out, in_h, in_w, out_h, out_w, k_h, k_w, s_h, s_w, d_h, d_w, p_h, p_w;
  const float* col;
  const float* bias;
  float* y;
};

__global__ void col2im_kernel(Col2Im p) {
  const int64_t total = p.n * p.c_out * p.out_h * p.out_w;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % p.out_w;
    int64_t r = i / p.out_w;
    const int64_t oh = r % p.out_h;
    r /= p.out_h;
    const int64_t co = r % p.c_out;
    const int64_t n = r / p.c_out;
    const int64_t hw = p.in_h * p.in_w;
    const float* col = p.col + (n * p.c_out + co) * p.k_h * p.k_w * hw;
    float acc = 0.0f;
    for (int64_t kh = 0; kh < p.k_h; ++kh) {
      const int64_t th = oh + p.p_h - kh * p.d_h;
      if (th < 0 || th % p.s_h) continue;
      const int64_t ih = th / p.s_h;
      if (ih >= p.in_h) continue;
      for (int64_t kw = 0; kw < p.k_w; ++kw) {
        const int64_t tw = ow + p.p_w - kw * p.d_w;
        if (tw < 0 || tw % p.s_w) continue;
        const int64_t iw = tw / p.s_w;
        if (iw >= p.in_w) continue;
        acc += col[(kh * p.k_w + kw) * hw + ih * p.in_w + iw];
      }
    }
    p.y[i] = p.bias ? acc + p.bias[co] : acc;
  }
}

bool convt_by_gemm() {
  const char* v = std::getenv("LOCKSTEP_CUDA_CONVT");
  return !(v && std::strcmp(v, "cudnn") == 0);
}

void record_conv_transpose_gemm(Context& ctx, int node_index, NodeProgram& program, const Geometry& geo) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const int64_t kk = geo.k[0] * geo.k[1], hw = geo.in[0] * geo.in[1];
  const int64_t m = geo.c_out * kk;  // rows of col per image
  ctx.need_scratch(static_cast<size_t>(geo.n * m * hw) * sizeof(float));
  const ir::ValueId x = node.inputs[0], w = node.inputs[1], y = node.outputs[0];
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  const Context* c = &ctx;
  const std::string name = node.name;
  const int64_t cin = geo.c_in;
  program.launches.push_back({"conv_transpose_sgemm", [=](cudaStream_t) {
    const float one = 1.0f, zero = 0.0f;
    // Column-major: col^T[hw, m] = x^T[hw, cin] * (w buffer viewed as [m, cin])^T, per image.
    check_cublas(cublasSgemmStridedBatched(c->cublas, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(hw), static_cast<int>(m),
                                           static_cast<int>(cin), &one, c->fptr(x), static_cast<int>(hw), cin * hw, c->fptr(w),
                                           static_cast<int>(m), 0, &zero, static_cast<float*>(c->scratch()), static_cast<int>(hw),
                                           m * hw, static_cast<int>(geo.n)), "conv transpose sgemm", name);
  }});
  program.launches.push_back({"conv_transpose_col2im", [=](cudaStream_t s) {
    Col2Im q{geo.n, geo.c_out, geo.in[0], geo.in[1], geo.out[0], geo.out[1], geo.k[0], geo.k[1], geo.s[0], geo.s[1],
             geo.d[0], geo.d[1], geo.pb[0], geo.pb[1], static_cast<const float*>(c->scratch()),
             bias == ir::kNoValue ? nullptr : c->fptr(bias), c->fptr(y)};
    const int64_t total = geo.n * geo.c_out * geo.out[0] * geo.out[1];
    if (total) col2im_kernel<<<grid_for(total), kBlock, 0, s>>>(q);
  }});
  record_epilogue(ctx, node_index, program);
}

void record_conv_transpose(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const Geometry geo = geometry(g, node);
  if (geo.group == 1 && convt_by_gemm()) {
    for (int i = 0; i < 2; ++i)
      if (geo.pb[i] < 0) throw Error(ErrorCode::UnsupportedAttribute, "cuda: negative ConvTranspose padding", node.name, "ConvTranspose");
    record_conv_transpose_gemm(ctx, node_index, program, geo);
    return;
  }
  bool direct = true;
  int64_t full[2];
  for (int i = 0; i < 2; ++i) {
    if (geo.pb[i] < 0) throw Error(ErrorCode::UnsupportedAttribute, "cuda: negative ConvTranspose padding", node.name, "ConvTranspose");
    const int64_t dk = (geo.k[i] - 1) * geo.d[i] + 1;
    const int64_t r = geo.out[i] + 2 * geo.pb[i] - dk - geo.s[i] * (geo.in[i] - 1);
    if (r < 0 || r >= geo.s[i]) direct = false;
    full[i] = std::max(geo.s[i] * (geo.in[i] - 1) + dk, geo.pb[i] + geo.out[i]);
  }
  // Direct: cuDNN writes the ONNX output. Otherwise: the unpadded result into scratch, then a crop.
  const int64_t dh = direct ? geo.out[0] : full[0], dw = direct ? geo.out[1] : full[1];
  auto p = std::make_shared<CudnnConv>();
  set4d(p->x, geo.n, geo.c_out, dh, dw, node.name);   // cuDNN's dx: lockstep's output
  set4d(p->y, geo.n, geo.c_in, geo.in[0], geo.in[1], node.name);  // cuDNN's dy: lockstep's input
  check_cudnn(cudnnSetFilter4dDescriptor(p->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(geo.c_in),
                                         static_cast<int>(geo.c_out / geo.group), static_cast<int>(geo.k[0]), static_cast<int>(geo.k[1])),
              "filter descriptor", node.name);
  set_conv(*p, geo, direct ? geo.pb[0] : 0, direct ? geo.pb[1] : 0, node.name);
  int dims[4];
  check_cudnn(cudnnGetConvolutionNdForwardOutputDim(p->conv, p->x, p->w, 4, dims), "output dims", node.name);
  if (dims[2] != geo.in[0] || dims[3] != geo.in[1])
    throw Error(ErrorCode::Internal, "cuda: ConvTranspose geometry does not invert in cuDNN", node.name, "ConvTranspose");
  choose_bwd(ctx, *p, node.name);
  if (!direct) ctx.need_scratch(static_cast<size_t>(geo.n * geo.c_out * dh * dw) * sizeof(float));
  const ir::ValueId x = node.inputs[0], w = node.inputs[1], y = node.outputs[0];
  const Context* c = &ctx;
  const std::string name = node.name;
  program.launches.push_back({"cudnn_conv_backward_data_algo" + std::to_string(static_cast<int>(p->bwd)), [=](cudaStream_t) {
    const float one = 1.0f, zero = 0.0f;
    void* dst = direct ? c->ptr(y) : c->scratch();
    check_cudnn(cudnnConvolutionBackwardData(c->cudnn, &one, p->w, c->ptr(w), p->y, c->ptr(x), p->conv, p->bwd, c->workspace(),
                                             p->workspace, &zero, p->x, dst), "convolution backward data", name);
  }});
  if (!direct) {
    const int64_t pb0 = geo.pb[0], pb1 = geo.pb[1];
    const Geometry gg = geo;
    program.launches.push_back({"conv_transpose_crop", [=](cudaStream_t s) {
      CopyParams q;
      q.rank = 4;
      const int64_t d[4] = {gg.n, gg.c_out, gg.out[0], gg.out[1]};
      const int64_t ss[4] = {gg.c_out * dh * dw, dh * dw, dw, 1};
      const int64_t ds[4] = {gg.c_out * gg.out[0] * gg.out[1], gg.out[0] * gg.out[1], gg.out[1], 1};
      for (int k = 0; k < 4; ++k) { q.dims[k] = d[k]; q.src_strides[k] = ss[k]; q.dst_strides[k] = ds[k]; }
      q.src = static_cast<const float*>(c->scratch()) + pb0 * dw + pb1;
      q.dst = c->ptr(y);
      launch_copy(q, 4, s);
    }});
  }
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  record_epilogue(ctx, node_index, program, bias);
}

}  // namespace

std::optional<std::string> conv_unsupported(const ir::Graph& graph, const ir::Node& node) {
  const size_t rank = graph.value(node.inputs[0]).shape.size();
  if (rank != 3 && rank != 4) return std::string(ir::op_name(node.op)) + " supports 1-D and 2-D only on CUDA";
  if (device_dtype(graph.value(node.inputs[0]).dtype) != DType::Float32) return "convolutions are float32 only on CUDA";
  return std::nullopt;
}

void record_conv(Context& ctx, int node_index, NodeProgram& program) {
  if (ctx.graph().nodes[static_cast<size_t>(node_index)].op == ir::Op::Conv) record_conv_forward(ctx, node_index, program);
  else record_conv_transpose(ctx, node_index, program);
}

}  // namespace lockstep::cuda
