// Logical family (the CPU's logical.cpp): the comparisons Less, LessOrEqual, Greater,
// GreaterOrEqual on float32, int32 and int64, and And, Or, Xor, Not on bool; numpy broadcasting,
// bool results (one byte). Each input compares as its stored type (NaN compares false). Equal
// lives with Where in elementwise.cu. No arithmetic: the results are exact.
#include <cstdint>

#include "backends/cuda/families.h"

namespace lockstep::cuda {
namespace {

enum LogicCode : int { kLess, kLessOrEqual, kGreater, kGreaterOrEqual, kAnd, kOr, kXor, kNot };

int logic_code(ir::Op op) {
  switch (op) {
    case ir::Op::Less: return kLess;
    case ir::Op::LessOrEqual: return kLessOrEqual;
    case ir::Op::Greater: return kGreater;
    case ir::Op::GreaterOrEqual: return kGreaterOrEqual;
    case ir::Op::And: return kAnd;
    case ir::Op::Or: return kOr;
    case ir::Op::Xor: return kXor;
    case ir::Op::Not: return kNot;
    default: return -1;
  }
}

struct LogicParams {
  int rank = 0;
  int code = 0;
  int64_t n = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[2][kMaxRank] = {};
  const void* in[2] = {};
  bool* out = nullptr;
};

template <class T>
__device__ inline bool logic(int code, T a, T b) {
  switch (code) {
    case kLess: return a < b;
    case kLessOrEqual: return a <= b;
    case kGreater: return a > b;
    case kGreaterOrEqual: return a >= b;
    case kAnd: return a && b;
    case kOr: return a || b;
    case kXor: return static_cast<bool>(a) != static_cast<bool>(b);
    default: return !a;  // kNot
  }
}

template <class T>
__global__ void logic_kernel(LogicParams p) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rem = i, off0 = 0, off1 = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rem % p.dims[d];
      rem /= p.dims[d];
      off0 += c * p.strides[0][d];
      off1 += c * p.strides[1][d];
    }
    const T a = static_cast<const T*>(p.in[0])[off0];
    const T b = p.code == kNot ? a : static_cast<const T*>(p.in[1])[off1];
    p.out[i] = logic<T>(p.code, a, b);
  }
}

}  // namespace

std::optional<std::string> logical_unsupported(const ir::Graph& graph, const ir::Node& node) {
  const DType a = device_dtype(graph.value(node.inputs.at(0)).dtype);
  const bool logical = node.op == ir::Op::And || node.op == ir::Op::Or || node.op == ir::Op::Xor || node.op == ir::Op::Not;
  if (device_dtype(graph.value(node.outputs.at(0)).dtype) != DType::Bool) return std::string(ir::op_name(node.op)) + " must give bool";
  if (logical && a != DType::Bool) return std::string(ir::op_name(node.op)) + " on " + dtype_name(a) + " is not implemented on CUDA";
  if (!logical && a != DType::Float32 && a != DType::Int64 && a != DType::Int32)
    return std::string(ir::op_name(node.op)) + " on " + dtype_name(a) + " is not implemented on CUDA";
  if (node.op != ir::Op::Not && device_dtype(graph.value(node.inputs.at(1)).dtype) != a)
    return std::string(ir::op_name(node.op)) + " on mixed dtypes is not implemented on CUDA";
  if (!node.epilogue.empty()) return "a fused epilogue after a bool result is not implemented on CUDA";
  return std::nullopt;
}

void record_logical(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const ir::ValueId out = node.outputs[0];
  std::vector<int64_t> dims = g.value(out).shape;
  const int64_t n = num_elements(dims);
  const size_t nin = node.op == ir::Op::Not ? 1 : 2;
  std::vector<std::vector<int64_t>> st(2, std::vector<int64_t>(dims.size(), 0));
  for (size_t k = 0; k < nin; ++k) st[k] = broadcast_strides(g.value(node.inputs[k]).shape, dims);
  std::vector<int64_t> out_strides = contiguous_strides(dims);
  if (n > 0) collapse_dims(dims, {&st[0], &st[1], &out_strides});
  LogicParams p;
  p.rank = static_cast<int>(dims.size());
  p.code = logic_code(node.op);
  p.n = n;
  for (int d = 0; d < p.rank; ++d) {
    p.dims[d] = dims[static_cast<size_t>(d)];
    p.strides[0][d] = st[0][static_cast<size_t>(d)];
    p.strides[1][d] = st[1][static_cast<size_t>(d)];
  }
  const DType t = device_dtype(g.value(node.inputs[0]).dtype);
  const ir::ValueId a = node.inputs[0], b = nin > 1 ? node.inputs[1] : node.inputs[0];
  const Context* c = &ctx;
  program.launches.push_back({std::string("logical_") + ir::op_name(node.op), [=](cudaStream_t s) {
    if (p.n == 0) return;
    LogicParams q = p;
    q.in[0] = c->ptr(a);
    q.in[1] = c->ptr(b);
    q.out = static_cast<bool*>(c->ptr(out));
    switch (t) {
      case DType::Bool: logic_kernel<bool><<<grid_for(q.n), kBlock, 0, s>>>(q); break;
      case DType::Int64: logic_kernel<long long><<<grid_for(q.n), kBlock, 0, s>>>(q); break;
      case DType::Int32: logic_kernel<int32_t><<<grid_for(q.n), kBlock, 0, s>>>(q); break;
      default: logic_kernel<float><<<grid_for(q.n), kBlock, 0, s>>>(q); break;
    }
  }});
}

}  // namespace lockstep::cuda
