// Output dtype and shape of every op, from input types and constant parameter inputs.
#include "ir/infer.h"

#include "ir/infer_rules.h"

namespace lockstep::ir {

namespace {

struct Inputs {
  const Graph& graph;
  const Node& node;

  bool has(size_t i) const { return i < node.inputs.size() && node.inputs[i] != kNoValue; }
  const Value& value(size_t i) const {
    if (!has(i))
      fail(node, ErrorCode::InvalidModel, "required input " + std::to_string(i) + " is missing");
    return graph.value(node.inputs[i]);
  }
  const Shape& shape(size_t i) const { return value(i).shape; }
  DType dtype(size_t i) const { return value(i).dtype; }
  // A parameter input (Reshape shape, Slice starts, ...) must be constant by now.
  std::vector<int64_t> ints(size_t i) const {
    const Value& v = value(i);
    if (!v.constant.defined())
      fail(node, ErrorCode::UnsupportedAttribute,
           "parameter input " + std::to_string(i) + " ('" + v.name +
               "') is not a compile-time constant");
    return tensor_ints(v.constant);
  }
  std::optional<std::vector<int64_t>> optional_ints(size_t i) const {
    if (!has(i)) return std::nullopt;
    return ints(i);
  }
};

void require_same_dtype(const Node& node, DType a, DType b) {
  if (a != b)
    fail(node, ErrorCode::DTypeMismatch,
         std::string("inputs have different dtypes: ") + dtype_name(a) + " and " + dtype_name(b));
}

void require_floating(const Node& node, DType dtype) {
  if (!is_floating(dtype))
    fail(node, ErrorCode::DTypeMismatch,
         std::string("expects a floating input, got ") + dtype_name(dtype));
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(ErrorCode::ShapeMismatch,
                  "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<ValueType> infer_node(const Graph& graph, const Node& node) {
  Inputs in{graph, node};
  auto one = [](DType d, Shape s) { return std::vector<ValueType>{{d, std::move(s)}}; };
  switch (node.op) {
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
      require_same_dtype(node, in.dtype(0), in.dtype(1));
      return one(in.dtype(0), node_broadcast(node, in.shape(0), in.shape(1)));
    case Op::Pow:
      return one(in.dtype(0), node_broadcast(node, in.shape(0), in.shape(1)));
    case Op::Equal:
      require_same_dtype(node, in.dtype(0), in.dtype(1));
      return one(DType::Bool, node_broadcast(node, in.shape(0), in.shape(1)));
    case Op::Where:
      if (in.dtype(0) != DType::Bool)
        fail(node, ErrorCode::DTypeMismatch, "Where condition must be bool");
      require_same_dtype(node, in.dtype(1), in.dtype(2));
      return one(in.dtype(1),
                 node_broadcast(node, in.shape(0), node_broadcast(node, in.shape(1), in.shape(2))));
    case Op::Tanh:
    case Op::Sigmoid:
    case Op::LeakyRelu:
    case Op::Exp:
    case Op::Sqrt:
      require_floating(node, in.dtype(0));
      return one(in.dtype(0), in.shape(0));
    case Op::Relu:
    case Op::Neg:
    case Op::Identity:
      if (node.op != Op::Identity && in.dtype(0) == DType::Bool)
        fail(node, ErrorCode::DTypeMismatch, "does not accept bool input");
      return one(in.dtype(0), in.shape(0));
    case Op::Cast:
      return one(cast_target(node), in.shape(0));
    case Op::Less: case Op::LessOrEqual: case Op::Greater: case Op::GreaterOrEqual:
    case Op::And: case Op::Or: case Op::Xor: case Op::Not:
    case Op::Erf: case Op::Softplus: case Op::Ceil: case Op::Floor: case Op::Abs: case Op::Reciprocal:
    case Op::Clip:
      return infer_logical_and_math(graph, node);
    case Op::Conv: {
      require_floating(node, in.dtype(0));
      ConvGeometry g = conv_geometry(node, in.shape(0), in.shape(1));
      if (in.has(2) && in.shape(2) != Shape{g.out_shape[1]})
        fail(
            node, ErrorCode::ShapeMismatch,
            "bias " + shape_str(in.shape(2)) + " must be [" + std::to_string(g.out_shape[1]) + "]");
      return one(in.dtype(0), g.out_shape);
    }
    case Op::ConvTranspose: {
      require_floating(node, in.dtype(0));
      ConvGeometry g = conv_transpose_geometry(node, in.shape(0), in.shape(1));
      if (in.has(2) && in.shape(2) != Shape{g.out_shape[1]})
        fail(
            node, ErrorCode::ShapeMismatch,
            "bias " + shape_str(in.shape(2)) + " must be [" + std::to_string(g.out_shape[1]) + "]");
      return one(in.dtype(0), g.out_shape);
    }
    case Op::MatMul:
      require_same_dtype(node, in.dtype(0), in.dtype(1));
      return one(in.dtype(0), matmul_shape(node, in.shape(0), in.shape(1)));
    case Op::Gemm: {
      require_same_dtype(node, in.dtype(0), in.dtype(1));
      Shape c = in.has(2) ? in.shape(2) : Shape{};
      return one(in.dtype(0), gemm_shape(node, in.shape(0), in.shape(1), in.has(2) ? &c : nullptr));
    }
    case Op::Softmax:
      require_floating(node, in.dtype(0));
      softmax_axis(node, static_cast<int64_t>(in.shape(0).size()));
      return one(in.dtype(0), in.shape(0));
    case Op::Slice: {
      auto axes = in.optional_ints(3);
      auto steps = in.optional_ints(4);
      auto dims = slice_dims(node, in.shape(0), in.ints(1), in.ints(2), axes ? &*axes : nullptr,
                             steps ? &*steps : nullptr);
      Shape out;
      for (const auto& d : dims) out.push_back(d.count);
      return one(in.dtype(0), out);
    }
    case Op::Split: {
      auto sizes = in.optional_ints(1);
      Shape x = in.shape(0);
      int64_t axis = split_axis(node, static_cast<int64_t>(x.size()));
      std::vector<ValueType> out;
      for (int64_t s : split_sizes(node, x, sizes ? &*sizes : nullptr)) {
        x[static_cast<size_t>(axis)] = s;
        out.push_back({in.dtype(0), x});
      }
      return out;
    }
    case Op::Concat: {
      std::vector<Shape> shapes;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        require_same_dtype(node, in.dtype(0), in.dtype(i));
        shapes.push_back(in.shape(i));
      }
      return one(in.dtype(0), concat_shape(node, shapes, nullptr));
    }
    case Op::Reshape:
      return one(in.dtype(0), reshape_shape(node, in.shape(0), in.ints(1)));
    case Op::Flatten:
      return one(in.dtype(0), flatten_shape(node, in.shape(0)));
    case Op::Transpose: {
      const Shape& x = in.shape(0);
      Shape out;
      for (int64_t p : transpose_perm(node, static_cast<int64_t>(x.size())))
        out.push_back(x[static_cast<size_t>(p)]);
      return one(in.dtype(0), out);
    }
    case Op::Unsqueeze:
      return one(in.dtype(0), unsqueeze_shape(node, in.shape(0), in.ints(1)));
    case Op::Squeeze: {
      auto axes = in.optional_ints(1);
      return one(in.dtype(0), squeeze_shape(node, in.shape(0), axes ? &*axes : nullptr));
    }
    case Op::Pad: {
      pad_mode(node);
      std::vector<int64_t> pads = in.has(1) ? in.ints(1) : node.attrs.get_ints("pads");
      auto axes = in.optional_ints(3);
      const Shape& x = in.shape(0);
      PadAmounts p = pad_amounts(node, x, pads, axes ? &*axes : nullptr);
      Shape out = x;
      for (size_t d = 0; d < x.size(); ++d) out[d] += p.begin[d] + p.end[d];
      return one(in.dtype(0), out);
    }
    case Op::Gather:
      if (in.dtype(1) != DType::Int64 && in.dtype(1) != DType::Int32)
        fail(node, ErrorCode::DTypeMismatch, "Gather indices must be int32 or int64");
      return one(in.dtype(0), gather_shape(node, in.shape(0), in.shape(1), nullptr));
    case Op::Expand:
      return one(in.dtype(0), node_broadcast(node, in.shape(0), in.ints(1)));
    case Op::Shape: {
      const Shape& x = in.shape(0);
      auto [start, end] = shape_range(node, static_cast<int64_t>(x.size()));
      return one(DType::Int64, {end - start});
    }
    case Op::ConstantOfShape: {
      const Tensor* value = node.attrs.get_tensor("value");
      if (value && value->numel() != 1)
        fail(node, ErrorCode::UnsupportedAttribute, "ConstantOfShape value must hold one element");
      return one(value ? value->dtype() : DType::Float32, in.ints(0));
    }
    case Op::Range: {
      for (size_t i = 0; i < 3; ++i)
        if (!in.shape(i).empty() && num_elements(in.shape(i)) != 1)
          fail(node, ErrorCode::ShapeMismatch, "Range inputs must be scalars");
      const Value& s = in.value(0);
      const Value& l = in.value(1);
      const Value& d = in.value(2);
      if (!s.constant.defined() || !l.constant.defined() || !d.constant.defined())
        fail(node, ErrorCode::UnsupportedAttribute, "Range inputs must be compile-time constants");
      int64_t n = range_count(node, s.constant.element_as_double(0),
                              l.constant.element_as_double(0), d.constant.element_as_double(0));
      return one(s.dtype, {n});
    }
    // Reductions (infer_reduce.cpp)
    case Op::ReduceMean: case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin: case Op::CumSum:
      return infer_reduce(graph, node);
    // Indexing (infer_indexing.cpp)
    case Op::NonZero: case Op::ScatterND: case Op::GatherND: case Op::GatherElements:
      return infer_indexing(graph, node);
    // Random (infer_random.cpp)
    case Op::RandomNormal: case Op::RandomNormalLike: case Op::RandomUniform: case Op::RandomUniformLike:
      return infer_random(graph, node);
  }
  fail(node, ErrorCode::UnsupportedOp, "no shape rule");
}

}  // namespace lockstep::ir
