// Element-wise family: one "program" kernel evaluates a node's op and its fused epilogue in a
// single pass (acc = load(src); acc = step(acc, operand) ...), broadcasting every operand.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/ew_ops.h"
#include "backends/cuda/families.h"
#include "ir/infer.h"

namespace lockstep::cuda {
namespace {

constexpr int kMaxSteps = 12;

struct EwOperand {
  const void* ptr = nullptr;
  int64_t strides[kMaxRank] = {};
};
struct EwStep {
  int code = kIdentity;
  int operand = -1;  // index into ops, -1 for unary
  int lhs = 0;
  float alpha = 0.0f;
  // A unary op applied to the operand as it is read (its producer's kernel fused in, see
  // fused_operand_producer); kIdentity: none.
  int operand_code = kIdentity;
  float operand_alpha = 0.0f;
};
struct EwProgram {
  int rank = 0;
  int64_t n = 0;
  int64_t dims[kMaxRank] = {};
  EwOperand src;
  int src_kind = 0;  // 0: src is T; 1: half, 2: bfloat16 (a reduced-precision convolution's output)
  int nsteps = 0;
  EwStep steps[kMaxSteps];
  EwOperand ops[kMaxSteps];
  void* out = nullptr;
};

__device__ inline float load_reduced(const void* base, size_t off, int kind) {
  return kind == 1 ? __half2float(static_cast<const __half*>(base)[off]) : __bfloat162float(static_cast<const __nv_bfloat16*>(base)[off]);
}

// R > 0: the collapsed rank known at compile time (no loop over kMaxRank; rank 1 divides nothing).
template <class T, class I, int R>
__global__ void ew_program_kernel(EwProgram p) {
  constexpr int kRank = R > 0 ? R : kMaxRank;
  const int rank = R > 0 ? R : p.rank;
  const I n = static_cast<I>(p.n);
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    I coord[kRank];
    I rem = i;
#pragma unroll
    for (int d = kRank - 1; d >= 0; --d) {
      if (d < rank) {
        if (d == 0) {
          coord[d] = rem;
        } else {
          const I dim = static_cast<I>(p.dims[d]);
          coord[d] = rem % dim;
          rem /= dim;
        }
      }
    }
    auto offset = [&](const EwOperand& o) {
      I off = 0;
#pragma unroll
      for (int d = 0; d < kRank; ++d)
        if (d < rank) off += coord[d] * static_cast<I>(o.strides[d]);
      return off;
    };
    T acc;
    if constexpr (std::is_same_v<T, float>) {
      acc = p.src_kind ? load_reduced(p.src.ptr, offset(p.src), p.src_kind) : static_cast<const float*>(p.src.ptr)[offset(p.src)];
    } else {
      acc = static_cast<const T*>(p.src.ptr)[offset(p.src)];
    }
    for (int s = 0; s < p.nsteps; ++s) {
      const EwStep st = p.steps[s];
      T b = T(0);
      if (st.operand >= 0) b = static_cast<const T*>(p.ops[st.operand].ptr)[offset(p.ops[st.operand])];
      if (st.operand_code != kIdentity) b = apply(st.operand_code, b, b, st.operand_alpha);
      acc = st.lhs ? apply(st.code, b, acc, st.alpha) : apply(st.code, acc, b, st.alpha);
    }
    static_cast<T*>(p.out)[i] = acc;
  }
}

// Four consecutive elements of the innermost dim per thread (float4 loads/stores): every operand
// walks that dim contiguously (stride 1) or broadcasts it (stride 0); the dim is a multiple of 4.
template <int R>
__global__ void ew_program_vec4_kernel(EwProgram p) {
  const uint32_t n4 = static_cast<uint32_t>(p.n / 4);
  for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < n4; j += gridDim.x * blockDim.x) {
    const uint32_t i = j * 4;
    uint32_t coord[R];
    uint32_t rem = i;
#pragma unroll
    for (int d = R - 1; d >= 1; --d) {
      const uint32_t dim = static_cast<uint32_t>(p.dims[d]);
      coord[d] = rem % dim;
      rem /= dim;
    }
    coord[0] = rem;
    auto load = [&](const EwOperand& o) {
      uint32_t off = 0;
#pragma unroll
      for (int d = 0; d < R; ++d) off += coord[d] * static_cast<uint32_t>(o.strides[d]);
      const float* ptr = static_cast<const float*>(o.ptr) + off;
      if (o.strides[R - 1] == 0) {
        const float v = *ptr;
        return make_float4(v, v, v, v);
      }
      return *reinterpret_cast<const float4*>(ptr);
    };
    float4 acc;
    if (p.src_kind) {  // four 2-byte elements: one 8-byte load
      uint32_t off = 0;
#pragma unroll
      for (int d = 0; d < R; ++d) off += coord[d] * static_cast<uint32_t>(p.src.strides[d]);
      const uint2 raw = *reinterpret_cast<const uint2*>(static_cast<const char*>(p.src.ptr) + size_t{off} * 2);
      float2 lo, hi;
      if (p.src_kind == 1) {
        lo = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
        hi = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
      } else {
        lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
        hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
      }
      acc = make_float4(lo.x, lo.y, hi.x, hi.y);
    } else {
      acc = load(p.src);
    }
    for (int s = 0; s < p.nsteps; ++s) {
      const EwStep st = p.steps[s];
      float4 b = make_float4(0.f, 0.f, 0.f, 0.f);
      if (st.operand >= 0) b = load(p.ops[st.operand]);
      if (st.operand_code != kIdentity) {
        b.x = apply(st.operand_code, b.x, b.x, st.operand_alpha);
        b.y = apply(st.operand_code, b.y, b.y, st.operand_alpha);
        b.z = apply(st.operand_code, b.z, b.z, st.operand_alpha);
        b.w = apply(st.operand_code, b.w, b.w, st.operand_alpha);
      }
      if (st.lhs) {
        acc.x = apply(st.code, b.x, acc.x, st.alpha);
        acc.y = apply(st.code, b.y, acc.y, st.alpha);
        acc.z = apply(st.code, b.z, acc.z, st.alpha);
        acc.w = apply(st.code, b.w, acc.w, st.alpha);
      } else {
        acc.x = apply(st.code, acc.x, b.x, st.alpha);
        acc.y = apply(st.code, acc.y, b.y, st.alpha);
        acc.z = apply(st.code, acc.z, b.z, st.alpha);
        acc.w = apply(st.code, acc.w, b.w, st.alpha);
      }
    }
    reinterpret_cast<float4*>(p.out)[j] = acc;
  }
}

