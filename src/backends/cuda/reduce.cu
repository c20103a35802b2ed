// Reduction family (the CPU's reduce.cpp): ReduceMean/Sum/Max/Min over constant axes and CumSum,
// on float32 (accumulated in double), int32 and int64 (accumulated in int64). Deterministic, no
// atomics: a short reduction is one thread's loop in index order (the reference's order: the
// same bits as the cpu's up to its 8192-element blocks); a long one (over kLongReduction
// elements) is one block of kReduceThreads per output, each thread summing a fixed stride of
// the range and the block combining the partials in a fixed tree. The choice depends on the
// shape alone. A short reduction over contiguous rows (a layer norm's mean over its channels) loads
// a tile of rows into shared memory with every thread first, then sums each row in one thread in
// index order: the serial kernel's bits, without its chain of uncoalesced loads (a Piper voice's
// cached call has 84 such means; 0.14-0.19 ms less kernel time a call on an H100).
// CumSum: one thread per lane, in order, in double, as the cpu (so the same bits).
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/cuda/families.h"
#include "ir/infer_rules.h"

namespace lockstep::cuda {
namespace {

constexpr int64_t kLongReduction = 4096;
constexpr int kReduceThreads = 256;
constexpr int kRowThreads = 128, kRowsPerBlock = 32;
constexpr int64_t kRowTileBytes = 32 * 1024;

enum ReduceCode : int { kSum, kMean, kMax, kMin };

struct ReduceParams {
  int code = kSum;
  int kept_rank = 0, red_rank = 0;
  int64_t outs = 0, count = 0;
  int64_t kept_dims[kMaxRank] = {}, kept_strides[kMaxRank] = {};
  int64_t red_dims[kMaxRank] = {}, red_strides[kMaxRank] = {};
  const void* in = nullptr;
  void* out = nullptr;
};

template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, long long>;

template <class T>
__device__ inline Acc<T> reduce_init(int code) {
  using A = Acc<T>;
  if constexpr (std::is_floating_point_v<T>) {
    if (code == kMax) return -INFINITY;
    if (code == kMin) return INFINITY;
  } else {
    if (code == kMax) return static_cast<A>(std::numeric_limits<T>::lowest());
    if (code == kMin) return static_cast<A>(std::numeric_limits<T>::max());
  }
  return A(0);
}

// NaN wins: once `a` is NaN no comparison replaces it (the cpu's pick()).
template <class A>
__device__ inline A reduce_step(int code, A a, A v) {
  if (code == kMax) return (v > a || v != v) ? v : a;
  if (code == kMin) return (v < a || v != v) ? v : a;
  return a + v;
}

__device__ inline int64_t offset_of(int64_t i, int rank, const int64_t* dims, const int64_t* strides) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    off += (i % dims[d]) * strides[d];
    i /= dims[d];
  }
  return off;
}

template <class T>
__device__ inline T reduce_finish(const ReduceParams& p, Acc<T> a) {
  if (p.code == kMean) {
    if (p.count > 0) a = a / static_cast<Acc<T>>(p.count);
    else if constexpr (std::is_floating_point_v<T>) a = NAN;
  }
  return static_cast<T>(a);
}

template <class T>
__global__ void reduce_serial_kernel(ReduceParams p) {
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < p.outs;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const T* x = static_cast<const T*>(p.in) + offset_of(o, p.kept_rank, p.kept_dims, p.kept_strides);
    Acc<T> a = reduce_init<T>(p.code);
    // Index order as offset_of gives it (last dim fastest), stepped like an odometer: no 64-bit
    // division per element (those made a layer norm's 192-channel mean ~56 us on the H200).
    if (p.red_rank == 1) {
      const int64_t stride = p.red_strides[0];
      for (int64_t k = 0; k < p.count; ++k) a = reduce_step(p.code, a, static_cast<Acc<T>>(x[k * stride]));
    } else {
      int64_t idx[kMaxRank] = {}, off = 0;
      for (int64_t k = 0; k < p.count; ++k) {
        a = reduce_step(p.code, a, static_cast<Acc<T>>(x[off]));
        for (int d = p.red_rank - 1; d >= 0; --d) {
          off += p.red_strides[d];
          if (++idx[d] < p.red_dims[d]) break;
          off -= p.red_strides[d] * p.red_dims[d];
          idx[d] = 0;
        }
      }
    }
    static_cast<T*>(p.out)[o] = reduce_finish<T>(p, a);
  }
}

