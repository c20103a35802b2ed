// Data movement: every op but Pad and ConstantOfShape is a strided copy (copy.comp) of 4- or
// 8-byte elements; Concat and Split copy each part at its offset along the axis; Pad maps indices
// (pad.comp); ConstantOfShape fills (fill.comp).
#include <cstring>

#include "backends/vulkan/families.h"
#include "backends/vulkan/shaders/params.h"
#include "ir/infer_rules.h"

namespace lockstep::vulkan {

namespace {

uint32_t elem_words(const ir::Graph& g, ir::ValueId v) { return g.value(v).dtype == DType::Int64 ? 2u : 1u; }

// dst[dst_base + sum c*dst_strides] = src[src_base + sum c*src_strides] over `dims` (elements).
void push_copy(Context& ctx, NodeProgram& program, const ir::Node& node, ir::ValueId src, int64_t src_base,
               std::vector<int64_t> src_strides, ir::ValueId dst, int64_t dst_base, std::vector<int64_t> dst_strides,
               std::vector<int64_t> dims) {
  const int64_t n = num_elements(dims);
  if (n == 0) return;
  collapse_dims(dims, {&src_strides, &dst_strides});
  if (dims.size() > CP_MAX_RANK)
    throw Error(ErrorCode::Internal, "vulkan: copy of rank " + std::to_string(dims.size()), node.name, ir::op_name(node.op));
  const uint32_t ew = elem_words(ctx.graph(), dst);
  std::vector<uint32_t> p(CP_WORDS, 0);
  p[CP_N] = word(n, node);
  p[CP_RANK] = static_cast<uint32_t>(dims.size());
  p[CP_ELEM_WORDS] = ew;
  for (size_t d = 0; d < CP_MAX_RANK; ++d) p[CP_DIMS + d] = d < dims.size() ? word(dims[d], node) : 1;
  p[CP_SRC] = word(ctx.at(src) + src_base * ew, node);
  p[CP_DST] = word(ctx.at(dst) + dst_base * ew, node);
  for (size_t d = 0; d < dims.size(); ++d) {
    p[CP_SRC + 1 + d] = word(src_strides[d], node);
    p[CP_DST + 1 + d] = word(dst_strides[d], node);
  }
  Dispatch dispatch;
  dispatch.shader = "copy";
  dispatch.base = ctx.add_params(p);
  dispatch.groups[0] = groups_for(n, 256);
  program.dispatches.push_back(dispatch);
}

void push_dense_copy(Context& ctx, NodeProgram& program, const ir::Node& node, ir::ValueId src, ir::ValueId dst) {
  const int64_t n = num_elements(ctx.graph().value(dst).shape);
  push_copy(ctx, program, node, src, 0, {1}, dst, 0, {1}, {n});
}

}  // namespace

void record_dense_copy(Context& ctx, NodeProgram& program, const ir::Node& node, ir::ValueId src, ir::ValueId dst) {
  push_dense_copy(ctx, program, node, src, dst);
}

namespace {

void record_slice(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& in = g.value(node.inputs[0]).shape;
  const std::vector<int64_t> starts = constant_ints(g, node, 1), ends = constant_ints(g, node, 2);
  const std::vector<int64_t> axes = constant_ints(g, node, 3), steps = constant_ints(g, node, 4);
  const bool has_axes = node.inputs.size() > 3 && node.inputs[3] != ir::kNoValue;
  const bool has_steps = node.inputs.size() > 4 && node.inputs[4] != ir::kNoValue;
  const auto dims = ir::slice_dims(node, in, starts, ends, has_axes ? &axes : nullptr, has_steps ? &steps : nullptr);
  const std::vector<int64_t> in_strides = contiguous_strides(in);
  std::vector<int64_t> src_strides, count;
  int64_t base = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    count.push_back(dims[d].count);
    src_strides.push_back(in_strides[d] * dims[d].step);
    if (dims[d].count > 0) base += dims[d].start * in_strides[d];
  }
  push_copy(ctx, program, node, node.inputs[0], base, src_strides, node.outputs[0], 0, contiguous_strides(count), count);
}

void record_split(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& in = g.value(node.inputs[0]).shape;
  const auto axis = static_cast<size_t>(ir::split_axis(node, static_cast<int64_t>(in.size())));
  const bool has_sizes = node.inputs.size() > 1 && node.inputs[1] != ir::kNoValue;
  const std::vector<int64_t> given = constant_ints(g, node, 1);
  const std::vector<int64_t> sizes = ir::split_sizes(node, in, has_sizes ? &given : nullptr);
  const std::vector<int64_t> in_strides = contiguous_strides(in);
  int64_t at = 0;
  for (size_t k = 0; k < node.outputs.size() && k < sizes.size(); ++k) {
    const ir::ValueId o = node.outputs[k];
    if (o != ir::kNoValue) {
      const Shape& os = g.value(o).shape;
      push_copy(ctx, program, node, node.inputs[0], at * in_strides[axis], in_strides, o, 0, contiguous_strides(os), os);
    }
    at += sizes[k];
  }
}

void record_concat(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& out = g.value(node.outputs[0]).shape;
  const auto axis = static_cast<size_t>(ir::normalize_axis(node, node.attrs.get_int("axis", 0), static_cast<int64_t>(out.size()), "axis"));
  const std::vector<int64_t> out_strides = contiguous_strides(out);
  int64_t at = 0;
  for (ir::ValueId i : node.inputs) {
    if (i == ir::kNoValue) continue;
    const Shape& is = g.value(i).shape;
    push_copy(ctx, program, node, i, 0, contiguous_strides(is), node.outputs[0], at * out_strides[axis], out_strides, is);
    at += is[axis];
  }
}

// ConstantOfShape: the value's words in every element (bool as one 32-bit word, int64 as two).
void record_fill(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::ValueId out = node.outputs[0];
  const DType t = g.value(out).dtype;
  const Tensor* attr = node.attrs.get_tensor("value");
  Tensor value = attr && attr->numel() > 0 ? *attr : Tensor::scalar<float>(0.0f);
  if (value.dtype() != t) value = value.to(t);
  uint32_t words[2] = {0, 0};
  if (t == DType::Bool) words[0] = value.data<bool>()[0] ? 1u : 0u;
  else std::memcpy(words, value.raw(), dtype_size(t));
  const int64_t n = num_elements(g.value(out).shape);
  if (n == 0) return;
  std::vector<uint32_t> p(FL_WORDS, 0);
  p[FL_N] = word(n, node);
  p[FL_ELEM_WORDS] = elem_words(g, out);
  p[FL_DST] = word(ctx.at(out), node);
  p[FL_VALUE] = words[0];
  p[FL_VALUE + 1] = words[1];
  Dispatch dispatch;
  dispatch.shader = "fill";
  dispatch.base = ctx.add_params(p);
  dispatch.groups[0] = groups_for(n, 256);
  program.dispatches.push_back(dispatch);
}

void record_pad(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& in = g.value(node.inputs[0]).shape;
  const Shape& out = g.value(node.outputs[0]).shape;
  const bool has_pads = node.inputs.size() > 1 && node.inputs[1] != ir::kNoValue;
  const std::vector<int64_t> pads = has_pads ? constant_ints(g, node, 1) : node.attrs.get_ints("pads");
  const bool has_axes = node.inputs.size() > 3 && node.inputs[3] != ir::kNoValue;
  const std::vector<int64_t> axes = constant_ints(g, node, 3);
  const ir::PadAmounts amounts = ir::pad_amounts(node, in, pads, has_axes ? &axes : nullptr);
  const std::string mode = ir::pad_mode(node);
  double value = 0.0;
  if (node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue) {
    const Tensor& v = g.value(node.inputs[2]).constant;
    if (!v.defined()) throw Error(ErrorCode::UnsupportedAttribute, "vulkan: Pad constant_value must be a constant", node.name, "Pad");
    if (v.numel() > 0) value = v.element_as_double(0);
  } else if (node.attrs.has("value")) {
    value = ir::attr_double(node.attrs.get_float("value", 0.0f));
  }
  const int64_t n = num_elements(out);
  if (n == 0) return;
  std::vector<uint32_t> p(PAD_WORDS, 0);
  p[PAD_N] = word(n, node);
  p[PAD_RANK] = static_cast<uint32_t>(in.size());
  p[PAD_MODE] = mode == "reflect" ? 1u : mode == "edge" ? 2u : 0u;
  p[PAD_EW] = elem_words(g, node.outputs[0]);
  const DType t = g.value(node.outputs[0]).dtype;
  if (t == DType::Int64) {
    const auto v = static_cast<uint64_t>(static_cast<int64_t>(value));
    p[PAD_VALUE] = static_cast<uint32_t>(v);
    p[PAD_VALUE_HI] = static_cast<uint32_t>(v >> 32);
  } else if (t == DType::Int32 || t == DType::Bool) {
    p[PAD_VALUE] = static_cast<uint32_t>(static_cast<int32_t>(value));
  } else {
    const float f = static_cast<float>(value);
    std::memcpy(&p[PAD_VALUE], &f, sizeof f);
  }
  p[PAD_SRC] = ctx.at(node.inputs[0]);
  p[PAD_DST] = ctx.at(node.outputs[0]);
  for (size_t d = 0; d < in.size(); ++d) {
    p[PAD_OUT_DIMS + d] = word(out[d], node);
    p[PAD_IN_DIMS + d] = word(in[d], node);
    p[PAD_BEGIN + d] = word(amounts.begin[d], node);
  }
  Dispatch dispatch;
  dispatch.shader = "pad";
  dispatch.base = ctx.add_params(p);
  dispatch.groups[0] = groups_for(n, 256);
  program.dispatches.push_back(dispatch);
}

}  // namespace

