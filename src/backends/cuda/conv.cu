// Convolution family: Conv as cudnnConvolutionForward, ConvTranspose as
// cudnnConvolutionBackwardData (algorithm choice: conv_algo.cu), lockstep's own kernels where
// they win; bias and epilogue follow in one kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/conv_cudnn.h"
#include "backends/cuda/conv_tc.h"
#include "backends/cuda/families.h"

namespace lockstep::cuda {
namespace {

// Spatial parameters lifted to `dims` spatial dims (2 for cuDNN: H = 1 for 1-D; 3 for the GEMM
// ConvTranspose, which also takes 3-D); leading dims are 1.
struct Geometry {
  int64_t n = 1, c_in = 1, c_out = 1, group = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, op[3] = {0, 0, 0};
};

std::vector<int64_t> lifted(const std::vector<int64_t>& v, size_t nsp, int64_t fallback, size_t dims, size_t offset = 0) {
  std::vector<int64_t> r(dims, fallback);
  for (size_t i = 0; i < nsp; ++i)
    if (offset + i < v.size()) r[dims - nsp + i] = v[offset + i];
  return r;
}

Geometry geometry(const ir::Graph& g, const ir::Node& node, int dims = 2) {
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
    geo.in[dims - nsp + i] = x[2 + i];
    geo.out[dims - nsp + i] = y[2 + i];
    geo.k[dims - nsp + i] = w[2 + i];
  }
  const size_t nd = static_cast<size_t>(dims);
  auto s = lifted(node.attrs.get_ints("strides"), nsp, 1, nd), d = lifted(node.attrs.get_ints("dilations"), nsp, 1, nd);
  auto pads = node.attrs.get_ints("pads");
  auto pb = lifted(pads, nsp, 0, nd), pe = lifted(pads, nsp, 0, nd, nsp);
  auto op = lifted(node.attrs.get_ints("output_padding"), nsp, 0, nd);
  const std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
  const bool transpose = node.op == ir::Op::ConvTranspose;
  for (int i = 0; i < dims; ++i) {
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
      const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);  // floor, as ONNX (total < 0 from output_shape)
      if (auto_pad == "SAME_UPPER") geo.pb[i] = half;
      else if (auto_pad == "SAME_LOWER" || node.attrs.has("output_shape")) geo.pb[i] = total - half;
      else if (auto_pad == "VALID") geo.pb[i] = 0;
      geo.pe[i] = total - geo.pb[i];
    }
  }
  return geo;
}

void set4d(cudnnTensorDescriptor_t desc, int64_t n, int64_t c, int64_t h, int64_t w, const std::string& node,
           cudnnDataType_t type = CUDNN_DATA_FLOAT) {
  check_cudnn(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, type, static_cast<int>(n), static_cast<int>(c),
                                         static_cast<int>(h), static_cast<int>(w)), "tensor descriptor", node);
}

