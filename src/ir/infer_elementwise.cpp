// Shape rules of the comparison and logical ops, the unary float math ops and Clip.
#include "ir/infer_rules.h"

namespace lockstep::ir {

namespace {

void require_same(const Node& node, DType a, DType b) {
  if (a != b)
    fail(node, ErrorCode::DTypeMismatch,
         std::string("inputs have different dtypes: ") + dtype_name(a) + " and " + dtype_name(b));
}

void require(const Node& node, bool ok, DType got, const char* wanted) {
  if (!ok)
    fail(node, ErrorCode::DTypeMismatch,
         std::string("expects ") + wanted + " inputs, got " + dtype_name(got));
}

}  // namespace

std::vector<ValueType> infer_logical_and_math(const Graph& graph, const Node& node) {
  const Value& x = required_input(graph, node, 0);
  switch (node.op) {
    case Op::Less: case Op::LessOrEqual: case Op::Greater: case Op::GreaterOrEqual: {
      const Value& y = required_input(graph, node, 1);
      require(node, x.dtype != DType::Bool, x.dtype, "numeric (float, int32, int64)");
      require_same(node, x.dtype, y.dtype);
      return {{DType::Bool, node_broadcast(node, x.shape, y.shape)}};
    }
    case Op::And: case Op::Or: case Op::Xor: {
      const Value& y = required_input(graph, node, 1);
      require(node, x.dtype == DType::Bool, x.dtype, "bool");
      require(node, y.dtype == DType::Bool, y.dtype, "bool");
      return {{DType::Bool, node_broadcast(node, x.shape, y.shape)}};
    }
    case Op::Not:
      require(node, x.dtype == DType::Bool, x.dtype, "bool");
      return {{DType::Bool, x.shape}};
    case Op::Abs:
      require(node, x.dtype != DType::Bool, x.dtype, "numeric (float, int32, int64)");
      return {{x.dtype, x.shape}};
    case Op::Erf: case Op::Softplus: case Op::Ceil: case Op::Floor: case Op::Reciprocal:
      require(node, is_floating(x.dtype), x.dtype, "floating");
      return {{x.dtype, x.shape}};
    case Op::Clip:
      require(node, x.dtype != DType::Bool, x.dtype, "numeric (float, int32, int64)");
      for (size_t i = 1; i < 3; ++i) {
        if (i >= node.inputs.size() || node.inputs[i] == kNoValue) continue;
        const Value& bound = graph.value(node.inputs[i]);
        require_same(node, x.dtype, bound.dtype);
        if (bound.shape_known() && num_elements(bound.shape) != 1)
          fail(node, ErrorCode::ShapeMismatch,
               std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " + shape_str(bound.shape));
      }
      return {{x.dtype, x.shape}};
    default:
      fail(node, ErrorCode::Internal, "not a comparison, logical or float-math op");
  }
}

}  // namespace lockstep::ir
