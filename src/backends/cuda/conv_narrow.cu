// 1-D Conv with at most four output channels (HiFi-GAN's conv_post: 32 -> 1 over 262144 steps)
// as a direct FMA kernel. The tensor-core tile spends 15 of its 16 MMA rows on nothing there, and
// such a conv is a pass over its input: the kernel reads each input row once through shared memory.
// Strict float32 with a fixed summation order (input channel, then tap): same bits every run.
#include <algorithm>

#include "backends/cuda/cp_async.h"
#include "backends/cuda/families.h"
#include "ir/infer_rules.h"

namespace lockstep::cuda {
namespace {

constexpr int kMaxOut = 4;           // output channels handled (a template argument)
constexpr int kThreads = 128;
constexpr int kPerThread = 4;        // outputs per thread and channel, kThreads apart
constexpr int kSteps = kThreads * kPerThread;  // output steps per block
constexpr int kMaxRows = 8;          // input channels staged per pass
constexpr int kBufFloats = 6144;     // one of the two staging buffers: 24 KB
constexpr int64_t kMaxReach = kBufFloats - kSteps;  // (k-1)*dilation that one row still fits

struct NarrowParams {
  const float* x;     // [n, cin, t_in]
  const float* w;     // [cout, cin, ks]
  const float* bias;  // [cout] or nullptr
  float* y;           // [n, cout, t_out]
  int cin, t_in, t_out, ks, dil, pad, rows;  // rows: input channels per pass (rows * span <= kBufFloats)
};

// Input rows stream through two shared buffers with cp.async (zero fill outside [0, t_in)): the
// next pass's rows are in flight while this pass computes. The first version loaded with plain
// loads and ran at 0.7 TB/s (46 us for conv_post's 33 MB, H200 2026-11-30).
template <int CO>
__global__ void __launch_bounds__(kThreads) conv_narrow_kernel(NarrowParams p) {
  extern __shared__ float xs[];
  const int t0 = blockIdx.x * kSteps, span = kSteps + (p.ks - 1) * p.dil, passes = (p.cin + p.rows - 1) / p.rows;
  const float* x = p.x + static_cast<size_t>(blockIdx.y) * p.cin * p.t_in;
  auto stage = [&](int pass) {
    if (pass < passes) {
      float* buf = xs + (pass % 2) * p.rows * span;
      const int c0 = pass * p.rows, rows = min(p.rows, p.cin - c0);
      for (int r = 0; r < rows; ++r) {
        const float* src = x + static_cast<size_t>(c0 + r) * p.t_in;
        for (int j = threadIdx.x; j < span; j += kThreads) {
          const int t = t0 - p.pad + j;
          const bool ok = t >= 0 && t < p.t_in;
          cp_async4(buf + r * span + j, src + (ok ? t : 0), ok);
        }
      }
    }
    cp_commit();
  };
  float acc[CO][kPerThread] = {};
  stage(0);
  for (int pass = 0; pass < passes; ++pass) {
    stage(pass + 1);
    cp_wait<1>();
    __syncthreads();
    const float* buf = xs + (pass % 2) * p.rows * span;
    const int c0 = pass * p.rows, rows = min(p.rows, p.cin - c0);
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < p.ks; ++k) {
        const float* row = buf + r * span + k * p.dil + threadIdx.x;
        float wk[CO];
#pragma unroll
        for (int co = 0; co < CO; ++co) wk[co] = __ldg(p.w + (static_cast<size_t>(co) * p.cin + c0 + r) * p.ks + k);
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) {
          const float v = row[j * kThreads];
#pragma unroll
          for (int co = 0; co < CO; ++co) acc[co][j] = fmaf(wk[co], v, acc[co][j]);
        }
      }
    __syncthreads();  // this buffer is refilled by the next iteration's stage
  }
  float* y = p.y + static_cast<size_t>(blockIdx.y) * CO * p.t_out;
#pragma unroll
  for (int co = 0; co < CO; ++co) {
    const float b = p.bias ? p.bias[co] : 0.0f;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int t = t0 + threadIdx.x + j * kThreads;
      if (t < p.t_out) y[static_cast<size_t>(co) * p.t_out + t] = p.bias ? acc[co][j] + b : acc[co][j];
    }
  }
}