void set_conv(CudnnConv& p, const Geometry& geo, int64_t pad_h, int64_t pad_w, const std::string& node,
              Precision precision = Precision::kFp32) {
  check_cudnn(cudnnSetConvolution2dDescriptor(p.conv, static_cast<int>(pad_h), static_cast<int>(pad_w), static_cast<int>(geo.s[0]),
                                              static_cast<int>(geo.s[1]), static_cast<int>(geo.d[0]), static_cast<int>(geo.d[1]),
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), "convolution descriptor", node);
  check_cudnn(cudnnSetConvolutionGroupCount(p.conv, static_cast<int>(geo.group)), "group count", node);
  // Strict fp32: FMA math, no TF32 or other reduced-precision tensor-core paths. Fast modes:
  // tensor cores (TF32 for float data; fp16/bf16 data accumulates in float: compute type FLOAT).
  check_cudnn(cudnnSetConvolutionMathType(p.conv, precision == Precision::kFp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
              "math type", node);
}

// The residual z of a Conv whose epilogue starts with "+ z" (z of the output's shape) when cuDNN
// can fuse bias and z into the convolution (precomputed implicit GEMM, symmetric pads, a bias);
// kNoValue otherwise. LOCKSTEP_CUDA_FUSE_RESIDUAL=0 turns it off.
ir::ValueId fused_residual(const ir::Graph& g, const ir::Node& node, const CudnnConv& p) {
  if (env_is("LOCKSTEP_CUDA_FUSE_RESIDUAL", "0")) return ir::kNoValue;
  if (node.inputs.size() < 3 || node.inputs[2] == ir::kNoValue || node.epilogue.empty()) return ir::kNoValue;
  if (p.fwd != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) return ir::kNoValue;
  const ir::EpilogueStep& step = node.epilogue.front();
  if (step.op != ir::Op::Add || step.operand == ir::kNoValue) return ir::kNoValue;
  const ir::Value& z = g.value(step.operand);
  if (z.shape != g.value(node.outputs[0]).shape || device_dtype(z.dtype) != DType::Float32) return ir::kNoValue;
  if (step.operand == node.inputs[0]) return ir::kNoValue;
  return step.operand;
}

// ---- fp16 / bf16 convolutions (Options.precision): x converted (and padded) into scratch, weights
// converted once at compile, cuDNN with float accumulation, the epilogue reads the 2-byte result.

template <class H> __device__ inline H to_reduced(float v);
template <> __device__ inline __half to_reduced<__half>(float v) { return __float2half_rn(v); }
template <> __device__ inline __nv_bfloat16 to_reduced<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// dst[n, c, h, w] (h < dh, w < dw) = src[n, c, h - ph, w - pw], 0 outside: rows of dw elements.
template <class H>
__global__ void to_reduced_pad_kernel(const float* src, H* dst, int64_t rows, int dh, int dw, int sh, int sw, int ph, int pw) {
  const int64_t total = rows * dw;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int w = static_cast<int>(i % dw);
    const int64_t r = i / dw;
    const int h = static_cast<int>(r % dh);
    const int64_t nc = r / dh;
    const int ih = h - ph, iw = w - pw;
    const float v = ih >= 0 && ih < sh && iw >= 0 && iw < sw ? src[(nc * sh + ih) * sw + iw] : 0.0f;
    dst[i] = to_reduced<H>(v);
  }
}

// Same shape: four elements per thread (n4 = count / 4), one float4 load and one 8-byte store.
template <class H>
__global__ void to_reduced_vec4_kernel(const float4* src, uint2* dst, int64_t n4) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float4 v = src[i];
    H h[4] = {to_reduced<H>(v.x), to_reduced<H>(v.y), to_reduced<H>(v.z), to_reduced<H>(v.w)};
    dst[i] = *reinterpret_cast<const uint2*>(h);
  }
}

template <class H>
void launch_to_reduced(const float* src, void* dst, int64_t rows, int64_t dh, int64_t dw, int64_t sh, int64_t sw, int64_t ph,
                       int64_t pw, cudaStream_t s) {
  const int64_t total = rows * dh * dw;
  if (total == 0) return;
  if (dh == sh && dw == sw && total % 4 == 0)
    to_reduced_vec4_kernel<H><<<grid_for(total / 4), kBlock, 0, s>>>(reinterpret_cast<const float4*>(src), static_cast<uint2*>(dst), total / 4);
  else
    to_reduced_pad_kernel<H><<<grid_for(total), kBlock, 0, s>>>(src, static_cast<H*>(dst), rows * dh, static_cast<int>(dh), static_cast<int>(dw),
                                                                static_cast<int>(sh), static_cast<int>(sw), static_cast<int>(ph), static_cast<int>(pw));
}

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

