// Shape family: Shape, ConstantOfShape and Range. Their results depend only on static shapes and
// constants: Shape and Range are computed on the host at compile time and copied into the arena,
// ConstantOfShape is a fill kernel.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backends/cuda/families.h"

namespace lockstep::cuda {
namespace {

Tensor compute_on_host(const ir::Graph& g, const ir::Node& node) {
  const DType out_t = device_dtype(g.value(node.outputs[0]).dtype);
  if (node.op == ir::Op::Shape) {
    const Shape& in = g.value(node.inputs[0]).shape;
    const int64_t rank = static_cast<int64_t>(in.size());
    int64_t start = node.attrs.get_int("start", 0), end = node.attrs.get_int("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    return Tensor::from_vector<int64_t>({end - start}, std::vector<int64_t>(in.begin() + start, in.begin() + end));
  }
  Tensor out(out_t, g.value(node.outputs[0]).shape);
  // Range: start + i * delta, computed in the output type as ONNX specifies.
  const Tensor& start = g.value(node.inputs[0]).constant;
  const Tensor& delta = g.value(node.inputs[2]).constant;
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (out_t == DType::Float32) {
      out.data<float>()[i] = static_cast<float>(start.element_as_double(0)) + static_cast<float>(i) * static_cast<float>(delta.element_as_double(0));
    } else if (out_t == DType::Int64) {
      out.data<int64_t>()[i] = start.element_as_int(0) + i * delta.element_as_int(0);
    } else if (out_t == DType::Int32) {
      out.data<int32_t>()[i] = static_cast<int32_t>(start.element_as_int(0) + i * delta.element_as_int(0));
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> shape_op_unsupported(const ir::Graph& graph, const ir::Node& node) {
  if (node.op == ir::Op::Shape) return std::nullopt;
  for (ir::ValueId v : node.inputs)
    if (v != ir::kNoValue && !graph.is_constant(v))
      return std::string(ir::op_name(node.op)) + " needs constant inputs on CUDA (it should have been folded)";
  if (node.op == ir::Op::Range && graph.value(node.outputs[0]).dtype == DType::Bool) return "Range on bool";
  return std::nullopt;
}

namespace {

template <class T>
__global__ void fill(T* __restrict__ out, long long n, T value) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long long>(gridDim.x) * blockDim.x)
    out[i] = value;
}

// ConstantOfShape filled on the device at each run: materialising it at compile time cost a host
// fill and an upload at every new length of a voice (~0.5 MB zero tensors in its flows).
void record_fill(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::ValueId out = node.outputs[0];
  const DType t = device_dtype(ctx.graph().value(out).dtype);
  const Tensor* attr = node.attrs.get_tensor("value");
  Tensor value = attr && attr->numel() > 0 ? *attr : Tensor::scalar<float>(0.0f);
  if (value.dtype() != t) value = value.to(t);
  uint64_t bits = 0;
  std::memcpy(&bits, value.raw(), device_elem_size(t));
  const long long n = num_elements(ctx.graph().value(out).shape);
  const size_t es = device_elem_size(t);
  const Context* c = &ctx;
  const unsigned blocks = static_cast<unsigned>(std::clamp<long long>((n + 255) / 256, 1, 4096));
  program.launches.push_back({"fill", [=](cudaStream_t s) {
    if (n == 0) return;
    if (es == 8) fill<<<blocks, 256, 0, s>>>(static_cast<uint64_t*>(c->ptr(out)), n, bits);
    else if (es == 4) fill<<<blocks, 256, 0, s>>>(static_cast<uint32_t*>(c->ptr(out)), n, static_cast<uint32_t>(bits));
    else fill<<<blocks, 256, 0, s>>>(static_cast<uint8_t*>(c->ptr(out)), n, static_cast<uint8_t>(bits));
    check_cuda(cudaGetLastError(), "fill launch", node.name);
  }});
}

}  // namespace

void record_shape_op(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  if (node.op == ir::Op::ConstantOfShape) {
    record_fill(ctx, node, program);
    record_epilogue(ctx, node_index, program);
    return;
  }
  const int index = ctx.add_host_constant(compute_on_host(g, node));
  const ir::ValueId out = node.outputs[0];
  const size_t bytes = static_cast<size_t>(num_elements(g.value(out).shape)) * device_elem_size(g.value(out).dtype);
  const Context* c = &ctx;
  program.launches.push_back({std::string("constant_") + ir::op_name(node.op), [=](cudaStream_t s) {
    if (bytes) check_cuda(cudaMemcpyAsync(c->ptr(out), c->host_constant_ptr(index), bytes, cudaMemcpyDeviceToDevice, s), "shape-op copy");
  }});
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::cuda