bool vec4_ok(const EwOperand& o, int rank, size_t align = 16) {
  const int64_t inner = o.strides[rank - 1];
  if (inner == 0) return align == 16;  // broadcast along the inner dim: scalar loads (float operands only)
  if (inner != 1 || reinterpret_cast<uintptr_t>(o.ptr) % align) return false;
  for (int d = 0; d < rank - 1; ++d)
    if (o.strides[d] % 4) return false;  // keeps every float4 load 16-byte aligned
  return true;
}

template <class T, class I>
void launch_ew(const EwProgram& p, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<I, uint32_t>) {
    bool vec = p.rank <= 3 && p.dims[p.rank - 1] % 4 == 0 && reinterpret_cast<uintptr_t>(p.out) % 16 == 0 &&
               vec4_ok(p.src, p.rank, p.src_kind ? 8 : 16);
    for (int s = 0; s < p.nsteps && vec; ++s)
      if (p.steps[s].operand >= 0) vec = vec4_ok(p.ops[p.steps[s].operand], p.rank);
    if (vec) {
      const unsigned grid = grid_for(p.n / 4);
      switch (p.rank) {
        case 1: ew_program_vec4_kernel<1><<<grid, kBlock, 0, stream>>>(p); return;
        case 2: ew_program_vec4_kernel<2><<<grid, kBlock, 0, stream>>>(p); return;
        default: ew_program_vec4_kernel<3><<<grid, kBlock, 0, stream>>>(p); return;
      }
    }
  }
  switch (p.rank) {
    case 1: ew_program_kernel<T, I, 1><<<grid_for(p.n), kBlock, 0, stream>>>(p); break;
    case 2: ew_program_kernel<T, I, 2><<<grid_for(p.n), kBlock, 0, stream>>>(p); break;
    case 3: ew_program_kernel<T, I, 3><<<grid_for(p.n), kBlock, 0, stream>>>(p); break;
    default: ew_program_kernel<T, I, 0><<<grid_for(p.n), kBlock, 0, stream>>>(p); break;
  }
}

