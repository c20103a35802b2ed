// Element-wise nodes and epilogues as programs of ew_program.comp: acc = src, then each step.
// A node's own op is the first step, its fused epilogue the next ones; more than EW_MAX_STEPS
// steps continue in further dispatches in place on the output.
#include <cmath>
#include <cstring>

#include "backends/vulkan/families.h"
#include "backends/vulkan/shaders/params.h"

namespace lockstep::vulkan {

static_assert(EW_MAX_STEPS <= kMaxSpec, "one specialization constant per step");

namespace {

constexpr float kLeakyReluDefaultAlpha = 0.01f;  // ONNX's default

std::optional<uint32_t> ew_code(ir::Op op) {
  switch (op) {
    case ir::Op::Add: return EW_ADD;
    case ir::Op::Sub: return EW_SUB;
    case ir::Op::Mul: return EW_MUL;
    case ir::Op::Div: return EW_DIV;
    case ir::Op::Tanh: return EW_TANH;
    case ir::Op::Sigmoid: return EW_SIGMOID;
    case ir::Op::Relu: return EW_RELU;
    case ir::Op::LeakyRelu: return EW_LEAKY_RELU;
    case ir::Op::Exp: return EW_EXP;
    case ir::Op::Neg: return EW_NEG;
    case ir::Op::Sqrt: return EW_SQRT;
    case ir::Op::Abs: return EW_ABS;
    case ir::Op::Reciprocal: return EW_RECIPROCAL;
    case ir::Op::Floor: return EW_FLOOR;
    case ir::Op::Ceil: return EW_CEIL;
    case ir::Op::Erf: return EW_ERF;
    case ir::Op::Softplus: return EW_SOFTPLUS;
    case ir::Op::Pow: return EW_POW;
    default: return std::nullopt;
  }
}

bool is_binary(uint32_t code) {
  return code == EW_ADD || code == EW_SUB || code == EW_MUL || code == EW_DIV || code == EW_POW;
}

constexpr double kMaxPowExponent = 64;  // repeated squaring: at most 2 log2(64) = 12 roundings

struct Step {
  uint32_t code = 0;
  ir::ValueId operand = ir::kNoValue;
  bool operand_is_lhs = false;
  float alpha = 0.0f;
};

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Appends the dispatches computing out = steps(src), src broadcast to out's shape.
void push_program(Context& ctx, NodeProgram& program, const ir::Node& node, ir::ValueId src, ir::ValueId out,
                  const std::vector<Step>& steps) {
  const ir::Graph& g = ctx.graph();
  const Shape& out_shape = g.value(out).shape;
  const int64_t n = num_elements(out_shape);
  if (n == 0) return;
  for (size_t first = 0; first < steps.size() || first == 0; first += EW_MAX_STEPS) {
    const size_t count = std::min<size_t>(EW_MAX_STEPS, steps.size() - first);
    const ir::ValueId from = first == 0 ? src : out;  // later chunks continue in place
    std::vector<int64_t> dims = out_shape;
    std::vector<int64_t> out_strides = contiguous_strides(out_shape);
    std::vector<int64_t> src_strides = broadcast_strides(g.value(from).shape, out_shape);
    std::vector<std::vector<int64_t>> op_strides(count);
    std::vector<std::vector<int64_t>*> all{&out_strides, &src_strides};
    for (size_t s = 0; s < count; ++s) {
      const Step& step = steps[first + s];
      op_strides[s] = step.operand == ir::kNoValue ? std::vector<int64_t>(out_shape.size(), 0)
                                                   : broadcast_strides(g.value(step.operand).shape, out_shape);
      all.push_back(&op_strides[s]);
    }
    collapse_dims(dims, all);
    if (dims.size() > EW_MAX_RANK)
      throw Error(ErrorCode::Internal, "vulkan: element-wise program of rank " + std::to_string(dims.size()), node.name,
                  ir::op_name(node.op));
    std::vector<uint32_t> p(EW_WORDS, 0);
    p[EW_N] = word(n, node);
    p[EW_RANK] = static_cast<uint32_t>(dims.size());
    for (size_t d = 0; d < EW_MAX_RANK; ++d) p[EW_DIMS + d] = d < dims.size() ? word(dims[d], node) : 1;
    p[EW_OUT] = ctx.at(out);
    p[EW_SRC] = ctx.at(from);
    for (size_t d = 0; d < dims.size(); ++d) p[EW_SRC + 1 + d] = word(src_strides[d], node);
    p[EW_NSTEPS] = static_cast<uint32_t>(count);
    for (size_t s = 0; s < count; ++s) {
      const Step& step = steps[first + s];
      const size_t w = EW_STEPS + s * EW_STEP_WORDS;
      p[w] = step.code;
      p[w + 2] = float_bits(step.alpha);
      p[w + 3] = step.operand != ir::kNoValue ? ctx.at(step.operand) : 0;
      for (size_t d = 0; d < dims.size(); ++d) p[w + 4 + d] = word(op_strides[s][d], node);
    }
    Dispatch dispatch;
    dispatch.shader = "ew_program";
    for (size_t s = 0; s < count; ++s) {
      const Step& step = steps[first + s];
      dispatch.spec[s] = static_cast<int32_t>(step.code | (step.operand != ir::kNoValue ? EW_HAS_OPERAND : 0u) |
                                              (step.operand_is_lhs ? EW_OPERAND_LHS : 0u));
    }
    dispatch.base = ctx.add_params(p);
    dispatch.groups[0] = groups_for(n, 256);
    program.dispatches.push_back(dispatch);
    if (steps.empty()) break;
  }
}

std::vector<Step> epilogue_steps(const ir::Node& node) {
  std::vector<Step> steps;
  for (const auto& e : node.epilogue) {
    Step s;
    s.code = *ew_code(e.op);
    s.operand = e.operand;
    s.operand_is_lhs = e.operand_is_lhs;
    s.alpha = e.alpha;
    steps.push_back(s);
  }
  return steps;
}

}  // namespace

std::optional<std::string> epilogue_step_unsupported(ir::Op op) {
  if (!ew_code(op)) return std::string(ir::op_name(op)) + " is not implemented on vulkan yet";
  return std::nullopt;
}

std::optional<std::string> pow_exponent_unsupported(const ir::Graph& graph, ir::ValueId exponent) {
  const ir::Value& e = graph.value(exponent);
  if (e.dtype != DType::Float32 && e.dtype != DType::Float64)
    return std::string("Pow with a ") + dtype_name(e.dtype) + " exponent is not implemented on vulkan (float32)";
  if (!e.constant.defined()) return std::string("Pow with a run-time exponent is not implemented on vulkan (constant exponents only)");
  for (int64_t i = 0; i < e.constant.numel(); ++i) {
    const double y = e.constant.element_as_double(i);
    if (y != 0.5 && (y != std::floor(y) || std::fabs(y) > kMaxPowExponent))
      return "Pow with exponent " + std::to_string(y) + " is not implemented on vulkan (integers |n| <= 64 and 0.5)";
  }
  return std::nullopt;
}

std::optional<std::string> elementwise_unsupported(const ir::Graph& graph, const ir::Node& node) {
  if (node.op == ir::Op::Clip) {  // x, [min], [max]: one-element bounds, read as broadcast operands
    for (size_t i = 1; i < node.inputs.size(); ++i)
      if (node.inputs[i] != ir::kNoValue && num_elements(graph.value(node.inputs[i]).shape) != 1)
        return std::string("Clip bounds must have one element");
    return std::nullopt;
  }
  const auto code = ew_code(node.op);
  if (!code) return std::string(ir::op_name(node.op)) + " is not implemented on vulkan yet (reference and cpu run it)";
  if (node.outputs.size() != 1 || node.inputs.size() != (is_binary(*code) ? 2u : 1u))
    return std::string(ir::op_name(node.op)) + " with " + std::to_string(node.inputs.size()) + " inputs";
  for (ir::ValueId v : node.inputs)
    if (v == ir::kNoValue) return std::string("an omitted input");
  if (node.op == ir::Op::Pow) return pow_exponent_unsupported(graph, node.inputs[1]);
  return std::nullopt;
}

void record_elementwise(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Node& node = ctx.graph().nodes[static_cast<size_t>(node_index)];
  if (node.op == ir::Op::Clip) {  // the bounds as steps: max(x, min), then min(., max)
    std::vector<Step> steps;
    for (size_t i = 1; i < node.inputs.size() && i < 3; ++i)
      if (node.inputs[i] != ir::kNoValue) steps.push_back({i == 1 ? uint32_t{EW_CLIP_LO} : uint32_t{EW_CLIP_HI}, node.inputs[i], false, 0.0f});
    for (const Step& s : epilogue_steps(node)) steps.push_back(s);
    push_program(ctx, program, node, node.inputs[0], node.outputs[0], steps);
    return;
  }
  Step first;
  first.code = *ew_code(node.op);
  if (is_binary(first.code)) first.operand = node.inputs[1];
  if (node.op == ir::Op::LeakyRelu) first.alpha = node.attrs.get_float("alpha", kLeakyReluDefaultAlpha);
  std::vector<Step> steps{first};
  for (const Step& s : epilogue_steps(node)) steps.push_back(s);
  push_program(ctx, program, node, node.inputs[0], node.outputs[0], steps);
}

void record_epilogue(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Node& node = ctx.graph().nodes[static_cast<size_t>(node_index)];
  if (node.epilogue.empty()) return;
  push_program(ctx, program, node, node.outputs[0], node.outputs[0], epilogue_steps(node));
}

}  // namespace lockstep::vulkan