bool is_data_movement(ir::Op op) {
  switch (op) {
    case ir::Op::Slice: case ir::Op::Split: case ir::Op::Concat: case ir::Op::Reshape: case ir::Op::Flatten:
    case ir::Op::Squeeze: case ir::Op::Unsqueeze: case ir::Op::Identity: case ir::Op::Transpose: case ir::Op::Expand:
    case ir::Op::Pad: case ir::Op::ConstantOfShape:
      return true;
    default:
      return false;
  }
}

std::optional<std::string> data_movement_unsupported(const ir::Graph& graph, const ir::Node& node) {
  if (node.inputs.empty() || node.inputs[0] == ir::kNoValue) return std::string("no data input");
  // ConstantOfShape's input is its shape (a constant); what it writes is its output's type.
  const bool fill = node.op == ir::Op::ConstantOfShape;
  const DType t = graph.value(fill ? node.outputs[0] : node.inputs[0]).dtype;
  if (fill && !graph.is_constant(node.inputs[0])) return std::string("the shape input is not a constant");
  if (t != DType::Float32 && t != DType::Int32 && t != DType::Int64 && t != DType::Bool)
    return std::string(dtype_name(t)) + " tensors are not supported on vulkan (float32, int32, int64, bool)";
  for (size_t i = 1; i < node.inputs.size(); ++i)
    if (node.inputs[i] != ir::kNoValue && node.op != ir::Op::Concat && !graph.is_constant(node.inputs[i]))
      return "parameter input " + std::to_string(i) + " is not a constant";
  return std::nullopt;
}