// A program description with value ids; pointers are resolved when the launch runs.
struct StepSpec {
  int code;
  ir::ValueId operand;       // kNoValue for unary
  std::vector<int64_t> strides;  // broadcast strides of the operand (or explicit, e.g. bias)
  bool lhs;
  float alpha;
  int operand_code = kIdentity;  // applied to the operand as it is read (EwStep)
  float operand_alpha = 0.0f;
};

template <class T>
void launch_program(const Context& ctx, const Shape& out_shape, ir::ValueId src,
                    const std::vector<int64_t>& src_strides_in, const std::vector<StepSpec>& steps,
                    ir::ValueId out, cudaStream_t stream, int src_kind = 0, size_t src_scratch_offset = 0) {
  std::vector<int64_t> dims = out_shape;
  std::vector<int64_t> src_strides = src_strides_in;
  std::vector<std::vector<int64_t>> op_strides;
  for (const auto& s : steps) op_strides.push_back(s.operand == ir::kNoValue ? std::vector<int64_t>(dims.size(), 0) : s.strides);
  std::vector<int64_t> out_strides = contiguous_strides(dims);
  std::vector<std::vector<int64_t>*> all{&src_strides, &out_strides};
  for (auto& s : op_strides) all.push_back(&s);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (n == 0) return;
  collapse_dims(dims, all);
  EwProgram p;
  p.rank = static_cast<int>(dims.size());
  p.n = n;
  for (int d = 0; d < p.rank; ++d) {
    p.dims[d] = dims[static_cast<size_t>(d)];
    p.src.strides[d] = src_strides[static_cast<size_t>(d)];
  }
  p.src.ptr = src_kind ? static_cast<const char*>(ctx.scratch()) + src_scratch_offset : ctx.ptr(src);
  p.src_kind = src_kind;
  p.out = ctx.ptr(out);
  p.nsteps = static_cast<int>(steps.size());
  for (int s = 0; s < p.nsteps; ++s) {
    const auto& spec = steps[static_cast<size_t>(s)];
    p.steps[s].code = spec.code;
    p.steps[s].lhs = spec.lhs;
    p.steps[s].alpha = spec.alpha;
    p.steps[s].operand_code = spec.operand_code;
    p.steps[s].operand_alpha = spec.operand_alpha;
    p.steps[s].operand = spec.operand == ir::kNoValue ? -1 : s;
    if (spec.operand != ir::kNoValue) {
      p.ops[s].ptr = ctx.ptr(spec.operand);
      for (int d = 0; d < p.rank; ++d) p.ops[s].strides[d] = op_strides[static_cast<size_t>(s)][static_cast<size_t>(d)];
    }
  }
  if (n < (int64_t{1} << 31)) launch_ew<T, uint32_t>(p, stream);
  else launch_ew<T, uint64_t>(p, stream);
}