// Host conversion of a constant weight (float64 or float32 on the host) to 2-byte values.
std::vector<uint16_t> reduced_host(const Tensor& t, bool bf16) {
  const Tensor f = t.dtype() == DType::Float32 ? t : t.to(DType::Float32);
  const float* v = f.data<float>();
  const size_t n = static_cast<size_t>(f.numel());
  std::vector<uint16_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (bf16) {
      const __nv_bfloat16 b = __float2bfloat16_rn(v[i]);
      std::memcpy(&out[i], &b, 2);
    } else {
      const __half h = __float2half_rn(v[i]);
      std::memcpy(&out[i], &h, 2);
    }
  }
  return out;
}

// cuDNN descriptors and the forward algorithm for a Conv in `type`. Asymmetric pads leave
// cuDNN unpadded over an input the caller pads into scratch: xh x xw is that input's extent.
struct ConvDescriptors {
  std::shared_ptr<CudnnConv> conv;
  bool symmetric = true;
  int64_t xh = 0, xw = 0;
};

ConvDescriptors describe_conv(Context& ctx, const ir::Node& node, const Geometry& geo, cudnnDataType_t type) {
  ConvDescriptors d;
  auto p = d.conv = std::make_shared<CudnnConv>();
  d.symmetric = geo.pb[0] == geo.pe[0] && geo.pb[1] == geo.pe[1];
  d.xh = d.symmetric ? geo.in[0] : geo.in[0] + geo.pb[0] + geo.pe[0];
  d.xw = d.symmetric ? geo.in[1] : geo.in[1] + geo.pb[1] + geo.pe[1];
  set4d(p->x, geo.n, geo.c_in, d.xh, d.xw, node.name, type);
  set4d(p->y, geo.n, geo.c_out, geo.out[0], geo.out[1], node.name, type);
  check_cudnn(cudnnSetFilter4dDescriptor(p->w, type, CUDNN_TENSOR_NCHW, static_cast<int>(geo.c_out),
                                         static_cast<int>(geo.c_in / geo.group), static_cast<int>(geo.k[0]), static_cast<int>(geo.k[1])),
              "filter descriptor", node.name);
  set_conv(*p, geo, d.symmetric ? geo.pb[0] : 0, d.symmetric ? geo.pb[1] : 0, node.name, ctx.precision);
  int dims[4];
  check_cudnn(cudnnGetConvolutionNdForwardOutputDim(p->conv, p->x, p->w, 4, dims), "output dims", node.name);
  if (dims[0] != geo.n || dims[1] != geo.c_out || dims[2] != geo.out[0] || dims[3] != geo.out[1])
    throw Error(ErrorCode::Internal, "cuda: cuDNN's Conv output shape disagrees with shape inference", node.name, "Conv");
  choose_fwd(ctx, *p, node.name);
  return d;
}

