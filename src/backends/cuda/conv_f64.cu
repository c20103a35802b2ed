// Options::f64_accumulate on cuda (strict fp32 only): the chosen 1-D Conv, ConvTranspose and MatMul
// nodes computed in float64 and rounded to float32 once — a Piper voice's text encoder, whose float32
// errors reach the audio amplified ~100x (docs/accuracy.md). A conv is an im2col into float64
// columns [ci*k, t] (zeros for the padding), the weights widened to float64 [co, ci*k] (the
// ONNX order already), one cuBLAS DGEMM per batch item, then bias and the rounding; a 1-D
// ConvTranspose (a decoder's upsampler) is one direct kernel, a thread per output; a MatMul
// widens both operands and runs one strided-batched DGEMM. cuBLAS gives the same bits for the
// same device and shapes; scratch holds the float64 copies (they live for the launch only). The
// handle runs on the executor's stream (handle_pool.h), the one these kernels are given.
#include "backends/cuda/families.h"
#include "ir/infer_rules.h"

namespace lockstep::cuda {
namespace {

__global__ void widen_kernel(const float* in, double* out, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

__global__ void narrow_kernel(const double* in, float* out, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(in[i]);
}

struct Im2colParams {
  const float* x;  // [cin, t_in] of one batch item
  double* cols;    // [cin * ks, t_out]
  int cin, t_in, t_out, ks, dil, pad, stride;
  int64_t total;  // cin * ks * t_out
};

__global__ void im2col_kernel(Im2colParams p) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int t = static_cast<int>(i % p.t_out);
    const int64_t row = i / p.t_out;  // ci * ks + k
    const int k = static_cast<int>(row % p.ks), ci = static_cast<int>(row / p.ks);
    const int ti = t * p.stride - p.pad + k * p.dil;
    p.cols[i] = ti >= 0 && ti < p.t_in ? static_cast<double>(__ldg(p.x + static_cast<int64_t>(ci) * p.t_in + ti)) : 0.0;
  }
}

// y[co, t] = float(acc[co, t] + bias[co]): the one rounding.
__global__ void bias_round_kernel(const double* acc, const float* bias, float* y, int t_out, int64_t total) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = static_cast<float>(acc[i] + (bias ? static_cast<double>(__ldg(bias + i / t_out)) : 0.0));
}

// Row-major C[m,n] = A[m,k] B[k,n] in float64, as column-major C^T = B^T A^T.
void dgemm(cublasHandle_t h, int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c,
           int64_t batch, int64_t sa, int64_t sb, int64_t sc, const std::string& node) {
  const double one = 1.0, zero = 0.0;
  check_cublas(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                         static_cast<int>(k), &one, b, static_cast<int>(n), sb, a, static_cast<int>(k), sa,
                                         &zero, c, static_cast<int>(n), sc, static_cast<int>(batch)),
               "dgemm", node);
}

size_t doubles_bytes(int64_t n) { return static_cast<size_t>((n * 8 + 255) / 256 * 256); }

// A 1-D ConvTranspose (group 1), one thread per output: y[b, co, t] = float(bias[co] + sum over the
// taps kw whose input position (t + pad - kw * dil) / stride is whole and inside, and over ci, of
// x[b, ci, ti] * w[ci, co, kw]) — each product exact in float64, one rounding. Taps then channels
// in a fixed order, no atomics. The decoders' upsamplers: 128-512 products an output.
struct ConvT1dParams {
  const float* x;     // [n, cin, t_in]
  const float* w;     // [cin, cout, ks]
  const float* bias;  // [cout] or null
  float* y;           // [n, cout, t_out]
  int cin, cout, t_in, t_out, ks, dil, pad, stride;
  int64_t total;  // n * cout * t_out
};

__global__ void convt1d_f64_kernel(ConvT1dParams p) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int t = static_cast<int>(i % p.t_out);
    const int64_t r = i / p.t_out;
    const int co = static_cast<int>(r % p.cout);
    const float* xb = p.x + (r / p.cout) * p.cin * p.t_in;
    const int tp = t + p.pad;
    double acc = p.bias ? static_cast<double>(__ldg(p.bias + co)) : 0.0;
    for (int kw = 0; kw < p.ks; ++kw) {
      const int tt = tp - kw * p.dil;
      if (tt < 0 || tt % p.stride) continue;
      const int ti = tt / p.stride;
      if (ti >= p.t_in) continue;
      const float* xc = xb + ti;
      const float* wc = p.w + static_cast<int64_t>(co) * p.ks + kw;
      const int64_t wstep = static_cast<int64_t>(p.cout) * p.ks;
      for (int ci = 0; ci < p.cin; ++ci)
        acc += static_cast<double>(__ldg(xc + static_cast<int64_t>(ci) * p.t_in)) *
               static_cast<double>(__ldg(wc + ci * wstep));
    }
    p.y[i] = static_cast<float>(acc);
  }
}