// Appends launches running `steps` on src -> out, split into chunks of kMaxSteps (later chunks in place).
// src_kind 1/2: the first chunk reads a half/bfloat16 tensor at scratch + src_scratch_offset instead of src.
void append_programs(Context& ctx, NodeProgram& program, const std::string& kernel, ir::ValueId src,
                     std::vector<int64_t> src_strides, std::vector<StepSpec> steps, ir::ValueId out, int src_kind = 0,
                     size_t src_scratch_offset = 0) {
  const ir::Graph& g = ctx.graph();
  const Shape out_shape = g.value(out).shape;
  const DType t = device_dtype(g.value(out).dtype);
  size_t begin = 0;
  do {
    size_t end = std::min(steps.size(), begin + kMaxSteps);
    std::vector<StepSpec> chunk(steps.begin() + static_cast<long>(begin), steps.begin() + static_cast<long>(end));
    const Context* c = &ctx;
    program.launches.push_back({kernel, [=](cudaStream_t stream) {
      if (t == DType::Int64) launch_program<long long>(*c, out_shape, src, src_strides, chunk, out, stream);
      else if (t == DType::Int32) launch_program<int>(*c, out_shape, src, src_strides, chunk, out, stream);
      else launch_program<float>(*c, out_shape, src, src_strides, chunk, out, stream, src_kind, src_scratch_offset);
    }});
    src = out;
    src_kind = 0;
    src_strides = contiguous_strides(out_shape);
    begin = end;
  } while (begin < steps.size());
}

std::vector<StepSpec> epilogue_specs(const ir::Graph& g, const ir::Node& node, size_t skip = 0) {
  std::vector<StepSpec> specs;
  const Shape& out = g.value(node.outputs[0]).shape;
  for (size_t i = skip; i < node.epilogue.size(); ++i) {
    const auto& step = node.epilogue[i];
    StepSpec s{ew_code(step.op), step.operand, {}, step.operand_is_lhs, step.alpha};
    if (step.operand != ir::kNoValue) s.strides = broadcast_strides(g.value(step.operand).shape, out);
    specs.push_back(std::move(s));
  }
  return specs;
}

// ---- Cast, Equal, Where -------------------------------------------------------------------------

template <class From, class To>
__global__ void cast_kernel(const From* src, To* dst, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same_v<To, bool>) dst[i] = src[i] != From(0);
    else dst[i] = static_cast<To>(src[i]);
  }
}

struct Bcast3 {
  int rank = 0;
  int64_t n = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[3][kMaxRank] = {};
  const void* in[3] = {};
  void* out = nullptr;
};

template <class T>
__global__ void equal_where_kernel(Bcast3 p, int is_where) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rem = i, off[3] = {0, 0, 0};
    for (int d = p.rank - 1; d >= 0; --d) {
      int64_t c = rem % p.dims[d];
      rem /= p.dims[d];
      for (int k = 0; k < 3; ++k) off[k] += c * p.strides[k][d];
    }
    if (is_where) {
      bool cond = static_cast<const bool*>(p.in[0])[off[0]];
      static_cast<T*>(p.out)[i] = cond ? static_cast<const T*>(p.in[1])[off[1]] : static_cast<const T*>(p.in[2])[off[2]];
    } else {
      static_cast<bool*>(p.out)[i] = static_cast<const T*>(p.in[0])[off[0]] == static_cast<const T*>(p.in[1])[off[1]];
    }
  }
}

// Pow whose operands are not both float32 (float ** int64, int32 ** int32, ...): computed in
// double and stored in the base's dtype, as the CPU backend does. Type codes: 0 float, 1 int32, 2 int64.
struct MixedPow {
  int rank = 0;
  int64_t n = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[2][kMaxRank] = {};
  const void* in[2] = {};
  int type[2] = {};
  void* out = nullptr;
};

__device__ inline double load_number(const void* p, int64_t i, int type) {
  if (type == 0) return static_cast<const float*>(p)[i];
  if (type == 1) return static_cast<const int32_t*>(p)[i];
  return static_cast<double>(static_cast<const long long*>(p)[i]);
}

