// Gather, GatherElements, GatherND, ScatterND (gather*.comp, scatter_nd.comp): copies of 32- or
// 64-bit elements at int32/int64 indices, one invocation per output element (ScatterND: per slice
// element, walking the index tuples in order). Out-of-range indices are clamped on the device and
// reported after the run through the node's error word (index.glsl).
#include "backends/vulkan/families.h"
#include "backends/vulkan/shaders/params.h"
#include "ir/infer_rules.h"

namespace lockstep::vulkan {

namespace {

uint32_t words_of(const ir::Graph& g, ir::ValueId v) { return g.value(v).dtype == DType::Int64 ? 2u : 1u; }

Dispatch indexing_dispatch(Context& ctx, const char* shader, const ir::Node& node, const std::vector<uint32_t>& p,
                           int64_t invocations, int64_t local) {
  Dispatch d;
  d.shader = shader;
  d.spec[0] = static_cast<int32_t>(words_of(ctx.graph(), node.inputs[1]));
  d.base = ctx.add_params(p);
  d.groups[0] = groups_for(invocations, local);
  return d;
}

void record_gather(Context& ctx, const ir::Node& node, uint32_t err, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& data = g.value(node.inputs[0]).shape;
  int64_t axis = 0;
  ir::gather_shape(node, data, g.value(node.inputs[1]).shape, &axis);
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < data.size(); ++d) inner *= data[d];
  const int64_t n = num_elements(g.value(node.outputs[0]).shape);
  if (n == 0) return;
  std::vector<uint32_t> p(GA_WORDS, 0);
  p[GA_N] = word(n, node);
  p[GA_EW] = words_of(g, node.inputs[0]);
  p[GA_INNER] = word(inner, node);
  p[GA_COUNT] = word(num_elements(g.value(node.inputs[1]).shape), node);
  p[GA_AXIS_DIM] = word(data[static_cast<size_t>(axis)], node);
  p[GA_DATA] = ctx.at(node.inputs[0]);
  p[GA_IDX] = ctx.at(node.inputs[1]);
  p[GA_OUT] = ctx.at(node.outputs[0]);
  p[GA_ERR] = err;
  program.dispatches.push_back(indexing_dispatch(ctx, "gather", node, p, n, 256));
}

void record_gather_elements(Context& ctx, const ir::Node& node, uint32_t err, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& data = g.value(node.inputs[0]).shape;
  const Shape& idx = g.value(node.inputs[1]).shape;
  const int64_t axis = ir::gather_elements_axis(node, data, idx);
  const int64_t n = num_elements(idx);
  if (n == 0) return;
  const std::vector<int64_t> strides = contiguous_strides(data);
  std::vector<uint32_t> p(GE_WORDS, 0);
  p[GE_N] = word(n, node);
  p[GE_RANK] = static_cast<uint32_t>(idx.size());
  p[GE_AXIS] = static_cast<uint32_t>(axis);
  p[GE_EW] = words_of(g, node.inputs[0]);
  p[GE_AXIS_DIM] = word(data[static_cast<size_t>(axis)], node);
  p[GE_DATA] = ctx.at(node.inputs[0]);
  p[GE_IDX] = ctx.at(node.inputs[1]);
  p[GE_OUT] = ctx.at(node.outputs[0]);
  p[GE_ERR] = err;
  for (size_t d = 0; d < idx.size(); ++d) p[GE_IDIMS + d] = word(idx[d], node), p[GE_DSTR + d] = word(strides[d], node);
  program.dispatches.push_back(indexing_dispatch(ctx, "gather_elements", node, p, n, 256));
}

void record_gather_nd(Context& ctx, const ir::Node& node, uint32_t err, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& data = g.value(node.inputs[0]).shape;
  const Shape& idx = g.value(node.inputs[1]).shape;
  ir::gather_nd_shape(node, data, idx);
  const auto b = static_cast<size_t>(node.attrs.get_int("batch_dims", 0));
  const auto k = static_cast<size_t>(idx.back());
  int64_t batches = 1, slice = 1, tuples = 1;
  for (size_t d = 0; d < b; ++d) batches *= data[d];
  for (size_t d = b + k; d < data.size(); ++d) slice *= data[d];
  for (size_t d = 0; d + 1 < idx.size(); ++d) tuples *= idx[d];
  const int64_t n = tuples * slice;
  if (n == 0) return;
  const std::vector<int64_t> strides = contiguous_strides(data);
  std::vector<uint32_t> p(GN_WORDS, 0);
  p[GN_N] = word(n, node);
  p[GN_EW] = words_of(g, node.inputs[0]);
  p[GN_SLICE] = word(slice, node);
  p[GN_PER_BATCH] = word(tuples / batches, node);
  p[GN_K] = static_cast<uint32_t>(k);
  p[GN_BATCH_STRIDE] = word(b == 0 ? 0 : strides[b - 1], node);
  p[GN_DATA] = ctx.at(node.inputs[0]);
  p[GN_IDX] = ctx.at(node.inputs[1]);
  p[GN_OUT] = ctx.at(node.outputs[0]);
  p[GN_ERR] = err;
  for (size_t j = 0; j < k; ++j) p[GN_KDIMS + j] = word(data[b + j], node), p[GN_KSTR + j] = word(strides[b + j], node);
  program.dispatches.push_back(indexing_dispatch(ctx, "gather_nd", node, p, n, 256));
}

void record_scatter_nd(Context& ctx, const ir::Node& node, uint32_t err, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& data = g.value(node.inputs[0]).shape;
  const Shape& idx = g.value(node.inputs[1]).shape;
  ir::check_scatter_nd(node, data, idx, g.value(node.inputs[2]).shape);
  record_dense_copy(ctx, program, node, node.inputs[0], node.outputs[0]);
  const auto k = static_cast<size_t>(idx.back());
  int64_t slice = 1, tuples = 1;
  for (size_t d = k; d < data.size(); ++d) slice *= data[d];
  for (size_t d = 0; d + 1 < idx.size(); ++d) tuples *= idx[d];
  if (slice * tuples == 0) return;
  const std::vector<int64_t> strides = contiguous_strides(data);
  const std::string how = ir::scatter_reduction(node);
  std::vector<uint32_t> p(SN_WORDS, 0);
  p[SN_SLICE] = word(slice, node);
  p[SN_TUPLES] = word(tuples, node);
  p[SN_K] = static_cast<uint32_t>(k);
  p[SN_EW] = words_of(g, node.inputs[0]);
  p[SN_IDX] = ctx.at(node.inputs[1]);
  p[SN_UPD] = ctx.at(node.inputs[2]);
  p[SN_OUT] = ctx.at(node.outputs[0]);
  p[SN_ERR] = err;
  for (size_t j = 0; j < k; ++j) p[SN_KDIMS + j] = word(data[j], node), p[SN_KSTR + j] = word(strides[j], node);
  Dispatch d = indexing_dispatch(ctx, "scatter_nd", node, p, slice, 64);
  d.spec[1] = type_code(g.value(node.inputs[0]).dtype);
  d.spec[2] = how == "none" ? SN_NONE : how == "add" ? SN_ADD : how == "mul" ? SN_MUL : how == "max" ? SN_MAX : SN_MIN;
  program.dispatches.push_back(d);
}

}  // namespace