// A node of `op` that Options::f64_accumulate names, in strict fp32, whose input, weights and
// output are rank 3 and float32 on the device.
bool f64_1d_candidate(const Context& ctx, const ir::Node& node, ir::Op op) {
  if (node.op != op || node.inputs.size() < 2 || ctx.precision != Precision::kFp32 || !ctx.accumulates_f64(node))
    return false;
  const ir::Graph& g = ctx.graph();
  const ir::Value& xv = g.value(node.inputs[0]);
  const ir::Value& wv = g.value(node.inputs[1]);
  const ir::Value& yv = g.value(node.outputs[0]);
  return xv.shape.size() == 3 && wv.shape.size() == 3 && yv.shape.size() == 3 &&
         device_dtype(xv.dtype) == DType::Float32 && device_dtype(wv.dtype) == DType::Float32;
}

}  // namespace

bool conv_f64_eligible(const Context& ctx, const ir::Node& node) {
  if (!f64_1d_candidate(ctx, node, ir::Op::Conv)) return false;
  const ir::Graph& g = ctx.graph();
  const ir::Value& xv = g.value(node.inputs[0]);
  const ir::Value& wv = g.value(node.inputs[1]);
  const ir::Value& yv = g.value(node.outputs[0]);
  const ir::ConvGeometry geo = ir::conv_geometry(node, xv.shape, wv.shape);
  if (geo.group != 1 || wv.shape[1] != xv.shape[1] || yv.shape[1] != wv.shape[0]) return false;
  if (geo.strides[0] < 1 || geo.dilations[0] < 1 || geo.pad_begin[0] < 0) return false;
  const int64_t big = int64_t{1} << 31;
  return xv.shape[1] * wv.shape[2] < big && xv.shape[2] < big && yv.shape[2] < big && wv.shape[0] < big;
}

bool convt_f64_eligible(const Context& ctx, const ir::Node& node) {
  if (!f64_1d_candidate(ctx, node, ir::Op::ConvTranspose)) return false;
  const ir::Graph& g = ctx.graph();
  const ir::Value& xv = g.value(node.inputs[0]);
  const ir::Value& wv = g.value(node.inputs[1]);
  const ir::Value& yv = g.value(node.outputs[0]);
  const ir::ConvGeometry geo = ir::conv_transpose_geometry(node, xv.shape, wv.shape);
  if (geo.group != 1 || wv.shape[0] != xv.shape[1] || yv.shape[1] != wv.shape[1] || yv.shape[2] != geo.out_shape[2]) return false;
  const int64_t big = int64_t{1} << 30;
  return xv.shape[1] * xv.shape[2] < big && yv.shape[2] < big && wv.shape[1] * wv.shape[2] < big &&
         std::abs(geo.pad_begin[0]) < big && geo.dilations[0] * wv.shape[2] < big;
}

void record_convt_f64(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const Shape& xs = g.value(node.inputs[0]).shape;
  const Shape& ws = g.value(node.inputs[1]).shape;
  const Shape& ys = g.value(node.outputs[0]).shape;
  const ir::ConvGeometry geo = ir::conv_transpose_geometry(node, xs, ws);
  ConvT1dParams base{};
  base.cin = static_cast<int>(xs[1]);
  base.t_in = static_cast<int>(xs[2]);
  base.cout = static_cast<int>(ys[1]);
  base.t_out = static_cast<int>(ys[2]);
  base.ks = static_cast<int>(ws[2]);
  base.dil = static_cast<int>(geo.dilations[0]);
  base.pad = static_cast<int>(geo.pad_begin[0]);
  base.stride = static_cast<int>(geo.strides[0]);
  base.total = ys[0] * ys[1] * ys[2];
  const ir::ValueId x = node.inputs[0], w = node.inputs[1], y = node.outputs[0];
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  const Context* c = &ctx;
  const std::string name = node.name;
  program.launches.push_back({"conv_transpose1d_f64", [=](cudaStream_t s) {
    if (base.total == 0) return;
    ConvT1dParams p = base;
    p.x = c->fptr(x);
    p.w = c->fptr(w);
    p.bias = bias == ir::kNoValue ? nullptr : c->fptr(bias);
    p.y = c->fptr(y);
    convt1d_f64_kernel<<<grid_for(p.total), kBlock, 0, s>>>(p);
    check_cuda(cudaGetLastError(), "f64 conv transpose", name);
  }});
  record_epilogue(ctx, node_index, program);
}