void record_conv_forward_reduced(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const Geometry geo = geometry(g, node);
  const bool bf16 = ctx.precision == Precision::kBf16;
  const cudnnDataType_t type = bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  const ConvDescriptors d = describe_conv(ctx, node, geo, type);
  const std::shared_ptr<CudnnConv> p = d.conv;
  const bool symmetric = d.symmetric;
  const int64_t xh = d.xh, xw = d.xw;
  const ir::ValueId x = node.inputs[0], w = node.inputs[1];
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  // Scratch: [x in 2 bytes | y in 2 bytes | w in 2 bytes when w is not a constant].
  const size_t x_bytes = align256(static_cast<size_t>(geo.n * geo.c_in * xh * xw) * 2);
  const size_t y_bytes = align256(static_cast<size_t>(geo.n * geo.c_out * geo.out[0] * geo.out[1]) * 2);
  const int64_t w_count = num_elements(g.value(w).shape);
  const bool w_const = g.value(w).constant.defined();
  ctx.need_scratch(x_bytes + y_bytes + (w_const ? 0 : align256(static_cast<size_t>(w_count) * 2)));
  if (w_const && w_count) {
    const std::vector<uint16_t> host = reduced_host(g.value(w).constant, bf16);
    check_cuda(cudaMalloc(&p->reduced_w, host.size() * 2), "fp16/bf16 weights", node.name);
    check_cuda(cudaMemcpy(p->reduced_w, host.data(), host.size() * 2, cudaMemcpyHostToDevice), "upload fp16/bf16 weights", node.name);
  }
  const Context* c = &ctx;
  const std::string name = node.name;
  const Geometry gg = geo;
  program.launches.push_back({bf16 ? "conv_input_to_bf16" : "conv_input_to_fp16", [=](cudaStream_t s) {
    char* base = static_cast<char*>(c->scratch());
    const int64_t rows = gg.n * gg.c_in;
    if (bf16) launch_to_reduced<__nv_bfloat16>(c->fptr(x), base, rows, xh, xw, gg.in[0], gg.in[1], symmetric ? 0 : gg.pb[0], symmetric ? 0 : gg.pb[1], s);
    else launch_to_reduced<__half>(c->fptr(x), base, rows, xh, xw, gg.in[0], gg.in[1], symmetric ? 0 : gg.pb[0], symmetric ? 0 : gg.pb[1], s);
    if (!w_const && w_count) {
      void* wd = base + x_bytes + y_bytes;
      if (bf16) launch_to_reduced<__nv_bfloat16>(c->fptr(w), wd, 1, 1, w_count, 1, w_count, 0, 0, s);
      else launch_to_reduced<__half>(c->fptr(w), wd, 1, 1, w_count, 1, w_count, 0, 0, s);
    }
  }});
  program.launches.push_back({std::string("cudnn_conv_forward_") + (bf16 ? "bf16" : "fp16") + "_algo" + std::to_string(static_cast<int>(p->fwd)),
                              [=](cudaStream_t) {
    const float one = 1.0f, zero = 0.0f;
    char* base = static_cast<char*>(c->scratch());
    const void* wd = w_const ? p->reduced_w : base + x_bytes + y_bytes;
    check_cudnn(cudnnConvolutionForward(c->cudnn, &one, p->x, base, p->w, wd, p->conv, p->fwd, c->workspace(), p->workspace, &zero,
                                        p->y, base + x_bytes), "convolution forward (fp16/bf16)", name);
  }});
  record_epilogue_from_reduced(ctx, node_index, program, bias, bf16 ? 2 : 1, x_bytes);
}

// y[n] = W x[n] for a 1x1 conv: column-major, y^T[hw, c_out] = x^T[hw, c_in] * W^T[c_in, c_out]
// (W row-major [c_out, c_in]), one pedantic SGEMM per batch item, then bias and epilogue. cuDNN's
// implicit GEMM took ~16 us per flow 1x1 conv at 1024 steps (H200 graph-replay profile).
void record_conv1x1_gemm(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const Geometry geo = geometry(g, node);
  const int64_t hw = geo.in[0] * geo.in[1], cin = geo.c_in, cout = geo.c_out, n = geo.n;
  const ir::ValueId x = node.inputs[0], w = node.inputs[1], y = node.outputs[0];
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  const Context* c = &ctx;
  const std::string name = node.name;
  program.launches.push_back({"conv1x1_sgemm", [=](cudaStream_t) {
    const float one = 1.0f, zero = 0.0f;
    check_cublas(cublasSgemmStridedBatched(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(hw), static_cast<int>(cout),
                                           static_cast<int>(cin), &one, c->fptr(x), static_cast<int>(hw), cin * hw, c->fptr(w),
                                           static_cast<int>(cin), 0, &zero, c->fptr(y), static_cast<int>(hw), cout * hw,
                                           static_cast<int>(n)), "1x1 conv sgemm", name);
  }});
  record_epilogue(ctx, node_index, program, bias);
}

