#include "ir/op.h"

#include <algorithm>
#include <array>
#include <sstream>

namespace lockstep::ir {

namespace {

struct OpInfo {
  const char* onnx_name;
  std::vector<std::string> attributes;
};

std::vector<std::string> split_words(const char* text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

const std::array<OpInfo, kOpCount>& op_table() {
  static const std::array<OpInfo, kOpCount> table = {{
#define LOCKSTEP_OP(name, onnx, attrs) OpInfo{onnx, split_words(attrs)},
#include "ir/ops.inc"
#undef LOCKSTEP_OP
  }};
  return table;
}

}  // namespace

const char* op_name(Op op) { return op_table()[static_cast<size_t>(op)].onnx_name; }

std::optional<Op> op_from_onnx(std::string_view onnx_name) {
  const auto& table = op_table();
  for (size_t i = 0; i < table.size(); ++i)
    if (onnx_name == table[i].onnx_name) return static_cast<Op>(i);
  return std::nullopt;
}

const std::vector<std::string>& op_attribute_names(Op op) {
  return op_table()[static_cast<size_t>(op)].attributes;
}

bool op_accepts_attribute(Op op, std::string_view attribute) {
  const auto& names = op_attribute_names(op);
  return std::find(names.begin(), names.end(), attribute) != names.end();
}

bool is_unary_elementwise(Op op) {
  switch (op) {
    case Op::Tanh: case Op::Sigmoid: case Op::Relu: case Op::LeakyRelu: case Op::Exp:
    case Op::Neg: case Op::Sqrt: case Op::Identity:
    case Op::Erf: case Op::Softplus: case Op::Ceil: case Op::Floor: case Op::Abs: case Op::Reciprocal:
      return true;
    default:
      return false;
  }
}

bool is_binary_elementwise(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow:
      return true;
    default:
      return false;
  }
}

bool is_parameter_input(Op op, size_t index) {
  switch (op) {
    case Op::Reshape: case Op::Split: case Op::Squeeze: case Op::Unsqueeze: case Op::Expand:
      return index == 1;
    case Op::Slice: return index >= 1 && index <= 4;
    case Op::Pad: return index >= 1 && index <= 3;
    case Op::ConstantOfShape: return index == 0;
    case Op::Range: return index <= 2;
    // Reductions and CumSum: the axes
    case Op::ReduceMean: case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin: case Op::CumSum:
      return index == 1;
    default: return false;
  }
}

bool has_data_dependent_shape(Op op) { return op == Op::NonZero; }

bool is_random(Op op) {
  return op == Op::RandomNormal || op == Op::RandomNormalLike || op == Op::RandomUniform ||
         op == Op::RandomUniformLike;
}

}  // namespace lockstep::ir
