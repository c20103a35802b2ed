// Indexing family (the CPU's indexing.cpp): GatherND, ScatterND, GatherElements, on elements of
// 1, 4 or 8 bytes with int32 or int64 indices. NonZero has a data-dependent shape: it runs in the
// run-time shape stage. Every index is checked on the device: a bad one is skipped and recorded
// (IndexFault, device.h), and the run then fails with the cpu's error. ScatterND is deterministic:
// with repeated indices the later tuple wins and reductions combine in index order, as the cpu.
// Reductions walk the tuples in order (one thread per slice element); without a reduction each
// tuple claims its slot by an integer atomicMax, which is order-independent, then the winners write.
#include <cstdint>
#include <cstring>

#include "backends/cuda/families.h"
#include "ir/infer_rules.h"

namespace lockstep::cuda {
namespace {

constexpr unsigned long long kNoFault = ~0ull;

template <class I>
__device__ inline bool fetch_index(const I* idx, int64_t pos, int64_t dim, IndexFault* fault, int64_t& k) {
  k = static_cast<int64_t>(idx[pos]);
  if (k < 0) k += dim;
  if (k >= 0 && k < dim) return true;
  atomicMin(&fault->position, static_cast<unsigned long long>(pos));
  return false;
}

// The index at the first bad position and the dim it was checked against.
struct FaultFill {
  IndexFault* fault = nullptr;
  const void* idx = nullptr;
  int idx64 = 1;
  int m = 1;
  int64_t dims[kMaxRank] = {};
};

__global__ void fault_fill_kernel(FaultFill p) {
  const unsigned long long pos = p.fault->position;
  if (pos == kNoFault) return;
  p.fault->index = p.idx64 ? static_cast<const long long*>(p.idx)[pos] : static_cast<const int32_t*>(p.idx)[pos];
  p.fault->dim = p.dims[pos % static_cast<unsigned long long>(p.m)];
}

struct NdParams {
  int m = 1;                           // index tuple length
  int64_t tuples = 0, slice = 1;       // tuples, elements per gathered / scattered slice
  int64_t per_batch_tuples = 0, per_batch_data = 0;  // GatherND batch_dims
  int64_t dims[kMaxRank] = {}, strides[kMaxRank] = {};  // the indexed dims and their strides
  int how = 0;                         // ScatterND: 0 none, 1 add, 2 mul, 3 max, 4 min
  const void* data = nullptr;
  const void* idx = nullptr;
  const void* updates = nullptr;
  void* out = nullptr;
  IndexFault* fault = nullptr;
};

template <class T, class I>
__device__ inline bool tuple_offset(const NdParams& p, int64_t t, int64_t& off) {
  off = 0;
  bool ok = true;
  for (int j = 0; j < p.m; ++j) {
    int64_t k;
    if (fetch_index(static_cast<const I*>(p.idx), t * p.m + j, p.dims[j], p.fault, k)) off += k * p.strides[j];
    else ok = false;
  }
  return ok;
}

template <class T, class I>
__global__ void gather_nd_kernel(NdParams p) {
  const int64_t n = p.tuples * p.slice;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / p.slice, j = i % p.slice;
    const int64_t bi = p.per_batch_tuples ? t / p.per_batch_tuples : 0;
    int64_t off;
    T v = T(0);
    if (tuple_offset<T, I>(p, t, off)) v = static_cast<const T*>(p.data)[bi * p.per_batch_data + off + j];
    static_cast<T*>(p.out)[i] = v;
  }
}

template <class T>
__device__ inline T combine(int how, T a, T b) {
  switch (how) {
    case 1: return static_cast<T>(a + b);
    case 2: return static_cast<T>(a * b);
    case 3: return a < b ? b : a;  // std::max
    case 4: return b < a ? b : a;  // std::min
    default: return b;
  }
}

// out already holds data. Thread j owns element j of every slice: the tuples in index order.
template <class T, class I>
__global__ void scatter_nd_kernel(NdParams p) {
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < p.slice; j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    T* out = static_cast<T*>(p.out);
    const T* upd = static_cast<const T*>(p.updates);
    for (int64_t t = 0; t < p.tuples; ++t) {
      int64_t off;
      if (!tuple_offset<T, I>(p, t, off)) continue;
      out[off + j] = combine<T>(p.how, out[off + j], upd[t * p.slice + j]);
    }
  }
}