cudaError_t launch_narrow(const NarrowParams& p, int cout, int n, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((p.t_out + kSteps - 1) / kSteps), static_cast<unsigned>(n));
  const size_t smem = 2 * static_cast<size_t>(p.rows) * (kSteps + (p.ks - 1) * p.dil) * sizeof(float);  // <= 48 KB
  switch (cout) {
    case 1: conv_narrow_kernel<1><<<grid, kThreads, smem, s>>>(p); break;
    case 2: conv_narrow_kernel<2><<<grid, kThreads, smem, s>>>(p); break;
    case 3: conv_narrow_kernel<3><<<grid, kThreads, smem, s>>>(p); break;
    case 4: conv_narrow_kernel<4><<<grid, kThreads, smem, s>>>(p); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

bool conv_narrow_eligible(const ir::Graph& graph, const ir::Node& node, Precision precision) {
  if (node.op != ir::Op::Conv || node.inputs.size() < 2 || env_is("LOCKSTEP_CUDA_CONV_NARROW", "0")) return false;
  if (precision != Precision::kFp32 && precision != Precision::kTf32) return false;  // fp16/bf16: cuDNN
  const ir::Value& xv = graph.value(node.inputs[0]);
  const ir::Value& wv = graph.value(node.inputs[1]);
  const ir::Value& yv = graph.value(node.outputs[0]);
  if (xv.shape.size() != 3 || wv.shape.size() != 3 || yv.shape.size() != 3) return false;
  if (device_dtype(xv.dtype) != DType::Float32 || device_dtype(wv.dtype) != DType::Float32) return false;
  const ir::ConvGeometry geo = ir::conv_geometry(node, xv.shape, wv.shape);
  if (geo.group != 1 || geo.strides[0] != 1 || geo.dilations[0] < 1 || geo.pad_begin[0] < 0) return false;
  const int64_t n = xv.shape[0], cin = xv.shape[1], t_in = xv.shape[2], cout = wv.shape[0], t_out = yv.shape[2];
  if (cout < 1 || cout > kMaxOut || wv.shape[1] != cin || yv.shape[1] != cout || n < 1 || n > 65535) return false;
  const int64_t big = int64_t{1} << 31;
  return cin >= 1 && t_in >= 1 && t_out >= 1 && (wv.shape[2] - 1) * geo.dilations[0] <= kMaxReach && geo.pad_begin[0] < big &&
         cin * t_in < big && t_out + kBufFloats < big && cin * wv.shape[2] * cout < big;
}

void record_conv_narrow(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const Shape& xs = g.value(node.inputs[0]).shape;
  const Shape& ws = g.value(node.inputs[1]).shape;
  const ir::ConvGeometry geo = ir::conv_geometry(node, xs, ws);
  NarrowParams base{};
  base.cin = static_cast<int>(xs[1]);
  base.t_in = static_cast<int>(xs[2]);
  base.t_out = static_cast<int>(g.value(node.outputs[0]).shape[2]);
  base.ks = static_cast<int>(ws[2]);
  base.dil = static_cast<int>(geo.dilations[0]);
  base.pad = static_cast<int>(geo.pad_begin[0]);
  const int span = kSteps + (base.ks - 1) * base.dil;
  base.rows = std::max(1, std::min({kMaxRows, base.cin, kBufFloats / span}));
  const int cout = static_cast<int>(ws[0]), n = static_cast<int>(xs[0]);
  const ir::ValueId x = node.inputs[0], w = node.inputs[1], y = node.outputs[0];
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  const Context* c = &ctx;
  const std::string name = node.name;
  program.launches.push_back({"conv1d_narrow_out" + std::to_string(cout), [=](cudaStream_t s) {
    NarrowParams p = base;
    p.x = c->fptr(x);
    p.w = c->fptr(w);
    p.bias = bias == ir::kNoValue ? nullptr : c->fptr(bias);
    p.y = c->fptr(y);
    check_cuda(launch_narrow(p, cout, n, s), "narrow conv launch", name);
  }});
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::cuda