void record_conv_forward(Context& ctx, int node_index, NodeProgram& program) {
  if (ctx.precision == Precision::kFp16 || ctx.precision == Precision::kBf16) {
    record_conv_forward_reduced(ctx, node_index, program);
    return;
  }
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  if (conv_f64_eligible(ctx, node)) {  // Options::f64_accumulate (a voice's text encoder)
    record_conv_f64(ctx, node_index, program);
    return;
  }
  if (conv_narrow_eligible(g, node, ctx.precision)) {  // conv_post-style: a pass over the input
    record_conv_narrow(ctx, node_index, program);
    return;
  }
  if (conv_depthwise_eligible(g, node, ctx.precision)) {  // DDSConv: cuDNN's setup cost more than the conv
    record_conv_depthwise(ctx, node_index, program);
    return;
  }
  if (conv_ffma_eligible(g, node, ctx.precision)) {  // 1x1 (and small opt-in convs): bias and epilogue fused
    record_conv_ffma(ctx, node_index, program);
    return;
  }
  // Strict fp32 on tensor cores (3xTF32), see conv_tc.h.
  if (conv_tc_eligible(g, node, ctx.precision) && record_conv_tc(ctx, node_index, program)) return;
  if (conv1x1_by_gemm(g, node, ctx.precision)) {
    record_conv1x1_gemm(ctx, node_index, program);
    return;
  }
  const Geometry geo = geometry(g, node);
  const ConvDescriptors d = describe_conv(ctx, node, geo, CUDNN_DATA_FLOAT);
  const std::shared_ptr<CudnnConv> p = d.conv;
  const bool symmetric = d.symmetric;
  const int64_t xh = d.xh, xw = d.xw;
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
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  const ir::ValueId z = symmetric ? fused_residual(g, node, *p) : ir::kNoValue;
  if (z != ir::kNoValue) {
    // y = conv(x) + z + bias in cuDNN's fused call (identity activation), rest of the epilogue after.
    check_cudnn(cudnnCreateTensorDescriptor(&p->bias), "bias descriptor", name);
    set4d(p->bias, 1, geo.c_out, 1, 1, name);
    check_cudnn(cudnnCreateActivationDescriptor(&p->identity), "activation descriptor", name);
    check_cudnn(cudnnSetActivationDescriptor(p->identity, CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0.0), "identity activation", name);
    program.launches.push_back({"cudnn_conv_bias_residual_algo" + std::to_string(static_cast<int>(p->fwd)), [=](cudaStream_t) {
      const float one = 1.0f;
      check_cudnn(cudnnConvolutionBiasActivationForward(c->cudnn, &one, p->x, c->ptr(x), p->w, c->ptr(w), p->conv, p->fwd,
                                                        c->workspace(), p->workspace, &one, p->y, c->ptr(z), p->bias, c->ptr(bias),
                                                        p->identity, p->y, c->ptr(y)), "convolution + bias + residual", name);
    }});
    record_epilogue(ctx, node_index, program, ir::kNoValue, 1);
    return;
  }
  program.launches.push_back({"cudnn_conv_forward_algo" + std::to_string(static_cast<int>(p->fwd)), [=](cudaStream_t) {
    const float one = 1.0f, zero = 0.0f;
    const void* src = symmetric ? c->ptr(x) : c->scratch();
    check_cudnn(cudnnConvolutionForward(c->cudnn, &one, p->x, src, p->w, c->ptr(w), p->conv, p->fwd, c->workspace(),
                                        p->workspace, &zero, p->y, c->ptr(y)), "convolution forward", name);
  }});
  record_epilogue(ctx, node_index, program, bias);
}

// ConvTranspose as one SGEMM into columns, col[(co,kh,kw), (ih,iw)] = sum_ci w[ci,(co,kh,kw)] x[ci,(ih,iw)],
// then a gather that sums each output's taps in a fixed order and adds the bias (no atomics).
struct Col2Im {
  int64_t n, c_out;
  int64_t in[3], out[3], k[3], s[3], d[3], p[3];
  const float* col;
  const float* bias;
  float* y;
};