__global__ void mixed_pow_kernel(MixedPow p) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rem = i, off[2] = {0, 0};
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rem % p.dims[d];
      rem /= p.dims[d];
      off[0] += c * p.strides[0][d];
      off[1] += c * p.strides[1][d];
    }
    const double r = pow(load_number(p.in[0], off[0], p.type[0]), load_number(p.in[1], off[1], p.type[1]));
    if (p.type[0] == 0) static_cast<float*>(p.out)[i] = static_cast<float>(r);
    else if (p.type[0] == 1) static_cast<int32_t*>(p.out)[i] = static_cast<int32_t>(r);
    else static_cast<long long*>(p.out)[i] = static_cast<long long>(r);
  }
}

int number_type(DType t) { return t == DType::Int32 ? 1 : t == DType::Int64 ? 2 : 0; }

bool is_mixed_pow(const ir::Graph& g, const ir::Node& node) {
  return node.op == ir::Op::Pow && (device_dtype(g.value(node.inputs[0]).dtype) != DType::Float32 ||
                                    device_dtype(g.value(node.inputs[1]).dtype) != DType::Float32);
}

void record_mixed_pow(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::ValueId a = node.inputs[0], b = node.inputs[1], out = node.outputs[0];
  const Shape out_shape = g.value(out).shape;
  MixedPow p;
  p.rank = static_cast<int>(out_shape.size());
  p.n = num_elements(out_shape);
  const ir::ValueId ins[2] = {a, b};
  for (int k = 0; k < 2; ++k) {
    const auto st = broadcast_strides(g.value(ins[k]).shape, out_shape);
    for (int d = 0; d < p.rank; ++d) p.strides[k][d] = st[static_cast<size_t>(d)];
    p.type[k] = number_type(device_dtype(g.value(ins[k]).dtype));
  }
  for (int d = 0; d < p.rank; ++d) p.dims[d] = out_shape[static_cast<size_t>(d)];
  const Context* c = &ctx;
  program.launches.push_back({"pow_mixed_types", [=](cudaStream_t s) {
    MixedPow q = p;
    q.in[0] = c->ptr(a);
    q.in[1] = c->ptr(b);
    q.out = c->ptr(out);
    if (q.n) mixed_pow_kernel<<<grid_for(q.n), kBlock, 0, s>>>(q);
  }});
}

template <class From>
void dispatch_cast_to(const void* src, void* dst, DType to, int64_t n, cudaStream_t s) {
  auto* in = static_cast<const From*>(src);
  switch (to) {
    case DType::Float32: case DType::Float64: cast_kernel<<<grid_for(n), kBlock, 0, s>>>(in, static_cast<float*>(dst), n); break;
    case DType::Int64: cast_kernel<<<grid_for(n), kBlock, 0, s>>>(in, static_cast<long long*>(dst), n); break;
    case DType::Int32: cast_kernel<<<grid_for(n), kBlock, 0, s>>>(in, static_cast<int32_t*>(dst), n); break;
    case DType::Bool: cast_kernel<<<grid_for(n), kBlock, 0, s>>>(in, static_cast<bool*>(dst), n); break;
  }
}

void dispatch_cast(const void* src, DType from, void* dst, DType to, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  switch (from) {
    case DType::Float32: case DType::Float64: dispatch_cast_to<float>(src, dst, to, n, s); break;
    case DType::Int64: dispatch_cast_to<long long>(src, dst, to, n, s); break;
    case DType::Int32: dispatch_cast_to<int32_t>(src, dst, to, n, s); break;
    case DType::Bool: dispatch_cast_to<bool>(src, dst, to, n, s); break;
  }
}

