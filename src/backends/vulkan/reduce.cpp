// ReduceSum, ReduceMean, ReduceMax, ReduceMin (reduce.comp) and CumSum (cumsum.comp): one
// invocation per output (per lane for CumSum) visiting the reduced elements in index order; float
// sums compensated, integers in int64. Past llvmpipe's loop limit a reduction runs in two passes
// (chunks of kChunk positions in order, then each output's chunks in order) through a workspace.
// No atomics, no order that depends on scheduling.
#include "backends/vulkan/families.h"
#include "backends/vulkan/shaders/params.h"
#include "ir/infer_rules.h"

namespace lockstep::vulkan {

namespace {

bool has_input(const ir::Node& node, size_t i) { return node.inputs.size() > i && node.inputs[i] != ir::kNoValue; }

constexpr int64_t kChunk = 4096;  // reduced positions per chunk of a split reduction

// A reduction's outputs and reduced positions per output.
std::pair<int64_t, int64_t> reduce_sizes(const ir::Graph& graph, const ir::Node& node) {
  const Shape& x = graph.value(node.inputs[0]).shape;
  std::vector<int64_t> axes;
  if (has_input(node, 1)) axes = ir::tensor_ints(graph.value(node.inputs[1]).constant);
  const std::vector<char> mask = ir::reduce_mask(node, static_cast<int64_t>(x.size()), has_input(node, 1) ? &axes : nullptr);
  int64_t outputs = 1, count = 1;
  for (size_t d = 0; d < x.size(); ++d) (mask[d] ? count : outputs) *= x[d];
  return {outputs, count};
}

// Whether the reduction runs in one pass (each output walks its positions serially).
bool whole(int64_t outputs, int64_t count) { return count * grid_passes(outputs, 64) <= kMaxSerialLoop; }
int64_t chunks_of(int64_t count) { return (count + kChunk - 1) / kChunk; }

void record_reduce(Context& ctx, int node_index, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& x = g.value(node.inputs[0]).shape;
  const std::vector<int64_t> axes = constant_ints(g, node, 1);
  const std::vector<char> mask = ir::reduce_mask(node, static_cast<int64_t>(x.size()), has_input(node, 1) ? &axes : nullptr);
  const std::vector<int64_t> strides = contiguous_strides(x);
  std::vector<int64_t> kdims, kstr, rdims, rstr;
  for (size_t d = 0; d < x.size(); ++d) {
    (mask[d] ? rdims : kdims).push_back(x[d]);
    (mask[d] ? rstr : kstr).push_back(strides[d]);
  }
  const int64_t n = num_elements(kdims), count = num_elements(rdims);
  if (n == 0) return;
  collapse_dims(kdims, {&kstr});
  collapse_dims(rdims, {&rstr});
  std::vector<uint32_t> p(RD_WORDS, 0);
  const bool split = !whole(n, count);
  p[RD_CHUNK] = word(kChunk, node);
  p[RD_CHUNKS] = word(split ? chunks_of(count) : 1, node);
  p[RD_WS] = split ? ctx.workspace(node_index) : 0u;
  p[RD_N] = word(n, node);
  p[RD_KRANK] = static_cast<uint32_t>(kdims.size());
  p[RD_RRANK] = count == 0 ? 0u : static_cast<uint32_t>(rdims.size());
  for (size_t d = 0; d < kdims.size(); ++d) p[RD_KDIMS + d] = word(kdims[d], node), p[RD_KSTR + d] = word(kstr[d], node);
  for (size_t d = 0; d < rdims.size(); ++d) p[RD_RDIMS + d] = word(rdims[d], node), p[RD_RSTR + d] = word(rstr[d], node);
  p[RD_COUNT] = word(count, node);
  p[RD_IN] = ctx.at(node.inputs[0]);
  p[RD_OUT] = ctx.at(node.outputs[0]);
  Dispatch d;
  d.shader = "reduce";
  d.spec[0] = node.op == ir::Op::ReduceSum ? RD_SUM : node.op == ir::Op::ReduceMean ? RD_MEAN : node.op == ir::Op::ReduceMax ? RD_MAX : RD_MIN;
  d.spec[1] = type_code(g.value(node.inputs[0]).dtype);
  d.base = ctx.add_params(p);
  d.groups[0] = groups_for(n, 64);
  if (split) {  // each chunk, then each output's chunks in order
    d.spec[2] = RD_PARTIAL;
    d.groups[0] = groups_for(n * chunks_of(count), 64);
    program.dispatches.push_back(d);
    d.spec[2] = RD_COMBINE;
    d.groups[0] = groups_for(n, 64);
  }
  program.dispatches.push_back(d);
}

void record_cumsum(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& x = g.value(node.inputs[0]).shape;
  const auto axis = static_cast<size_t>(ir::cumsum_axis(node, static_cast<int64_t>(x.size()), constant_ints(g, node, 1)));
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x[d];
  for (size_t d = axis + 1; d < x.size(); ++d) inner *= x[d];
  if (outer * inner == 0 || x[axis] == 0) return;
  std::vector<uint32_t> p(CS_WORDS, 0);
  p[CS_LANES] = word(outer * inner, node);
  p[CS_DIM] = word(x[axis], node);
  p[CS_INNER] = word(inner, node);
  p[CS_IN] = ctx.at(node.inputs[0]);
  p[CS_OUT] = ctx.at(node.outputs[0]);
  p[CS_EXCLUSIVE] = node.attrs.get_int("exclusive", 0) != 0 ? 1u : 0u;
  p[CS_REVERSE] = node.attrs.get_int("reverse", 0) != 0 ? 1u : 0u;
  Dispatch d;
  d.shader = "cumsum";
  d.spec[0] = type_code(g.value(node.inputs[0]).dtype);
  d.base = ctx.add_params(p);
  d.groups[0] = groups_for(outer * inner, 64);
  program.dispatches.push_back(d);
}

}  // namespace

size_t workspace_bytes(const ir::Graph& graph, const ir::Node& node) {
  if (!is_reduce(node.op) || node.op == ir::Op::CumSum) return 0;
  const auto [outputs, count] = reduce_sizes(graph, node);
  return whole(outputs, count) ? 0 : static_cast<size_t>(outputs * chunks_of(count)) * 8;
}

bool is_reduce(ir::Op op) {
  return op == ir::Op::ReduceSum || op == ir::Op::ReduceMean || op == ir::Op::ReduceMax || op == ir::Op::ReduceMin ||
         op == ir::Op::CumSum;
}

std::optional<std::string> reduce_unsupported(const ir::Graph& graph, const ir::Node& node, bool int64) {
  if (!int64) return std::string(ir::op_name(node.op)) + " needs shaderInt64, which this device lacks";
  const DType t = graph.value(node.inputs.at(0)).dtype;
  if (t != DType::Float32 && t != DType::Int32 && t != DType::Int64)
    return std::string(ir::op_name(node.op)) + " of " + dtype_name(t) + " is not supported on vulkan";
  if (has_input(node, 1) && !graph.is_constant(node.inputs[1])) return std::string("the axes input is not a constant");
  if (node.op == ir::Op::CumSum) {
    if (!has_input(node, 1) || !graph.is_constant(node.inputs[1])) return std::string("the axis input is not a constant");
    const Shape& x = graph.value(node.inputs[0]).shape;
    const std::vector<int64_t> axis = ir::tensor_ints(graph.value(node.inputs[1]).constant);
    const auto a = static_cast<size_t>(ir::cumsum_axis(node, static_cast<int64_t>(x.size()), axis));
    const int64_t serial = x[a] * grid_passes(num_elements(x) / std::max<int64_t>(1, x[a]), 64);
    if (serial > kMaxSerialLoop)
      return "CumSum over " + std::to_string(serial) + " elements per lane: vulkan scans serially up to " + std::to_string(kMaxSerialLoop) +
             " (llvmpipe's loop limit; a split scan is not implemented yet)";
    return std::nullopt;
  }
  const auto [outputs, count] = reduce_sizes(graph, node);
  if (whole(outputs, count)) return std::nullopt;
  // Split: each chunk walks kChunk positions, each output its chunks (two words each).
  if (kChunk * grid_passes(outputs * chunks_of(count), 64) > kMaxSerialLoop ||
      2 * chunks_of(count) * grid_passes(outputs, 64) > kMaxSerialLoop)
    return std::string(ir::op_name(node.op)) + " over " + std::to_string(count) + " elements per output (" + std::to_string(outputs) +
           " outputs): past what a two-pass reduction walks within llvmpipe's loop limit";
  return std::nullopt;
}

void record_reduce_family(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Node& node = ctx.graph().nodes[static_cast<size_t>(node_index)];
  if (node.op == ir::Op::CumSum) record_cumsum(ctx, node, program);
  else record_reduce(ctx, node_index, node, program);
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::vulkan