template <class T>
__global__ void __launch_bounds__(kReduceThreads) reduce_block_kernel(ReduceParams p) {
  __shared__ Acc<T> part[kReduceThreads];
  for (int64_t o = blockIdx.x; o < p.outs; o += gridDim.x) {
    const T* x = static_cast<const T*>(p.in) + offset_of(o, p.kept_rank, p.kept_dims, p.kept_strides);
    Acc<T> a = reduce_init<T>(p.code);
    for (int64_t k = threadIdx.x; k < p.count; k += kReduceThreads)
      a = reduce_step(p.code, a, static_cast<Acc<T>>(x[offset_of(k, p.red_rank, p.red_dims, p.red_strides)]));
    part[threadIdx.x] = a;
    __syncthreads();
    for (int width = kReduceThreads / 2; width > 0; width /= 2) {
      if (static_cast<int>(threadIdx.x) < width) part[threadIdx.x] = reduce_step(p.code, part[threadIdx.x], part[threadIdx.x + width]);
      __syncthreads();
    }
    if (threadIdx.x == 0) static_cast<T*>(p.out)[o] = reduce_finish<T>(p, part[0]);
    __syncthreads();
  }
}

// Rows of p.count contiguous elements, rows_per_block of them per tile (padded by one element
// so that the threads summing rows side by side read different shared-memory banks).
template <class T>
__global__ void __launch_bounds__(kRowThreads) reduce_rows_kernel(ReduceParams p, int rows_per_block) {
  extern __shared__ __align__(16) unsigned char tile_bytes[];
  T* tile = reinterpret_cast<T*>(tile_bytes);
  const int n = static_cast<int>(p.count), pitch = n + 1;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * rows_per_block; first < p.outs;
       first += static_cast<int64_t>(gridDim.x) * rows_per_block) {
    const int rows = static_cast<int>(p.outs - first < rows_per_block ? p.outs - first : rows_per_block);
    const T* x = static_cast<const T*>(p.in) + first * n;
    for (int i = threadIdx.x; i < rows * n; i += blockDim.x) {
      const int r = i / n;
      tile[r * pitch + (i - r * n)] = x[i];
    }
    __syncthreads();
    if (static_cast<int>(threadIdx.x) < rows) {
      const T* row = tile + threadIdx.x * pitch;
      Acc<T> a = reduce_init<T>(p.code);
      for (int k = 0; k < n; ++k) a = reduce_step(p.code, a, static_cast<Acc<T>>(row[k]));
      static_cast<T*>(p.out)[first + threadIdx.x] = reduce_finish<T>(p, a);
    }
    __syncthreads();
  }
}

struct CumSumParams {
  int64_t outer = 1, dim = 1, inner = 1;
  int exclusive = 0, reverse = 0;
  const void* in = nullptr;
  void* out = nullptr;
};

template <class T>
__global__ void cumsum_kernel(CumSumParams p) {
  const int64_t lanes = p.outer * p.inner;
  for (int64_t lane = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; lane < lanes;
       lane += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = lane / p.inner, j = lane % p.inner;
    const T* in = static_cast<const T*>(p.in);
    T* out = static_cast<T*>(p.out);
    Acc<T> sum = 0;
    for (int64_t step = 0; step < p.dim; ++step) {
      const int64_t k = p.reverse ? p.dim - 1 - step : step;
      const int64_t at = (o * p.dim + k) * p.inner + j;
      const Acc<T> v = in[at];  // read before the write: out may be in's buffer
      if (p.exclusive) {
        out[at] = static_cast<T>(sum);
        sum += v;
      } else {
        sum += v;
        out[at] = static_cast<T>(sum);
      }
    }
  }
}

template <class F>
void by_type(DType t, F f) {
  switch (t) {
    case DType::Int64: f(static_cast<long long*>(nullptr)); break;
    case DType::Int32: f(static_cast<int32_t*>(nullptr)); break;
    default: f(static_cast<float*>(nullptr)); break;
  }
}

