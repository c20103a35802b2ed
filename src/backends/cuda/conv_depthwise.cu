// Depthwise 1-D Conv (group = C_in, C_out a multiple of C_in: the stochastic duration predictor's
// DDSConv, k3 at dilations 1/3/9) as a direct FMA kernel, one thread per output element. cuDNN
// took these at any length, and its per-conv setup (descriptors, heuristics, workspace queries,
// 4-5 ms a conv at a new length on the H200) was most of a short sentence's first call.
// Strict float32, taps summed in order with fmaf, bias last: the same bits every run.
#include "backends/cuda/families.h"
#include "ir/infer_rules.h"

namespace lockstep::cuda {
namespace {

struct DepthwiseParams {
  const float* x;     // [n, cin, t_in]
  const float* w;     // [cout, 1, ks]
  const float* bias;  // [cout] or nullptr
  float* y;           // [n, cout, t_out]
  int cin, cout, mult, t_in, t_out, ks, dil, pad, stride;
  int64_t total;      // n * cout * t_out
};

__global__ void conv_depthwise_kernel(DepthwiseParams p) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int t = static_cast<int>(i % p.t_out);
    const int64_t row = i / p.t_out;  // n * cout + co
    const int co = static_cast<int>(row % p.cout);
    const int64_t b = row / p.cout;
    const float* x = p.x + (b * p.cin + co / p.mult) * static_cast<int64_t>(p.t_in);
    const float* w = p.w + static_cast<int64_t>(co) * p.ks;
    float acc = 0.0f;
    for (int k = 0; k < p.ks; ++k) {
      const int ti = t * p.stride - p.pad + k * p.dil;
      if (ti >= 0 && ti < p.t_in) acc = fmaf(__ldg(w + k), __ldg(x + ti), acc);
    }
    p.y[i] = p.bias ? acc + __ldg(p.bias + co) : acc;
  }
}

}  // namespace

bool conv_depthwise_eligible(const ir::Graph& graph, const ir::Node& node, Precision precision) {
  if (node.op != ir::Op::Conv || node.inputs.size() < 2 || env_is("LOCKSTEP_CUDA_CONV_DEPTHWISE", "0")) return false;
  if (precision != Precision::kFp32 && precision != Precision::kTf32) return false;  // fp16/bf16: cuDNN
  const ir::Value& xv = graph.value(node.inputs[0]);
  const ir::Value& wv = graph.value(node.inputs[1]);
  const ir::Value& yv = graph.value(node.outputs[0]);
  if (xv.shape.size() != 3 || wv.shape.size() != 3 || yv.shape.size() != 3) return false;
  if (device_dtype(xv.dtype) != DType::Float32 || device_dtype(wv.dtype) != DType::Float32) return false;
  const ir::ConvGeometry geo = ir::conv_geometry(node, xv.shape, wv.shape);
  const int64_t cin = xv.shape[1], cout = wv.shape[0];
  if (cin < 2 || geo.group != cin || wv.shape[1] != 1 || cout % cin != 0 || yv.shape[1] != cout) return false;
  if (geo.strides[0] < 1 || geo.dilations[0] < 1 || geo.pad_begin[0] < 0) return false;
  const int64_t big = int64_t{1} << 31;
  return xv.shape[2] < big && yv.shape[2] < big && wv.shape[2] < big && geo.pad_begin[0] < big &&
         (wv.shape[2] - 1) * geo.dilations[0] < big && xv.shape[2] * geo.strides[0] < big;
}

void record_conv_depthwise(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const Shape& xs = g.value(node.inputs[0]).shape;
  const Shape& ws = g.value(node.inputs[1]).shape;
  const Shape& ys = g.value(node.outputs[0]).shape;
  const ir::ConvGeometry geo = ir::conv_geometry(node, xs, ws);
  DepthwiseParams base{};
  base.cin = static_cast<int>(xs[1]);
  base.cout = static_cast<int>(ws[0]);
  base.mult = base.cout / base.cin;
  base.t_in = static_cast<int>(xs[2]);
  base.t_out = static_cast<int>(ys[2]);
  base.ks = static_cast<int>(ws[2]);
  base.dil = static_cast<int>(geo.dilations[0]);
  base.pad = static_cast<int>(geo.pad_begin[0]);
  base.stride = static_cast<int>(geo.strides[0]);
  base.total = num_elements(ys);
  const ir::ValueId x = node.inputs[0], w = node.inputs[1], y = node.outputs[0];
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  const Context* c = &ctx;
  const std::string name = node.name;
  program.launches.push_back({"conv1d_depthwise", [=](cudaStream_t s) {
    if (base.total == 0) return;
    DepthwiseParams p = base;
    p.x = c->fptr(x);
    p.w = c->fptr(w);
    p.bias = bias == ir::kNoValue ? nullptr : c->fptr(bias);
    p.y = c->fptr(y);
    conv_depthwise_kernel<<<grid_for(p.total), kBlock, 0, s>>>(p);
    check_cuda(cudaGetLastError(), "depthwise conv launch", name);
  }});
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::cuda
