// 1-D Conv (stride 1, group 1, strict float32) as a register-blocked FFMA implicit GEMM that
// applies the bias and the node's leading epilogue steps in its store. Made for the flows' 1x1
// convs (72-384 output channels over ~1024 steps): cuBLAS ran each as an SGEMM of 24-48 blocks on
// the 132-SM H200 and a separate bias kernel followed (10.6 + 5.8 us per conv, graph replay).
// Each output is four FMA chains over (input channel, tap) in ascending order, one per thread
// group, added in group order, then the bias and the steps with elementwise.cu's float ops
// (ew_ops.h): the order depends on the shape alone, so every tile and every run gives the same bits.
// In graph replay the store can instead send each channel segment through the steps of the node
// reading that segment's Slice, into that node's output (absorbed consumers, device.h).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "backends/channel_consumers.h"
#include "backends/cuda/cp_async.h"
#include "backends/cuda/ew_ops.h"
#include "backends/cuda/families.h"
#include "core/shared_by_key.h"
#include "ir/infer_rules.h"

namespace lockstep::cuda {
namespace {

// The block's threads form kGroups groups that split the reduction: group g sums input channels
// [64s + 16g, 64s + 16g + 16) of every 64-channel stage s, and the block adds the four partial
// sums in group order. One group per block left 1.45 warps per scheduler on the flows' 1x1 convs
// (ncu: issue-latency bound, 35 us for 192 -> 384 over 1024 steps, H200 2026-11-30); four give
// about six, each thread still owning a 4x4 register tile.
constexpr int kGroups = 4;
constexpr int kChunk = 16;                   // channels per group per stage
constexpr int kStageCh = kGroups * kChunk;   // channels per stage
constexpr int kStages = 3;                   // two stages in flight while one computes
constexpr int kMaxFused = 4;   // epilogue steps applied in the store; the rest run after
constexpr int kBm = 32;        // output channels per block (4 per thread)
constexpr size_t kMaxSmem = 227 * 1024;  // sm_90's opt-in limit, requested at record time

struct FfmaStep {
  int code = kIdentity, lhs = 0;
  float alpha = 0.0f;
  const float* operand = nullptr;  // nullptr: a unary step
  int64_t sn = 0, sc = 0, st = 0;  // the operand's broadcast strides over (n, c, t)
};

// Output channels [c0, c1) of the conv go to y (channel c0 of batch item 0; yn floats between batch
// items) after `steps`, whose operands are indexed by the channel within the segment. One segment
// [0, cout) into the node's output is the plain conv; more, its channel Slices' readers absorbed.
struct FfmaSegment {
  int c0 = 0, c1 = 0;
  float* y = nullptr;
  int64_t yn = 0;
  int nsteps = 0;
  FfmaStep steps[kMaxFused];
};
constexpr int kMaxSegments = 4;

struct FfmaParams {
  const float* x = nullptr;     // [n, cin, t_in]
  const float* w = nullptr;     // [cin][ks][cout_pad], transposed at compile, zero past cout
  const float* bias = nullptr;  // [cout] or nullptr
  int cin = 0, cout = 0, cout_pad = 0, t_in = 0, t_out = 0, ks = 1, dil = 1, pad = 0;
  // Shared input rows: xw floats each. vec: 16-byte copies from the multiple of 4 at or below
  // t0 - pad (t_in % 4 == 0 and an aligned x: every granule is all inside or all outside), the
  // row's first step r floats in; else 4-byte copies from t0 - pad (r = 0). A row is `units`
  // copies; unit_inv = ceil(2^24 / units) divides by it (exact for the indices of one stage).
  int xw = 0, r = 0, vec = 0, units = 0;
  unsigned unit_inv = 0;
  int nseg = 1;
  FfmaSegment seg[kMaxSegments];  // in channel order
};

// Input span a block's row covers, and the shared row length for it.
__host__ __device__ inline int row_span(int bn, int ks, int dil) { return bn + (ks - 1) * dil; }
inline int shared_row(int bn, int ks, int dil) { return (3 + row_span(bn, ks, dil) + 3) / 4 * 4; }
inline size_t stage_floats(int bn, int ks, int dil) {
  return static_cast<size_t>(kStageCh) * (static_cast<size_t>(ks) * kBm + shared_row(bn, ks, dil));
}
inline size_t smem_bytes(int bn, int ks, int dil) {
  // The stages, or the partial sums of the four groups where those are larger.
  return std::max(kStages * stage_floats(bn, ks, dil), static_cast<size_t>(kGroups) * kBm * bn) * sizeof(float);
}

// Block: kBm output channels x BN steps, kGroups groups; in its group, thread (tx, ty) owns
// channels 4ty..4ty+3 and steps 4tx..4tx+3: the warp reads consecutive inputs, its weight reads
// are broadcasts. KS > 0 fixes the tap count at compile time (1x1: no tap loop);
// 0 reads p.ks. grid (t, co, n).
template <int BN, int KS>
__global__ void __launch_bounds__(kGroups * kBm * BN / 16) conv_ffma_kernel(const __grid_constant__ FfmaParams p) {
  constexpr int TX = BN / 4, kGroupThreads = kBm * BN / 16, kThreads = kGroups * kGroupThreads;
  extern __shared__ __align__(16) float smem[];
  const int ks = KS > 0 ? KS : p.ks;
  const int wstage = kStageCh * ks * kBm, stage = wstage + kStageCh * p.xw;
  const int group = threadIdx.x / kGroupThreads, local = threadIdx.x % kGroupThreads;
  const int tx = local % TX, ty = local / TX;
  const int t0 = blockIdx.x * BN, co0 = blockIdx.y * kBm, n = blockIdx.z;
  const float* x = p.x + static_cast<size_t>(n) * p.cin * p.t_in;
  const int stages = (p.cin + kStageCh - 1) / kStageCh;
  const int a0 = t0 - p.pad - p.r;  // input step of the first shared float
  auto load = [&](int st, int buf) {
    if (st < stages) {
      float* ws = smem + buf * stage;
      float* xs = ws + wstage;
      const int c0 = st * kStageCh, rows = min(kStageCh, p.cin - c0);
      for (int i = threadIdx.x; i < rows * ks * (kBm / 4); i += kThreads) {
        const int row = i / (kBm / 4), q = i % (kBm / 4);
        cp_async16(ws + row * kBm + q * 4, p.w + static_cast<size_t>(c0 * ks + row) * p.cout_pad + co0 + q * 4, true);
      }
      const float* src0 = x + static_cast<size_t>(c0) * p.t_in;
      for (unsigned i = threadIdx.x; i < static_cast<unsigned>(rows * p.units); i += kThreads) {
        const unsigned row = (i * p.unit_inv) >> 24, u = i - row * p.units;
        const float* src = src0 + static_cast<size_t>(row) * p.t_in;
        float* dst = xs + row * p.xw;
        if (p.vec) {
          const int t = a0 + 4 * static_cast<int>(u);
          const bool ok = t >= 0 && t < p.t_in;
          cp_async16(dst + 4 * u, src + (ok ? t : 0), ok);
        } else {
          const int t = a0 + static_cast<int>(u);
          const bool ok = t >= 0 && t < p.t_in;
          cp_async4(dst + u, src + (ok ? t : 0), ok);
        }
      }
    }
    cp_commit();
  };
  float acc[4][4] = {};
  // One input channel's products: the weights of channels 4ty..4ty+3 (one 16-byte read) times
  // steps 4tx..4tx+3 (one 16-byte read where the taps keep them aligned: 1x1 convs).
  auto channel = [&](const float* ws, const float* xs, int c) {
#pragma unroll
    for (int k = 0; k < ks; ++k) {  // fully unrolled when KS fixes ks
      const float4 w4 = *reinterpret_cast<const float4*>(ws + (c * ks + k) * kBm);
      const float* xr = xs + c * p.xw + k * p.dil;
      float v[4];
      if constexpr (KS == 1) {
        const float4 x4 = *reinterpret_cast<const float4*>(xr);
        v[0] = x4.x, v[1] = x4.y, v[2] = x4.z, v[3] = x4.w;
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = xr[j];
      }
      const float wv[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[i][j] = fmaf(wv[i], v[j], acc[i][j]);
    }
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) load(s, s);
  for (int st = 0; st < stages; ++st) {
    cp_wait<kStages - 2>();  // this stage's group is complete
    __syncthreads();  // ... for every thread, and the buffer refilled below is no longer read
    load(st + kStages - 1, (st + kStages - 1) % kStages);
    const int c_begin = group * kChunk, count = min(kChunk, p.cin - st * kStageCh - c_begin);
    const float* ws = smem + (st % kStages) * stage + c_begin * ks * kBm + ty * 4;
    const float* xs = smem + (st % kStages) * stage + wstage + c_begin * p.xw + p.r + tx * 4;
    if (count == kChunk) {
#pragma unroll
      for (int c = 0; c < kChunk; ++c) channel(ws, xs, c);
    } else {
      for (int c = 0; c < count; ++c) channel(ws, xs, c);
    }
  }
  // The groups' partial sums through shared memory, added in group order; then the bias and the
  // fused steps, four consecutive outputs per thread and iteration.
  cp_wait<0>();
  __syncthreads();
  float* part = smem;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    *reinterpret_cast<float4*>(part + (group * kBm + ty * 4 + i) * BN + tx * 4) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
  __syncthreads();
  const bool whole4 = p.t_out % 4 == 0;  // four outputs in bounds together, 16-byte aligned
  for (int idx = threadIdx.x * 4; idx < kBm * BN; idx += kThreads * 4) {
    const int co = co0 + idx / BN, t = t0 + idx % BN;
    if (co >= p.cout || t >= p.t_out) continue;
    int si = 0;
    for (int s = 1; s < p.nseg; ++s)
      if (co >= p.seg[s].c0) si = s;
    const FfmaSegment& sg = p.seg[si];
    if (co < sg.c0 || co >= sg.c1) continue;  // a channel nothing reads
    const int cr = co - sg.c0;
    float v[4];
    float4 sum = *reinterpret_cast<const float4*>(part + idx);
#pragma unroll
    for (int g = 1; g < kGroups; ++g) {
      const float4 q = *reinterpret_cast<const float4*>(part + g * kBm * BN + idx);
      sum = make_float4(sum.x + q.x, sum.y + q.y, sum.z + q.z, sum.w + q.w);
    }
    v[0] = sum.x, v[1] = sum.y, v[2] = sum.z, v[3] = sum.w;
    const float b = p.bias ? p.bias[co] : 0.0f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (p.bias) v[j] = v[j] + b;
      for (int s = 0; s < sg.nsteps; ++s) {
        const FfmaStep& fs = sg.steps[s];
        const float o = fs.operand ? fs.operand[n * fs.sn + cr * fs.sc + (t + j) * fs.st] : 0.0f;
        v[j] = fs.lhs ? apply(fs.code, o, v[j], fs.alpha) : apply(fs.code, v[j], o, fs.alpha);
      }
    }
    float* dst = sg.y + n * sg.yn + static_cast<int64_t>(cr) * p.t_out + t;
    if (whole4) {
      *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (t + j < p.t_out) dst[j] = v[j];
    }
  }
}

// Lets every instantiation use up to kMaxSmem of dynamic shared memory (once per process).
cudaError_t prepare() {
  static const cudaError_t status = [] {
    const int bytes = static_cast<int>(kMaxSmem);
    cudaError_t e = cudaFuncSetAttribute(conv_ffma_kernel<64, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e == cudaSuccess) e = cudaFuncSetAttribute(conv_ffma_kernel<64, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e == cudaSuccess) e = cudaFuncSetAttribute(conv_ffma_kernel<32, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e == cudaSuccess) e = cudaFuncSetAttribute(conv_ffma_kernel<32, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    return e;
  }();
  return status;
}

template <int BN>
cudaError_t launch_tile(const FfmaParams& p, int n, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((p.t_out + BN - 1) / BN), static_cast<unsigned>(p.cout_pad / kBm), static_cast<unsigned>(n));
  const size_t smem = smem_bytes(BN, p.ks, p.dil);
  constexpr int threads = kGroups * kBm * BN / 16;
  if (p.ks == 1 && p.r == 0) conv_ffma_kernel<BN, 1><<<grid, threads, smem, s>>>(p);  // aligned 16-byte input reads
  else conv_ffma_kernel<BN, 0><<<grid, threads, smem, s>>>(p);
  return cudaGetLastError();
}

// 64 steps per block (512 threads), or 32 (256 threads) when that leaves fewer than two blocks
// per SM or 64 does not fit; LOCKSTEP_CUDA_CONV_FFMA_TILE=64|32 forces one where both fit.
int choose_bn(int64_t n, int64_t cout, int64_t t_out, int ks, int dil, int sms) {
  if (smem_bytes(64, ks, dil) > kMaxSmem) return 32;  // long kernels: the narrower rows fit
  if (env_is("LOCKSTEP_CUDA_CONV_FFMA_TILE", "64")) return 64;
  if (env_is("LOCKSTEP_CUDA_CONV_FFMA_TILE", "32")) return 32;
  const int64_t blocks = n * ((cout + kBm - 1) / kBm) * ((t_out + 63) / 64);
  return blocks < 2 * static_cast<int64_t>(sms) ? 32 : 64;
}

// Convs of more than one tap take this path up to this many outputs (N*C_out*T_out):
// LOCKSTEP_CUDA_CONV_FFMA_MAX_OUT (0 when unset: none; the tensor-core path takes them).
int64_t any_kernel_max_outputs() {
  const char* env = std::getenv("LOCKSTEP_CUDA_CONV_FFMA_MAX_OUT");
  return env ? std::atoll(env) : 0;
}

std::atomic<int> recorded{0};

// One output segment as recorded: channels [c0, c1) after `steps` into dst, which is the node's
// own output (own: at channel c0 of it) or an absorbed consumer's output (from its channel 0).
struct SegmentSpec {
  int c0 = 0, c1 = 0;
  ir::ValueId dst = ir::kNoValue;
  bool own = true;
  std::vector<ir::EpilogueStep> steps;
};

// How many leading steps the store can apply: element-wise codes with float operands, at most `max`.
size_t fusable_steps(const ir::Graph& g, const std::vector<ir::EpilogueStep>& steps, size_t max) {
  size_t n = 0;
  for (; n < steps.size() && n < max; ++n) {
    const ir::EpilogueStep& step = steps[n];
    if (ew_code(step.op) < 0 || (step.operand != ir::kNoValue && device_dtype(g.value(step.operand).dtype) != DType::Float32)) break;
  }
  return n;
}

}  // namespace

bool conv_ffma_eligible(const ir::Graph& graph, const ir::Node& node, Precision precision) {
  if (node.op != ir::Op::Conv || node.inputs.size() < 2 || precision != Precision::kFp32) return false;
  if (env_is("LOCKSTEP_CUDA_CONV_FFMA", "0")) return false;
  const ir::Value& xv = graph.value(node.inputs[0]);
  const ir::Value& wv = graph.value(node.inputs[1]);
  const ir::Value& yv = graph.value(node.outputs[0]);
  if (xv.shape.size() != 3 || wv.shape.size() != 3 || yv.shape.size() != 3 || !wv.constant.defined()) return false;
  if (device_dtype(xv.dtype) != DType::Float32 || device_dtype(wv.dtype) != DType::Float32) return false;
  if (node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue && device_dtype(graph.value(node.inputs[2]).dtype) != DType::Float32)
    return false;
  const ir::ConvGeometry geo = ir::conv_geometry(node, xv.shape, wv.shape);
  if (geo.group != 1 || geo.strides[0] != 1 || geo.dilations[0] < 1 || geo.pad_begin[0] < 0) return false;
  const int64_t n = xv.shape[0], cin = xv.shape[1], t_in = xv.shape[2], cout = wv.shape[0], ks = wv.shape[2], t_out = yv.shape[2];
  if (ks == 1 && env_is("LOCKSTEP_CUDA_CONV_TC_K1", "1")) return false;  // the tensor-core opt-in wins
  if (ks != 1 && !env_is("LOCKSTEP_CUDA_CONV_FFMA", "all") && n * cout * t_out > any_kernel_max_outputs()) return false;
  if (wv.shape[1] != cin || yv.shape[1] != cout || n < 1 || n > 65535 || cin < 1 || cout < 1 || t_in < 1 || t_out < 1) return false;
  const int64_t big = int64_t{1} << 30;
  if (cin * t_in >= big || cout * t_out >= big || cin * ks * (cout + kBm) >= big || geo.pad_begin[0] >= big || t_out + 64 >= big ||
      (ks - 1) * geo.dilations[0] > 440)  // a row stays under 512 copies (FfmaParams::unit_inv)
    return false;
  return smem_bytes(32, static_cast<int>(ks), static_cast<int>(geo.dilations[0])) <= kMaxSmem;
}

void record_conv_ffma(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const Shape& xs = g.value(node.inputs[0]).shape;
  const ir::Value& wv = g.value(node.inputs[1]);
  const Shape& out = g.value(node.outputs[0]).shape;
  const ir::ConvGeometry geo = ir::conv_geometry(node, xs, wv.shape);
  FfmaParams base{};
  base.cin = static_cast<int>(xs[1]);
  base.t_in = static_cast<int>(xs[2]);
  base.cout = static_cast<int>(wv.shape[0]);
  base.cout_pad = (base.cout + kBm - 1) / kBm * kBm;
  base.t_out = static_cast<int>(out[2]);
  base.ks = static_cast<int>(wv.shape[2]);
  base.dil = static_cast<int>(geo.dilations[0]);
  base.pad = static_cast<int>(geo.pad_begin[0]);
  int sms = 0, device = 0;
  check_cuda(prepare(), "FFMA conv shared memory opt-in", node.name);
  check_cuda(cudaGetDevice(&device), "current device", node.name);
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count", node.name);
  const int n = static_cast<int>(xs[0]);
  const int bn = choose_bn(n, base.cout, base.t_out, base.ks, base.dil, sms);
  base.xw = shared_row(bn, base.ks, base.dil);
  const int r = ((-base.pad) % 4 + 4) % 4;
  // Weights [cout][cin][ks] -> [cin][ks][cout_pad] (float32 as cuDNN reads them), once per
  // process: every executable of the same constant (a voice's segment at another length) shares
  // the device copy (core/shared_by_key.h).
  const Tensor& wc = wv.constant;
  const std::string key = "ffma" + storage_key(wc) + "|" +
                          std::to_string(base.cout) + "," + std::to_string(base.cin) + "," + std::to_string(base.ks) + "," +
                          std::to_string(base.cout_pad) + "|dev" + std::to_string(device);
  const std::shared_ptr<const DeviceFloats> dw = shared_by_key<DeviceFloats>(key, [&] {
    const Tensor wf = wc.dtype() == DType::Float32 ? wc : wc.to(DType::Float32);
    std::vector<float> host(static_cast<size_t>(base.cin) * base.ks * base.cout_pad, 0.0f);
    const float* w = wf.data<float>();
    for (int co = 0; co < base.cout; ++co)
      for (int ci = 0; ci < base.cin; ++ci)
        for (int k = 0; k < base.ks; ++k)
          host[(static_cast<size_t>(ci) * base.ks + k) * base.cout_pad + co] = w[(static_cast<size_t>(co) * base.cin + ci) * base.ks + k];
    return upload_floats(host, "transposed conv weights", node.name);
  });
  base.w = dw->ptr;
  // The leading epilogue steps with float operands, applied in the store; the rest in a kernel
  // after (all of them with LOCKSTEP_CUDA_CONV_FFMA_FUSE=0: the tests' same-bits reference).
  const size_t max_fused = env_is("LOCKSTEP_CUDA_CONV_FFMA_FUSE", "0") ? 0 : static_cast<size_t>(kMaxFused);
  const size_t fused = fusable_steps(g, node.epilogue, max_fused);
  const ir::ValueId x = node.inputs[0], y = node.outputs[0];
  SegmentSpec whole{0, base.cout, y, true, {node.epilogue.begin(), node.epilogue.begin() + static_cast<std::ptrdiff_t>(fused)}};
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  const Context* c = &ctx;
  const std::string name = node.name;
  const std::string kernel = "conv1d_ffma_k" + std::to_string(base.ks) + "_tile32x" + std::to_string(bn) +
                             (fused ? "+epilogue" + std::to_string(fused) : "");
  // The launch storing `segs` (their operands' strides over their own shapes).
  auto launch_for = [=, &g](const std::vector<SegmentSpec>& segs) {
    FfmaParams pb = base;
    pb.nseg = static_cast<int>(segs.size());
    std::vector<std::vector<ir::ValueId>> operands;
    for (size_t i = 0; i < segs.size(); ++i) {
      FfmaSegment& sg = pb.seg[i];
      sg.c0 = segs[i].c0;
      sg.c1 = segs[i].c1;
      sg.nsteps = static_cast<int>(segs[i].steps.size());
      const Shape shape = {out[0], sg.c1 - sg.c0, out[2]};
      sg.yn = (segs[i].own ? out[1] : shape[1]) * out[2];
      operands.emplace_back();
      for (size_t k = 0; k < segs[i].steps.size(); ++k) {
        const ir::EpilogueStep& step = segs[i].steps[k];
        FfmaStep& fs = sg.steps[k];
        fs.code = ew_code(step.op);
        fs.lhs = step.operand_is_lhs ? 1 : 0;
        fs.alpha = step.alpha;
        if (step.operand != ir::kNoValue) {
          const std::vector<int64_t> st = broadcast_strides(g.value(step.operand).shape, shape);
          fs.sn = st[0];
          fs.sc = st[1];
          fs.st = st[2];
        }
        operands.back().push_back(step.operand);
      }
    }
    return [=](cudaStream_t s) {
      FfmaParams p = pb;
      p.x = c->fptr(x);
      p.bias = bias == ir::kNoValue ? nullptr : c->fptr(bias);
      for (size_t i = 0; i < segs.size(); ++i) {
        p.seg[i].y = c->fptr(segs[i].dst) + (segs[i].own ? static_cast<int64_t>(segs[i].c0) * p.t_out : 0);
        for (size_t k = 0; k < operands[i].size(); ++k)
          if (operands[i][k] != ir::kNoValue) p.seg[i].steps[k].operand = c->fptr(operands[i][k]);
      }
      p.vec = p.t_in % 4 == 0 && reinterpret_cast<uintptr_t>(p.x) % 16 == 0;
      p.r = p.vec ? r : 0;
      const int span = row_span(bn, p.ks, p.dil);
      p.units = p.vec ? (p.r + span + 3) / 4 : span;
      p.unit_inv = ((1u << 24) + static_cast<unsigned>(p.units) - 1) / static_cast<unsigned>(p.units);
      (void)dw;  // keeps the transposed weights alive with the program
      check_cuda(bn == 64 ? launch_tile<64>(p, n, s) : launch_tile<32>(p, n, s), "FFMA conv launch", name);
    };
  };
  program.launches.push_back({kernel, launch_for({whole})});
  recorded.fetch_add(1);
  // The same conv storing its channel Slices' readers' values (graph replay; the executor keeps it
  // where those bytes may be written this early, see Absorption).
  if (!node.epilogue.empty() || max_fused == 0 || env_is("LOCKSTEP_CUDA_ABSORB", "0")) {
    record_epilogue(ctx, node_index, program, ir::kNoValue, fused);
    return;
  }
  const auto found = backends::absorbable_segments(g, ctx.channel_facts(), node_index);
  if (!found || found->size() > static_cast<size_t>(kMaxSegments)) return;
  std::vector<SegmentSpec> segs;
  Absorption a;
  a.producer = node_index;
  a.reads.push_back(x);
  bool own = false;
  for (const backends::ChannelSegment& cs : *found) {
    SegmentSpec spec{static_cast<int>(cs.range.c0), static_cast<int>(cs.range.c0 + cs.range.len), y, true, {}};
    const bool absorb = cs.consumer >= 0 && fusable_steps(g, cs.steps, kMaxFused) == cs.steps.size();
    if (absorb) {
      spec.dst = cs.out;
      spec.own = false;
      spec.steps = cs.steps;
      a.absorbed.push_back(cs.slice);
      a.absorbed.push_back(cs.consumer);
      a.writes.push_back(cs.out);
      for (const ir::EpilogueStep& step : cs.steps) {
        if (step.operand == ir::kNoValue) continue;
        a.reads.push_back(step.operand);
        // Read and written at the same element (one thread): in place is safe.
        if (g.value(step.operand).shape == g.value(cs.out).shape) a.in_place.push_back({cs.out, step.operand});
      }
    }
    own = own || !absorb;
    segs.push_back(std::move(spec));
  }
  if (a.absorbed.empty()) return;
  if (own) a.writes.push_back(y);
  // A read paired in place with one segment's write must not be read by another segment.
  std::erase_if(a.in_place, [&](const std::pair<ir::ValueId, ir::ValueId>& pr) {
    return std::count(a.reads.begin(), a.reads.end(), pr.second) > 1;
  });
  a.plain = program.launches.size() - 1;
  a.fused = a.plain + 1;
  std::string absorbed_kernel = kernel + "+absorbed";
  for (const SegmentSpec& spec : segs)
    if (!spec.own) absorbed_kernel += std::to_string(spec.steps.size());
  Launch fused_launch{absorbed_kernel, launch_for(segs)};
  fused_launch.when = Launch::When::kGraphOnly;
  program.launches.push_back(std::move(fused_launch));
  ctx.absorptions.push_back(std::move(a));
}

int conv_ffma_recorded_count() { return recorded.load(); }

}  // namespace lockstep::cuda