void record_equal_where(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const bool is_where = node.op == ir::Op::Where;
  const ir::ValueId out = node.outputs[0];
  const Shape out_shape = g.value(out).shape;
  const DType t = device_dtype(g.value(node.inputs[is_where ? 1 : 0]).dtype);
  std::vector<ir::ValueId> ins(node.inputs.begin(), node.inputs.end());
  const Context* c = &ctx;
  program.launches.push_back({is_where ? "where" : "equal", [=](cudaStream_t s) {
    Bcast3 p;
    p.rank = static_cast<int>(out_shape.size());
    p.n = 1;
    for (int d = 0; d < p.rank; ++d) { p.dims[d] = out_shape[static_cast<size_t>(d)]; p.n *= p.dims[d]; }
    for (size_t k = 0; k < ins.size() && k < 3; ++k) {
      auto st = broadcast_strides(c->graph().value(ins[k]).shape, out_shape);
      for (int d = 0; d < p.rank; ++d) p.strides[k][d] = st[static_cast<size_t>(d)];
      p.in[k] = c->ptr(ins[k]);
    }
    p.out = c->ptr(out);
    if (p.n == 0) return;
    const int w = is_where ? 1 : 0;
    switch (device_elem_size(t)) {
      case 1: equal_where_kernel<bool><<<grid_for(p.n), kBlock, 0, s>>>(p, w); break;
      case 8: equal_where_kernel<long long><<<grid_for(p.n), kBlock, 0, s>>>(p, w); break;
      default:
        if (t == DType::Int32) equal_where_kernel<int32_t><<<grid_for(p.n), kBlock, 0, s>>>(p, w);
        else equal_where_kernel<float><<<grid_for(p.n), kBlock, 0, s>>>(p, w);
    }
  }});
}

}  // namespace

std::optional<std::string> elementwise_unsupported(const ir::Graph& graph, const ir::Node& node) {
  if (node.op == ir::Op::Cast || node.op == ir::Op::Equal || node.op == ir::Op::Where) return std::nullopt;
  const DType t = device_dtype(graph.value(node.outputs[0]).dtype);
  if (node.op == ir::Op::Clip) {
    if (t != DType::Float32 && t != DType::Int64 && t != DType::Int32) return std::string("Clip on ") + dtype_name(t) + " is not implemented on CUDA";
    for (size_t i = 1; i < node.inputs.size() && i < 3; ++i) {
      if (node.inputs[i] == ir::kNoValue) continue;
      const ir::Value& b = graph.value(node.inputs[i]);
      if (num_elements(b.shape) != 1) return std::string("Clip ") + (i == 1 ? "min" : "max") + " must be a scalar";
      if (device_dtype(b.dtype) != t) return "Clip bounds must have the input's dtype";
    }
  }
  if (is_mixed_pow(graph, node)) {
    for (ir::ValueId v : node.inputs) {
      const DType d = device_dtype(graph.value(v).dtype);
      if (d != DType::Float32 && d != DType::Int32 && d != DType::Int64) return std::string("Pow on ") + dtype_name(d) + " is not implemented on CUDA";
    }
    if (!node.epilogue.empty() && t != DType::Float32) return "a fused epilogue after an integer Pow is not implemented on CUDA";
    return std::nullopt;
  }
  if (t == DType::Float32) return std::nullopt;
  if (t == DType::Int64 || t == DType::Int32) {
    auto int_ok = [](ir::Op op) {
      return op == ir::Op::Add || op == ir::Op::Sub || op == ir::Op::Mul || op == ir::Op::Div || op == ir::Op::Neg ||
             op == ir::Op::Identity || op == ir::Op::Relu || op == ir::Op::Abs || op == ir::Op::Clip;
    };
    for (ir::ValueId v : node.inputs)
      if (v != ir::kNoValue && device_dtype(graph.value(v).dtype) != t)
        return std::string(ir::op_name(node.op)) + " on mixed integer dtypes is not implemented on CUDA";
    if (!int_ok(node.op)) return std::string(ir::op_name(node.op)) + " on " + dtype_name(t) + " is not implemented on CUDA";
    for (const auto& s : node.epilogue)
      if (!int_ok(s.op)) return std::string(ir::op_name(s.op)) + " on " + dtype_name(t) + " is not implemented on CUDA";
    return std::nullopt;
  }
  if (node.op == ir::Op::Identity) return std::nullopt;  // bool/int32 Identity is a copy
  return std::string(ir::op_name(node.op)) + " on " + dtype_name(t) + " is not implemented on CUDA";
}