bool is_indexing(ir::Op op) {
  return op == ir::Op::Gather || op == ir::Op::GatherElements || op == ir::Op::GatherND || op == ir::Op::ScatterND;
}

std::optional<std::string> indexing_unsupported(const ir::Graph& graph, const ir::Node& node) {
  if (node.inputs.size() < 2 || node.inputs[0] == ir::kNoValue || node.inputs[1] == ir::kNoValue) return std::string("a missing input");
  const DType idx = graph.value(node.inputs[1]).dtype;
  if (idx != DType::Int32 && idx != DType::Int64) return std::string("indices must be int32 or int64");
  const Shape& ind = graph.value(node.inputs[1]).shape;
  if ((node.op == ir::Op::GatherND || node.op == ir::Op::ScatterND) && (ind.empty() || ind.back() > GN_MAX_K))
    return std::string("index tuples longer than 6");
  if (node.op == ir::Op::ScatterND) {
    const std::string how = ir::scatter_reduction(node);
    const DType t = graph.value(node.inputs[0]).dtype;
    int64_t tuples = 1;
    for (size_t d = 0; d + 1 < ind.size(); ++d) tuples *= ind[d];
    int64_t slice = 1;
    for (size_t d = static_cast<size_t>(ind.back()); d < graph.value(node.inputs[0]).shape.size(); ++d) slice *= graph.value(node.inputs[0]).shape[d];
    if (tuples * (ind.back() + 1) * grid_passes(slice, 64) > kMaxSerialLoop)
      return "ScatterND of " + std::to_string(tuples) + " index tuples: vulkan walks them serially up to " +
             std::to_string(kMaxSerialLoop / (ind.back() + 1)) + " (llvmpipe's loop limit)";
    if (how != "none" && t != DType::Float32 && t != DType::Int32)
      return "ScatterND reduction '" + how + "' of " + dtype_name(t) + " is not implemented on vulkan (float32, int32)";
  }
  if (!node.epilogue.empty() && !is_floating(graph.value(node.inputs[0]).dtype)) return std::string("an epilogue on a non-float node");
  return std::nullopt;
}

void record_indexing(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Node& node = ctx.graph().nodes[static_cast<size_t>(node_index)];
  const uint32_t err = ctx.error_slot(node_index);
  switch (node.op) {
    case ir::Op::Gather: record_gather(ctx, node, err, program); break;
    case ir::Op::GatherElements: record_gather_elements(ctx, node, err, program); break;
    case ir::Op::GatherND: record_gather_nd(ctx, node, err, program); break;
    default: record_scatter_nd(ctx, node, err, program); break;
  }
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::vulkan