void record_reduce_op(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& s = g.value(node.inputs[0]).shape;
  const bool has_axes = node.inputs.size() > 1 && node.inputs[1] != ir::kNoValue;
  std::vector<int64_t> axes = constant_ints(g, node, 1);
  const std::vector<char> mask = ir::reduce_mask(node, static_cast<int64_t>(s.size()), has_axes ? &axes : nullptr);
  const std::vector<int64_t> strides = contiguous_strides(s);
  std::vector<int64_t> kept, kept_st, red, red_st;
  for (size_t d = 0; d < s.size(); ++d) {
    (mask[d] ? red : kept).push_back(s[d]);
    (mask[d] ? red_st : kept_st).push_back(strides[d]);
  }
  ReduceParams p;
  p.code = node.op == ir::Op::ReduceSum ? kSum : node.op == ir::Op::ReduceMean ? kMean : node.op == ir::Op::ReduceMax ? kMax : kMin;
  p.outs = num_elements(kept);
  p.count = num_elements(red);
  if (p.outs > 0) collapse_dims(kept, {&kept_st});
  if (p.count > 0) collapse_dims(red, {&red_st});
  p.kept_rank = static_cast<int>(kept.size());
  p.red_rank = static_cast<int>(red.size());
  for (int d = 0; d < p.kept_rank; ++d) p.kept_dims[d] = kept[static_cast<size_t>(d)], p.kept_strides[d] = kept_st[static_cast<size_t>(d)];
  for (int d = 0; d < p.red_rank; ++d) p.red_dims[d] = red[static_cast<size_t>(d)], p.red_strides[d] = red_st[static_cast<size_t>(d)];
  const DType t = device_dtype(g.value(node.inputs[0]).dtype);
  const ir::ValueId in = node.inputs[0], out = node.outputs[0];
  const bool long_range = p.count > kLongReduction;
  // Contiguous rows, one after another (LOCKSTEP_CUDA_REDUCE_ROWS=0: the serial kernel, for A/B).
  const int64_t elem = t == DType::Float32 ? 4 : 8;
  const int rows_per_block = static_cast<int>(std::min<int64_t>(kRowsPerBlock, kRowTileBytes / ((p.count + 1) * elem)));
  const bool rows = !long_range && p.count > 0 && p.red_rank == 1 && p.red_strides[0] == 1 &&
                    (p.kept_rank == 0 || (p.kept_rank == 1 && p.kept_strides[0] == p.count)) && rows_per_block >= 1 &&
                    !env_is("LOCKSTEP_CUDA_REDUCE_ROWS", "0");
  const Context* c = &ctx;
  const char* family = long_range ? "reduce_block_" : rows ? "reduce_rows_" : "reduce_serial_";
  program.launches.push_back({std::string(family) + ir::op_name(node.op), [=](cudaStream_t st) {
    if (p.outs == 0) return;
    ReduceParams q = p;
    q.in = c->ptr(in);
    q.out = c->ptr(out);
    by_type(t, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      if (long_range) {
        reduce_block_kernel<T><<<static_cast<unsigned>(std::min<int64_t>(q.outs, 65535)), kReduceThreads, 0, st>>>(q);
      } else if (rows) {
        const int64_t blocks = std::min<int64_t>((q.outs + rows_per_block - 1) / rows_per_block, 65535);
        const size_t smem = static_cast<size_t>(rows_per_block) * static_cast<size_t>(q.count + 1) * sizeof(T);
        reduce_rows_kernel<T><<<static_cast<unsigned>(blocks), kRowThreads, smem, st>>>(q, rows_per_block);
      } else {
        reduce_serial_kernel<T><<<grid_for(q.outs), kBlock, 0, st>>>(q);
      }
    });
  }});
}

void record_cumsum(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& s = g.value(node.inputs[0]).shape;
  const int64_t axis = ir::cumsum_axis(node, static_cast<int64_t>(s.size()), constant_ints(g, node, 1));
  CumSumParams p;
  for (int64_t d = 0; d < axis; ++d) p.outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) p.inner *= s[d];
  p.dim = s[static_cast<size_t>(axis)];
  p.exclusive = node.attrs.get_int("exclusive", 0) != 0;
  p.reverse = node.attrs.get_int("reverse", 0) != 0;
  const DType t = device_dtype(g.value(node.inputs[0]).dtype);
  const ir::ValueId in = node.inputs[0], out = node.outputs[0];
  const Context* c = &ctx;
  program.launches.push_back({"cumsum", [=](cudaStream_t st) {
    const int64_t lanes = p.outer * p.inner;
    if (lanes == 0 || p.dim == 0) return;
    CumSumParams q = p;
    q.in = c->ptr(in);
    q.out = c->ptr(out);
    by_type(t, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      cumsum_kernel<T><<<grid_for(lanes), kBlock, 0, st>>>(q);
    });
  }});
}

}  // namespace

std::optional<std::string> reduce_unsupported(const ir::Graph& graph, const ir::Node& node) {
  const DType t = device_dtype(graph.value(node.inputs.at(0)).dtype);
  if (t != DType::Float32 && t != DType::Int64 && t != DType::Int32)
    return std::string(ir::op_name(node.op)) + " on " + dtype_name(t) + " is not implemented on CUDA";
  if (device_dtype(graph.value(node.outputs.at(0)).dtype) != t) return std::string(ir::op_name(node.op)) + " must keep its input's dtype";
  if (node.inputs.size() > 1 && node.inputs[1] != ir::kNoValue && !graph.is_constant(node.inputs[1]))
    return std::string(ir::op_name(node.op)) + " axes computed at run time are not supported on CUDA";
  if (!node.epilogue.empty() && t != DType::Float32) return "a fused epilogue after an integer reduction is not implemented on CUDA";
  return std::nullopt;
}

void record_reduce(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Node& node = ctx.graph().nodes[static_cast<size_t>(node_index)];
  if (node.op == ir::Op::CumSum) record_cumsum(ctx, node, program);
  else record_reduce_op(ctx, node, program);
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::cuda