void record_data_movement(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const ir::ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = g.value(in).shape;
  const Shape& out_shape = g.value(out).shape;
  switch (node.op) {
    case ir::Op::ConstantOfShape: record_fill(ctx, node, program); break;
    case ir::Op::Reshape: case ir::Op::Flatten: case ir::Op::Squeeze: case ir::Op::Unsqueeze: case ir::Op::Identity:
      push_dense_copy(ctx, program, node, in, out);
      break;
    case ir::Op::Transpose: {
      const std::vector<int64_t> perm = ir::transpose_perm(node, static_cast<int64_t>(in_shape.size()));
      const std::vector<int64_t> in_strides = contiguous_strides(in_shape);
      std::vector<int64_t> src(perm.size());
      for (size_t d = 0; d < perm.size(); ++d) src[d] = in_strides[static_cast<size_t>(perm[d])];
      push_copy(ctx, program, node, in, 0, src, out, 0, contiguous_strides(out_shape), out_shape);
      break;
    }
    case ir::Op::Expand:
      push_copy(ctx, program, node, in, 0, broadcast_strides(in_shape, out_shape), out, 0, contiguous_strides(out_shape), out_shape);
      break;
    case ir::Op::Slice: record_slice(ctx, node, program); break;
    case ir::Op::Split: record_split(ctx, node, program); break;
    case ir::Op::Concat: record_concat(ctx, node, program); break;
    case ir::Op::Pad: record_pad(ctx, node, program); break;
    default:
      throw Error(ErrorCode::Internal, "vulkan: data movement cannot run this op", node.name, ir::op_name(node.op));
  }
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::vulkan