void record_conv_f64(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const Shape& xs = g.value(node.inputs[0]).shape;
  const Shape& ws = g.value(node.inputs[1]).shape;
  const Shape& ys = g.value(node.outputs[0]).shape;
  const ir::ConvGeometry geo = ir::conv_geometry(node, xs, ws);
  const int64_t batch = xs[0], cin = xs[1], t_in = xs[2], co = ws[0], ks = ws[2], t_out = ys[2], kk = cin * ks;
  Im2colParams base{};
  base.cin = static_cast<int>(cin);
  base.t_in = static_cast<int>(t_in);
  base.t_out = static_cast<int>(t_out);
  base.ks = static_cast<int>(ks);
  base.dil = static_cast<int>(geo.dilations[0]);
  base.pad = static_cast<int>(geo.pad_begin[0]);
  base.stride = static_cast<int>(geo.strides[0]);
  base.total = kk * t_out;
  const size_t w_off = 0, cols_off = doubles_bytes(co * kk), acc_off = cols_off + doubles_bytes(kk * t_out);
  ctx.need_scratch(acc_off + doubles_bytes(co * t_out));
  const ir::ValueId x = node.inputs[0], w = node.inputs[1], y = node.outputs[0];
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  const Context* c = &ctx;
  const std::string name = node.name;
  program.launches.push_back({"conv1d_f64", [=](cudaStream_t s) {
    if (batch * co * t_out == 0) return;
    std::byte* scratch = static_cast<std::byte*>(c->scratch());
    double* wd = reinterpret_cast<double*>(scratch + w_off);
    double* cols = reinterpret_cast<double*>(scratch + cols_off);
    double* acc = reinterpret_cast<double*>(scratch + acc_off);
    widen_kernel<<<grid_for(co * kk), kBlock, 0, s>>>(c->fptr(w), wd, co * kk);
    check_cuda(cudaGetLastError(), "f64 conv: widen the weights", name);
    for (int64_t b = 0; b < batch; ++b) {
      Im2colParams p = base;
      p.x = c->fptr(x) + b * cin * t_in;
      p.cols = cols;
      im2col_kernel<<<grid_for(p.total), kBlock, 0, s>>>(p);
      check_cuda(cudaGetLastError(), "f64 conv: im2col", name);
      dgemm(c->cublas, co, t_out, kk, wd, cols, acc, 1, 0, 0, 0, name);
      bias_round_kernel<<<grid_for(co * t_out), kBlock, 0, s>>>(
          acc, bias == ir::kNoValue ? nullptr : c->fptr(bias), c->fptr(y) + b * co * t_out, static_cast<int>(t_out), co * t_out);
      check_cuda(cudaGetLastError(), "f64 conv: bias and rounding", name);
    }
  }});
  record_epilogue(ctx, node_index, program);
}

void record_matmul_f64(Context& ctx, const ir::Node& node, NodeProgram& program, int64_t m, int64_t n, int64_t k,
                       int64_t count, int64_t stride_a, int64_t stride_b) {
  const int64_t a_elems = (count - 1) * stride_a + m * k, b_elems = (count - 1) * stride_b + k * n;
  const size_t b_off = doubles_bytes(a_elems), y_off = b_off + doubles_bytes(b_elems);
  ctx.need_scratch(y_off + doubles_bytes(count * m * n));
  const ir::ValueId va = node.inputs[0], vb = node.inputs[1], vy = node.outputs[0];
  const Context* c = &ctx;
  const std::string name = node.name;
  program.launches.push_back({"matmul_f64", [=](cudaStream_t s) {
    if (m * n * count == 0) return;
    std::byte* scratch = static_cast<std::byte*>(c->scratch());
    double* a = reinterpret_cast<double*>(scratch);
    double* b = reinterpret_cast<double*>(scratch + b_off);
    double* yd = reinterpret_cast<double*>(scratch + y_off);
    widen_kernel<<<grid_for(a_elems), kBlock, 0, s>>>(c->fptr(va), a, a_elems);
    widen_kernel<<<grid_for(b_elems), kBlock, 0, s>>>(c->fptr(vb), b, b_elems);
    check_cuda(cudaGetLastError(), "f64 matmul: widen", name);
    dgemm(c->cublas, m, n, k, a, b, yd, count, stride_a, stride_b, m * n, name);
    narrow_kernel<<<grid_for(count * m * n), kBlock, 0, s>>>(yd, c->fptr(vy), count * m * n);
    check_cuda(cudaGetLastError(), "f64 matmul: rounding", name);
  }});
}

}  // namespace lockstep::cuda