namespace {

// The unary float node (no epilogue, input and output of one shape) that makes `v` for the
// consumer's epilogue alone: nothing else reads `v` and it is no graph output. In graph replay
// the consumer can apply it to that node's input as it reads (PrologueFusion): the WN layers'
// Tanh beside Sigmoid * Mul is one kernel instead of two. -1 when there is none.
int fused_operand_producer(const Context& ctx, int consumer, ir::ValueId v) {
  const ir::Graph& g = ctx.graph();
  const int producer = sole_reader_producer(g, ctx.channel_facts(), v);
  if (producer < 0 || producer >= consumer) return -1;
  const ir::Node& p = g.nodes[static_cast<size_t>(producer)];
  const int code = ew_code(p.op);
  if (code < 0 || ir::is_binary_elementwise(p.op) || code == kIdentity || p.inputs.size() != 1 || p.outputs.size() != 1 ||
      !p.epilogue.empty())
    return -1;
  const ir::Value& in = g.value(p.inputs[0]);
  const ir::Value& out = g.value(v);
  if (device_dtype(in.dtype) != DType::Float32 || device_dtype(out.dtype) != DType::Float32 || in.shape != out.shape) return -1;
  return producer;
}

}  // namespace

void record_elementwise(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const ir::ValueId out = node.outputs[0];
  const Shape& out_shape = g.value(out).shape;
  if (node.op == ir::Op::Cast) {
    const ir::ValueId in = node.inputs[0];
    const DType from = device_dtype(g.value(in).dtype), to = device_dtype(g.value(out).dtype);
    const int64_t n = num_elements(out_shape);
    const Context* c = &ctx;
    program.launches.push_back({"cast", [=](cudaStream_t s) { dispatch_cast(c->ptr(in), from, c->ptr(out), to, n, s); }});
    record_epilogue(ctx, node_index, program);
    return;
  }
  if (is_mixed_pow(g, node)) {
    record_mixed_pow(ctx, node, program);
    record_epilogue(ctx, node_index, program);
    return;
  }
  if (node.op == ir::Op::Equal || node.op == ir::Op::Where) {
    record_equal_where(ctx, node, program);
    record_epilogue(ctx, node_index, program);
    return;
  }
  const DType t = device_dtype(g.value(out).dtype);
  if (node.op == ir::Op::Clip) {  // x, then max with min, then min with max: one program
    std::vector<StepSpec> steps;
    for (size_t i = 1; i < node.inputs.size() && i < 3; ++i)
      if (node.inputs[i] != ir::kNoValue)
        steps.push_back({i == 1 ? kClipLow : kClipHigh, node.inputs[i], broadcast_strides(g.value(node.inputs[i]).shape, out_shape), false, 0.0f});
    for (auto& s : epilogue_specs(g, node)) steps.push_back(std::move(s));
    append_programs(ctx, program, std::string("elementwise_Clip") + (node.epilogue.empty() ? "" : "+epilogue"), node.inputs[0],
                    broadcast_strides(g.value(node.inputs[0]).shape, out_shape), steps, out);
    return;
  }
  if (t != DType::Float32 && t != DType::Int64 && t != DType::Int32) {  // bool Identity
    const ir::ValueId in = node.inputs[0];
    const size_t bytes = static_cast<size_t>(num_elements(out_shape)) * device_elem_size(t);
    const Context* c = &ctx;
    program.launches.push_back({"identity_copy", [=](cudaStream_t s) {
      if (c->ptr(in) != c->ptr(out) && bytes) check_cuda(cudaMemcpyAsync(c->ptr(out), c->ptr(in), bytes, cudaMemcpyDeviceToDevice, s), "identity copy");
    }});
    return;
  }
  std::vector<StepSpec> steps;
  const ir::ValueId src = node.inputs[0];
  if (ir::is_binary_elementwise(node.op)) {
    const ir::ValueId rhs = node.inputs[1];
    steps.push_back({ew_code(node.op), rhs, broadcast_strides(g.value(rhs).shape, out_shape), false, 0.0f});
  } else {
    steps.push_back({ew_code(node.op), ir::kNoValue, {}, false, node.attrs.get_float("alpha", 0.01f)});
  }
  for (auto& s : epilogue_specs(g, node)) steps.push_back(std::move(s));
  std::string kernel = std::string("elementwise_") + ir::op_name(node.op);
  if (!node.epilogue.empty()) kernel += "+epilogue" + std::to_string(node.epilogue.size());
  const std::vector<int64_t> src_strides = broadcast_strides(g.value(src).shape, out_shape);
  append_programs(ctx, program, kernel, src, src_strides, steps, out);
  // The same program reading one operand's unary producer's input instead (graph replay only; the
  // executor keeps it where that input survives until here). On by default: same float ops, same
  // bits (LOCKSTEP_CUDA_FUSE_OPERAND=0 turns it off).
  if (t != DType::Float32 || steps.size() > static_cast<size_t>(kMaxSteps) || env_is("LOCKSTEP_CUDA_FUSE_OPERAND", "0")) return;
  for (StepSpec& step : steps) {
    if (step.operand == ir::kNoValue) continue;
    const int producer = fused_operand_producer(ctx, node_index, step.operand);
    if (producer < 0) continue;
    const ir::Node& p = g.nodes[static_cast<size_t>(producer)];
    step.operand = p.inputs[0];
    step.operand_code = ew_code(p.op);
    step.operand_alpha = p.attrs.get_float("alpha", 0.01f);
    const size_t plain = program.launches.size() - 1;
    append_programs(ctx, program, kernel + "+" + ir::op_name(p.op) + "_operand", src, src_strides, steps, out);
    program.launches.back().when = Launch::When::kGraphOnly;
    ctx.prologues.push_back({producer, node_index, p.inputs[0], plain, plain + 1});
    return;  // one fused producer per node: the executor keeps one launch of each kind
  }
}