__global__ void col2im_kernel(Col2Im p) {
  const int64_t spatial = p.out[0] * p.out[1] * p.out[2];
  const int64_t total = p.n * p.c_out * spatial;
  const int64_t in_size = p.in[0] * p.in[1] * p.in[2];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t o[3];
    o[2] = i % p.out[2];
    int64_t r = i / p.out[2];
    o[1] = r % p.out[1];
    r /= p.out[1];
    o[0] = r % p.out[0];
    r /= p.out[0];
    const int64_t co = r % p.c_out;
    const int64_t n = r / p.c_out;
    const float* col = p.col + (n * p.c_out + co) * p.k[0] * p.k[1] * p.k[2] * in_size;
    float acc = 0.0f;
    // Taps in a fixed order (kd, kh, kw): each output is one thread's sum, no atomics.
    for (int64_t k0 = 0; k0 < p.k[0]; ++k0) {
      const int64_t t0 = o[0] + p.p[0] - k0 * p.d[0];
      if (t0 < 0 || t0 % p.s[0] || t0 / p.s[0] >= p.in[0]) continue;
      for (int64_t k1 = 0; k1 < p.k[1]; ++k1) {
        const int64_t t1 = o[1] + p.p[1] - k1 * p.d[1];
        if (t1 < 0 || t1 % p.s[1] || t1 / p.s[1] >= p.in[1]) continue;
        for (int64_t k2 = 0; k2 < p.k[2]; ++k2) {
          const int64_t t2 = o[2] + p.p[2] - k2 * p.d[2];
          if (t2 < 0 || t2 % p.s[2] || t2 / p.s[2] >= p.in[2]) continue;
          const int64_t tap = (k0 * p.k[1] + k1) * p.k[2] + k2;
          acc += col[tap * in_size + ((t0 / p.s[0]) * p.in[1] + t1 / p.s[1]) * p.in[2] + t2 / p.s[2]];
        }
      }
    }
    p.y[i] = p.bias ? acc + p.bias[co] : acc;
  }
}

// The 1-D case (the decoders' upsamplers) with 32-bit indices, visiting only the taps whose
// input position is whole (kw = (ow + p) mod s, step s when d = 1): same taps, same order.
__global__ void col2im_1d_kernel(const float* col, const float* bias, float* y, int c_out, int out_w, int in_w, int k, int s,
                                 int d, int p, int total) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int ow = i % out_w, nc = i / out_w;
    const float* c = col + static_cast<int64_t>(nc) * k * in_w;
    const int t = ow + p;
    float acc = 0.0f;
    if (d == 1) {
      for (int kw = ((t % s) + s) % s; kw < k; kw += s) {
        const int tt = t - kw;
        if (tt < 0) break;
        if (tt / s < in_w) acc += c[kw * in_w + tt / s];
      }
    } else {
      for (int kw = 0; kw < k; ++kw) {
        const int tt = t - kw * d;
        if (tt < 0 || tt % s || tt / s >= in_w) continue;
        acc += c[kw * in_w + tt / s];
      }
    }
    y[i] = bias ? acc + bias[nc % c_out] : acc;
  }
}

bool convt_by_gemm() { return !env_is("LOCKSTEP_CUDA_CONVT", "cudnn"); }

