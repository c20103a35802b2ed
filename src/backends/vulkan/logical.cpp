// Element-wise ops over any element type as programs of typed_ew.comp: Cast, Equal, Less,
// LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor, Not, Where, and Add/Sub/Mul/Div/Neg/Abs/
// Relu on int32/int64. Integers are computed in int64 on the device (shaderInt64). Pow that
// ew_program cannot take (integer operands, run-time or fractional exponents) runs pow.comp, the
// cpu's T(pow(double, double)) in double (shaderFloat64).
#include "backends/vulkan/families.h"
#include "backends/vulkan/shaders/params.h"

namespace lockstep::vulkan {

namespace {

std::optional<uint32_t> typed_code(ir::Op op) {
  switch (op) {
    case ir::Op::Cast: return TE_CAST;
    case ir::Op::Equal: return TE_EQUAL;
    case ir::Op::Less: return TE_LESS;
    case ir::Op::LessOrEqual: return TE_LESS_EQUAL;
    case ir::Op::Greater: return TE_GREATER;
    case ir::Op::GreaterOrEqual: return TE_GREATER_EQUAL;
    case ir::Op::And: return TE_AND;
    case ir::Op::Or: return TE_OR;
    case ir::Op::Xor: return TE_XOR;
    case ir::Op::Not: return TE_NOT;
    case ir::Op::Where: return TE_WHERE;
    case ir::Op::Add: return TE_ADD;
    case ir::Op::Sub: return TE_SUB;
    case ir::Op::Mul: return TE_MUL;
    case ir::Op::Div: return TE_DIV;
    case ir::Op::Neg: return TE_NEG;
    case ir::Op::Abs: return TE_ABS;
    case ir::Op::Relu: return TE_RELU;
    case ir::Op::Clip: return TE_CLIP;
    case ir::Op::Pow: return 0;  // pow.comp
    default: return std::nullopt;
  }
}

bool integer_form(ir::Op op) {
  switch (op) {
    case ir::Op::Add: case ir::Op::Sub: case ir::Op::Mul: case ir::Op::Div: case ir::Op::Neg: case ir::Op::Abs:
    case ir::Op::Relu: case ir::Op::Clip:
      return true;
    default:
      return false;
  }
}

}  // namespace

int32_t type_code(DType t) {
  switch (t) {
    case DType::Float32: case DType::Float64: return TY_F32;
    case DType::Int32: return TY_I32;
    case DType::Int64: return TY_I64;
    case DType::Bool: return TY_BOOL;
  }
  return TY_F32;
}

bool is_typed_elementwise(const ir::Graph& graph, const ir::Node& node) {
  if (!typed_code(node.op)) return false;
  if (node.op == ir::Op::Pow) {  // ew_program's float32 Pow with a constant integral or 0.5 exponent, else pow.comp
    if (node.inputs.size() != 2 || node.inputs[0] == ir::kNoValue || node.inputs[1] == ir::kNoValue) return false;
    for (ir::ValueId v : node.inputs)
      if (graph.value(v).dtype != DType::Float32 && graph.value(v).dtype != DType::Float64) return true;
    return pow_exponent_unsupported(graph, node.inputs[1]).has_value();
  }
  if (!integer_form(node.op)) return true;
  return node.outputs.size() == 1 && node.outputs[0] != ir::kNoValue && !is_floating(graph.value(node.outputs[0]).dtype);
}

bool checks_values(const ir::Graph& graph, const ir::Node& node) {
  if (is_indexing(node.op)) return true;
  return node.op == ir::Op::Div && is_typed_elementwise(graph, node);
}

std::optional<std::string> typed_elementwise_unsupported(const ir::Graph& graph, const ir::Node& node, bool int64, bool float64) {
  if (!int64) return std::string(ir::op_name(node.op)) + " needs shaderInt64 (integers are computed in int64), which this device lacks";
  if (node.op == ir::Op::Pow && !float64)
    return std::string("Pow other than float32 with a constant integral or 0.5 exponent needs shaderFloat64, which this device lacks");
  const size_t want = node.op == ir::Op::Where ? 3 : (node.op == ir::Op::Cast || node.op == ir::Op::Not || node.op == ir::Op::Neg ||
                                                      node.op == ir::Op::Abs || node.op == ir::Op::Relu)
                                                         ? 1 : 2;
  if (node.op == ir::Op::Clip) {  // x, [min], [max]: one-element bounds
    if (node.inputs.empty() || node.inputs.size() > 3 || node.inputs[0] == ir::kNoValue) return std::string("Clip with other arity");
    for (size_t i = 1; i < node.inputs.size(); ++i)
      if (node.inputs[i] != ir::kNoValue && num_elements(graph.value(node.inputs[i]).shape) != 1)
        return std::string("Clip bounds must have one element");
    return std::nullopt;
  }
  if (node.inputs.size() != want || node.outputs.size() != 1) return std::string(ir::op_name(node.op)) + " with other arity";
  for (ir::ValueId v : node.inputs)
    if (v == ir::kNoValue) return std::string("an omitted input");
  if (!node.epilogue.empty() && graph.value(node.outputs[0]).dtype != DType::Float32)
    return std::string("an epilogue on a non-float node");  // a float Pow's runs after it, in place
  for (ir::ValueId v : node.inputs)
    if (graph.value(v).shape.size() > TE_MAX_RANK) return std::string("tensors of rank > 6 are not supported on vulkan");
  return std::nullopt;
}

void record_typed_elementwise(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const ir::ValueId out = node.outputs[0];
  const Shape& out_shape = g.value(out).shape;
  const int64_t n = num_elements(out_shape);
  if (n == 0) return;
  std::vector<int64_t> dims = out_shape;
  std::vector<std::vector<int64_t>> strides(3, std::vector<int64_t>(out_shape.size(), 0));
  for (size_t k = 0; k < node.inputs.size(); ++k)
    if (node.inputs[k] != ir::kNoValue) strides[k] = broadcast_strides(g.value(node.inputs[k]).shape, out_shape);
  std::vector<int64_t> out_strides = contiguous_strides(out_shape);
  collapse_dims(dims, {&out_strides, &strides[0], &strides[1], &strides[2]});
  std::vector<uint32_t> p(TE_WORDS, 0);
  p[TE_N] = word(n, node);
  p[TE_RANK] = static_cast<uint32_t>(dims.size());
  for (size_t d = 0; d < TE_MAX_RANK; ++d) p[TE_DIMS + d] = d < dims.size() ? word(dims[d], node) : 1;
  p[TE_OUT] = ctx.at(out);
  p[TE_ERR] = checks_values(g, node) ? ctx.error_slot(node_index) : 0u;
  Dispatch dispatch;
  dispatch.shader = node.op == ir::Op::Pow ? "pow" : "typed_ew";
  dispatch.spec[0] = static_cast<int32_t>(*typed_code(node.op));
  for (size_t k = 0; k < 3; ++k) {
    const size_t w = TE_IN + k * TE_IN_WORDS;
    if (k < node.inputs.size() && node.inputs[k] != ir::kNoValue) {
      p[w] = ctx.at(node.inputs[k]);
      dispatch.spec[1 + k] = type_code(g.value(node.inputs[k]).dtype);
    } else {
      dispatch.spec[1 + k] = TY_NONE;
    }
    for (size_t d = 0; d < dims.size(); ++d) p[w + 1 + d] = word(strides[k][d], node);
  }
  dispatch.spec[4] = type_code(g.value(out).dtype);
  dispatch.base = ctx.add_params(p);
  dispatch.groups[0] = groups_for(n, 256);
  program.dispatches.push_back(dispatch);
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::vulkan