// ScatterND without a reduction, in parallel: each valid tuple t claims its slot (its offset over
// the slice) with atomicMax(t + 1), so the slot ends holding the last such tuple in index order
// whatever the threads' order; the serial walk gave the voices' flows 0.3 ms a node at 600 frames.
template <class I>
__global__ void scatter_claim_kernel(NdParams p, unsigned* winner) {
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < p.tuples; t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off;
    if (tuple_offset<char, I>(p, t, off)) atomicMax(&winner[off / p.slice], static_cast<unsigned>(t + 1));
  }
}

template <class T, class I>
__global__ void scatter_write_kernel(NdParams p, const unsigned* winner) {
  const int64_t n = p.tuples * p.slice;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / p.slice, j = i % p.slice;
    int64_t off;
    if (tuple_offset<T, I>(p, t, off) && winner[off / p.slice] == static_cast<unsigned>(t + 1))
      static_cast<T*>(p.out)[off + j] = static_cast<const T*>(p.updates)[i];
  }
}
// Slots (data elements over the slice) the claim array may hold: 4 bytes each, in the scratch.
constexpr int64_t kMaxClaimSlots = int64_t{1} << 24;

struct ElementsParams {
  int rank = 0;
  int64_t n = 0, dim = 1, axis_stride = 1;
  int64_t dims[kMaxRank] = {}, walk[kMaxRank] = {};  // indices' dims; data strides, 0 on the axis
  const void* data = nullptr;
  const void* idx = nullptr;
  void* out = nullptr;
  IndexFault* fault = nullptr;
};

template <class T, class I>
__global__ void gather_elements_kernel(ElementsParams p) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rem = i, base = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      base += (rem % p.dims[d]) * p.walk[d];
      rem /= p.dims[d];
    }
    int64_t k;
    T v = T(0);
    if (fetch_index(static_cast<const I*>(p.idx), i, p.dim, p.fault, k)) v = static_cast<const T*>(p.data)[base + k * p.axis_stride];
    static_cast<T*>(p.out)[i] = v;
  }
}

// Calls f(T*, I*) with the element type of `es` bytes and the index type.
template <class F>
void by_types(size_t es, bool idx64, F f) {
  auto with_t = [&](auto* t) {
    if (idx64) f(t, static_cast<long long*>(nullptr));
    else f(t, static_cast<int32_t*>(nullptr));
  };
  if (es == 1) with_t(static_cast<uint8_t*>(nullptr));
  else if (es == 8) with_t(static_cast<uint64_t*>(nullptr));
  else with_t(static_cast<uint32_t*>(nullptr));
}

// ScatterND's arithmetic reductions need the element's real type.
template <class F>
void by_value_types(DType t, bool idx64, F f) {
  auto with_t = [&](auto* v) {
    if (idx64) f(v, static_cast<long long*>(nullptr));
    else f(v, static_cast<int32_t*>(nullptr));
  };
  switch (t) {
    case DType::Int64: with_t(static_cast<long long*>(nullptr)); break;
    case DType::Int32: with_t(static_cast<int32_t*>(nullptr)); break;
    case DType::Bool: with_t(static_cast<uint8_t*>(nullptr)); break;
    default: with_t(static_cast<float*>(nullptr)); break;
  }
}

void push_fault_fill(Context& ctx, NodeProgram& program, int slot, ir::ValueId idx, bool idx64, int m, const int64_t* dims) {
  FaultFill f;
  f.idx64 = idx64;
  f.m = m;
  for (int j = 0; j < m; ++j) f.dims[j] = dims[j];
  const Context* c = &ctx;
  program.launches.push_back({"index_fault_record", [=](cudaStream_t s) {
    FaultFill q = f;
    q.fault = c->index_fault(slot);
    q.idx = c->ptr(idx);
    fault_fill_kernel<<<1, 1, 0, s>>>(q);
  }});
}