void record_epilogue(Context& ctx, int node_index, NodeProgram& program, ir::ValueId bias, size_t skip_steps) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  if (node.epilogue.size() <= skip_steps && bias == ir::kNoValue) return;
  const ir::ValueId out = node.outputs[0];
  const Shape& out_shape = g.value(out).shape;
  std::vector<StepSpec> steps;
  if (bias != ir::kNoValue) {
    std::vector<int64_t> st(out_shape.size(), 0);
    if (st.size() > 1) st[1] = 1;  // one value per output channel
    steps.push_back({kAdd, bias, st, false, 0.0f});
  }
  for (auto& s : epilogue_specs(g, node, skip_steps)) steps.push_back(std::move(s));
  std::string kernel = std::string("epilogue_") + ir::op_name(node.op);
  if (bias != ir::kNoValue) kernel += "+bias";
  append_programs(ctx, program, kernel, out, contiguous_strides(out_shape), std::move(steps), out);
}

}  // namespace lockstep::cuda

namespace lockstep::cuda {

void record_epilogue_from_reduced(Context& ctx, int node_index, NodeProgram& program, ir::ValueId bias, int src_kind,
                                  size_t src_scratch_offset) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const ir::ValueId out = node.outputs[0];
  const Shape& out_shape = g.value(out).shape;
  std::vector<StepSpec> steps;
  if (bias != ir::kNoValue) {
    std::vector<int64_t> st(out_shape.size(), 0);
    if (st.size() > 1) st[1] = 1;
    steps.push_back({kAdd, bias, st, false, 0.0f});
  }
  for (auto& s : epilogue_specs(g, node)) steps.push_back(std::move(s));
  std::string kernel = std::string("epilogue_") + (src_kind == 1 ? "from_fp16_" : "from_bf16_") + ir::op_name(node.op);
  if (bias != ir::kNoValue) kernel += "+bias";
  append_programs(ctx, program, kernel, out, contiguous_strides(out_shape), std::move(steps), out, src_kind, src_scratch_offset);
}

}  // namespace lockstep::cuda