void record_conv_transpose_gemm(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const Geometry geo = geometry(g, node, 3);
  const int64_t kk = geo.k[0] * geo.k[1] * geo.k[2], hw = geo.in[0] * geo.in[1] * geo.in[2];
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
    Col2Im q{};
    q.n = geo.n;
    q.c_out = geo.c_out;
    for (int i = 0; i < 3; ++i) {
      q.in[i] = geo.in[i];
      q.out[i] = geo.out[i];
      q.k[i] = geo.k[i];
      q.s[i] = geo.s[i];
      q.d[i] = geo.d[i];
      q.p[i] = geo.pb[i];  // may be negative (output_shape past the natural size)
    }
    q.col = static_cast<const float*>(c->scratch());
    q.bias = bias == ir::kNoValue ? nullptr : c->fptr(bias);
    q.y = c->fptr(y);
    const int64_t total = geo.n * geo.c_out * geo.out[0] * geo.out[1] * geo.out[2];
    const bool one_d = geo.in[0] * geo.in[1] == 1 && geo.k[0] * geo.k[1] == 1 && geo.out[0] * geo.out[1] == 1;
    if (total && one_d && total < (int64_t{1} << 31) && geo.n * m * hw < (int64_t{1} << 31))
      col2im_1d_kernel<<<grid_for(total), kBlock, 0, s>>>(q.col, q.bias, q.y, static_cast<int>(geo.c_out), static_cast<int>(geo.out[2]),
                                                          static_cast<int>(geo.in[2]), static_cast<int>(geo.k[2]), static_cast<int>(geo.s[2]),
                                                          static_cast<int>(geo.d[2]), static_cast<int>(geo.pb[2]), static_cast<int>(total));
    else if (total) col2im_kernel<<<grid_for(total), kBlock, 0, s>>>(q);
  }});
  record_epilogue(ctx, node_index, program);
}

bool gemm_transpose(const ir::Graph& g, const ir::Node& node) {
  return node.op == ir::Op::ConvTranspose && node.attrs.get_int("group", 1) == 1 &&
         (convt_by_gemm() || g.value(node.inputs[0]).shape.size() == 5);
}

void record_conv_transpose(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  if (convt_f64_eligible(ctx, node)) {  // Options::f64_accumulate (a decoder's upsampler)
    record_convt_f64(ctx, node_index, program);
    return;
  }
  // Strict fp32, 1-D, kernel a multiple of the stride: all phases as one tensor-core conv (conv_tc.h).
  if (conv_tc_eligible(g, node, ctx.precision) && record_conv_tc(ctx, node_index, program)) return;
  if (gemm_transpose(g, node)) {
    record_conv_transpose_gemm(ctx, node_index, program);
    return;
  }
  const Geometry geo = geometry(g, node);
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
  const bool gemm_3d = rank == 5 && node.op == ir::Op::ConvTranspose && node.attrs.get_int("group", 1) == 1;
  if (rank != 3 && rank != 4 && !gemm_3d)
    return std::string(ir::op_name(node.op)) + " supports 1-D and 2-D (ConvTranspose also 3-D without groups) only on CUDA";
  if (device_dtype(graph.value(node.inputs[0]).dtype) != DType::Float32) return "convolutions are float32 only on CUDA";
  return std::nullopt;
}

bool conv1x1_by_gemm(const ir::Graph& graph, const ir::Node& node, Precision precision) {
  if (node.op != ir::Op::Conv || precision != Precision::kFp32) return false;
  if (env_is("LOCKSTEP_CUDA_CONV1X1_GEMM", "0")) return false;
  if (graph.value(node.inputs[0]).shape.size() > 4 || device_dtype(graph.value(node.inputs[0]).dtype) != DType::Float32) return false;
  const Geometry geo = geometry(graph, node);
  if (geo.group != 1) return false;
  for (int i = 0; i < 2; ++i)
    if (geo.k[i] != 1 || geo.s[i] != 1 || geo.pb[i] != 0 || geo.pe[i] != 0 || geo.out[i] != geo.in[i]) return false;
  const int64_t hw = geo.in[0] * geo.in[1], big = int64_t{1} << 31;
  return geo.n > 0 && hw > 0 && geo.c_in > 0 && geo.c_out > 0 && geo.n < big && geo.c_in * hw < big && geo.c_out * hw < big;
}

void record_conv(Context& ctx, int node_index, NodeProgram& program) {
  if (ctx.graph().nodes[static_cast<size_t>(node_index)].op == ir::Op::Conv) record_conv_forward(ctx, node_index, program);
  else record_conv_transpose(ctx, node_index, program);
}

}  // namespace lockstep::cuda