void record_gather_nd(Context& ctx, int node_index, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Value& data = g.value(node.inputs[0]);
  const ir::Value& ind = g.value(node.inputs[1]);
  ir::gather_nd_shape(node, data.shape, ind.shape);
  const auto b = static_cast<size_t>(node.attrs.get_int("batch_dims", 0));
  NdParams p;
  p.m = static_cast<int>(ind.shape.back());
  int64_t batches = 1;
  for (size_t d = 0; d < b; ++d) batches *= data.shape[d];
  for (size_t d = b + static_cast<size_t>(p.m); d < data.shape.size(); ++d) p.slice *= data.shape[d];
  const Shape inner(data.shape.begin() + static_cast<int64_t>(b), data.shape.end());
  const std::vector<int64_t> inner_strides = contiguous_strides(inner);
  for (int j = 0; j < p.m; ++j) p.dims[j] = inner[static_cast<size_t>(j)], p.strides[j] = inner_strides[static_cast<size_t>(j)];
  p.per_batch_data = num_elements(inner);
  p.tuples = p.m ? num_elements(ind.shape) / p.m : 0;
  p.per_batch_tuples = batches ? p.tuples / batches : 0;
  const size_t es = device_elem_size(data.dtype);
  const bool idx64 = ind.dtype == DType::Int64;
  const int slot = ctx.add_index_fault(node_index);
  const ir::ValueId d = node.inputs[0], ix = node.inputs[1], o = node.outputs[0];
  const Context* c = &ctx;
  program.launches.push_back({"gather_nd", [=](cudaStream_t s) {
    const int64_t n = p.tuples * p.slice;
    if (n == 0) return;
    NdParams q = p;
    q.data = c->ptr(d);
    q.idx = c->ptr(ix);
    q.out = c->ptr(o);
    q.fault = c->index_fault(slot);
    by_types(es, idx64, [&](auto* t, auto* i) {
      gather_nd_kernel<std::remove_pointer_t<decltype(t)>, std::remove_pointer_t<decltype(i)>><<<grid_for(n), kBlock, 0, s>>>(q);
    });
  }});
  push_fault_fill(ctx, program, slot, ix, idx64, p.m, p.dims);
}

void record_scatter_nd(Context& ctx, int node_index, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Value& data = g.value(node.inputs[0]);
  const ir::Value& ind = g.value(node.inputs[1]);
  ir::check_scatter_nd(node, data.shape, ind.shape, g.value(node.inputs[2]).shape);
  const std::string how = ir::scatter_reduction(node);
  NdParams p;
  p.how = how == "none" ? 0 : how == "add" ? 1 : how == "mul" ? 2 : how == "max" ? 3 : 4;
  p.m = static_cast<int>(ind.shape.back());
  for (size_t d = static_cast<size_t>(p.m); d < data.shape.size(); ++d) p.slice *= data.shape[d];
  const std::vector<int64_t> strides = contiguous_strides(data.shape);
  for (int j = 0; j < p.m; ++j) p.dims[j] = data.shape[static_cast<size_t>(j)], p.strides[j] = strides[static_cast<size_t>(j)];
  p.tuples = p.m ? num_elements(ind.shape) / p.m : 0;
  const DType t = device_dtype(data.dtype);
  const size_t bytes = value_device_bytes(data);
  const bool idx64 = ind.dtype == DType::Int64;
  const int slot = ctx.add_index_fault(node_index);
  const ir::ValueId d = node.inputs[0], ix = node.inputs[1], u = node.inputs[2], o = node.outputs[0];
  const Context* c = &ctx;
  const int64_t slots = p.slice ? num_elements(data.shape) / p.slice : 0;
  if (p.how == 0 && slots > 0 && slots <= kMaxClaimSlots && p.tuples < (int64_t{1} << 31)) {
    ctx.need_scratch(static_cast<size_t>(slots) * sizeof(unsigned));
    program.launches.push_back({"scatter_nd_none_claim", [=](cudaStream_t s) {
      if (bytes && c->ptr(d) != c->ptr(o))
        check_cuda(cudaMemcpyAsync(c->ptr(o), c->ptr(d), bytes, cudaMemcpyDeviceToDevice, s), "ScatterND copy");
      if (p.tuples == 0) return;
      NdParams q = p;
      q.idx = c->ptr(ix);
      q.updates = c->ptr(u);
      q.out = c->ptr(o);
      q.fault = c->index_fault(slot);
      auto* winner = static_cast<unsigned*>(c->scratch());
      check_cuda(cudaMemsetAsync(winner, 0, static_cast<size_t>(slots) * sizeof(unsigned), s), "ScatterND claims");
      by_types(device_elem_size(data.dtype), idx64, [&](auto* v, auto* i) {
        using T = std::remove_pointer_t<decltype(v)>;
        using I = std::remove_pointer_t<decltype(i)>;
        scatter_claim_kernel<I><<<grid_for(q.tuples), kBlock, 0, s>>>(q, winner);
        scatter_write_kernel<T, I><<<grid_for(q.tuples * q.slice), kBlock, 0, s>>>(q, winner);
      });
    }});
    push_fault_fill(ctx, program, slot, ix, idx64, p.m, p.dims);
    return;
  }
  program.launches.push_back({"scatter_nd_" + how, [=](cudaStream_t s) {
    if (bytes && c->ptr(d) != c->ptr(o))
      check_cuda(cudaMemcpyAsync(c->ptr(o), c->ptr(d), bytes, cudaMemcpyDeviceToDevice, s), "ScatterND copy");
    if (p.tuples == 0 || p.slice == 0) return;
    NdParams q = p;
    q.idx = c->ptr(ix);
    q.updates = c->ptr(u);
    q.out = c->ptr(o);
    q.fault = c->index_fault(slot);
    by_value_types(t, idx64, [&](auto* v, auto* i) {
      scatter_nd_kernel<std::remove_pointer_t<decltype(v)>, std::remove_pointer_t<decltype(i)>><<<grid_for(q.slice), kBlock, 0, s>>>(q);
    });
  }});
  push_fault_fill(ctx, program, slot, ix, idx64, p.m, p.dims);
}

void record_gather_elements(Context& ctx, int node_index, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Value& data = g.value(node.inputs[0]);
  const ir::Value& ind = g.value(node.inputs[1]);
  const auto axis = static_cast<size_t>(ir::gather_elements_axis(node, data.shape, ind.shape));
  const std::vector<int64_t> strides = contiguous_strides(data.shape);
  ElementsParams p;
  p.rank = static_cast<int>(ind.shape.size());
  p.n = num_elements(ind.shape);
  p.dim = data.shape[axis];
  p.axis_stride = strides[axis];
  for (int d = 0; d < p.rank; ++d) {
    p.dims[d] = ind.shape[static_cast<size_t>(d)];
    p.walk[d] = static_cast<size_t>(d) == axis ? 0 : strides[static_cast<size_t>(d)];
  }
  const size_t es = device_elem_size(data.dtype);
  const bool idx64 = ind.dtype == DType::Int64;
  const int slot = ctx.add_index_fault(node_index);
  const ir::ValueId d = node.inputs[0], ix = node.inputs[1], o = node.outputs[0];
  const Context* c = &ctx;
  program.launches.push_back({"gather_elements", [=](cudaStream_t s) {
    if (p.n == 0) return;
    ElementsParams q = p;
    q.data = c->ptr(d);
    q.idx = c->ptr(ix);
    q.out = c->ptr(o);
    q.fault = c->index_fault(slot);
    by_types(es, idx64, [&](auto* t, auto* i) {
      gather_elements_kernel<std::remove_pointer_t<decltype(t)>, std::remove_pointer_t<decltype(i)>><<<grid_for(q.n), kBlock, 0, s>>>(q);
    });
  }});
  const int64_t dims[1] = {p.dim};
  push_fault_fill(ctx, program, slot, ix, idx64, 1, dims);
}

}  // namespace

std::optional<std::string> indexing_unsupported(const ir::Graph& graph, const ir::Node& node) {
  const ir::Value& data = graph.value(node.inputs.at(0));
  const DType idx = graph.value(node.inputs.at(1)).dtype;
  if (idx != DType::Int64 && idx != DType::Int32) return std::string(ir::op_name(node.op)) + " indices must be int32 or int64";
  const DType t = device_dtype(data.dtype);
  if (t != DType::Float32 && t != DType::Int64 && t != DType::Int32 && t != DType::Bool)
    return std::string(ir::op_name(node.op)) + " on " + dtype_name(t) + " is not implemented on CUDA";
  if (node.op == ir::Op::ScatterND) {
    if (ir::scatter_reduction(node) != "none" && t == DType::Bool) return "ScatterND reduction '" + ir::scatter_reduction(node) + "' does not accept bool";
    if (graph.value(node.inputs.at(1)).shape.empty() || graph.value(node.inputs[1]).shape.back() > kMaxRank)
      return "ScatterND index tuples longer than 8 are not supported on CUDA";
  }
  if (node.op == ir::Op::GatherND &&
      (graph.value(node.inputs[1]).shape.empty() || graph.value(node.inputs[1]).shape.back() > kMaxRank))
    return "GatherND index tuples longer than 8 are not supported on CUDA";
  if (!node.epilogue.empty() && t != DType::Float32) return "a fused epilogue after an integer indexing op is not implemented on CUDA";
  return std::nullopt;
}

void record_indexing(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Node& node = ctx.graph().nodes[static_cast<size_t>(node_index)];
  switch (node.op) {
    case ir::Op::GatherND: record_gather_nd(ctx, node_index, node, program); break;
    case ir::Op::ScatterND: record_scatter_nd(ctx, node_index, node, program); break;
    case ir::Op::GatherElements: record_gather_elements(ctx, node_index, node, program); break;
    default: throw Error(ErrorCode::Internal, "cuda: indexing cannot run this op", node.name, ir::op_name(node.op));
  }
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::cuda
