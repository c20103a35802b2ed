// Indexing ops: NonZero, ScatterND, GatherND, GatherElements — shapes, attribute values and the
// index check every backend applies (an out-of-range index is an error, never a wild read).
#include "ir/infer_rules.h"

namespace lockstep::ir {

namespace {

void require_index_dtype(const Node& node, DType dtype) {
  if (dtype != DType::Int64 && dtype != DType::Int32)
    fail(node, ErrorCode::DTypeMismatch, std::string("indices must be int32 or int64, got ") + dtype_name(dtype));
}

}  // namespace

int64_t checked_index(const Node& node, int64_t index, int64_t dim, int64_t position, const char* what) {
  if (index < -dim || index >= dim)
    fail(node, ErrorCode::InvalidArgument,
         std::string(what) + " " + std::to_string(index) + " (element " + std::to_string(position) +
             " of the indices) is out of range [" + std::to_string(-dim) + ", " + std::to_string(dim) + ")");
  return index < 0 ? index + dim : index;
}

Shape gather_nd_shape(const Node& node, const Shape& data, const Shape& indices) {
  const int64_t b = node.attrs.get_int("batch_dims", 0);
  const auto r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (q < 1 || r < 1) fail(node, ErrorCode::ShapeMismatch, "data and indices must have rank >= 1");
  if (b < 0 || b >= q || b >= r)
    fail(node, ErrorCode::UnsupportedAttribute, "batch_dims " + std::to_string(b) + " must be in [0, min(rank) - 1]");
  const int64_t m = indices.back();
  if (m < 1 || m > r - b)
    fail(node, ErrorCode::ShapeMismatch, "the last dim of indices " + shape_str(indices) + " must be in [1, " +
                                             std::to_string(r - b) + "] for data " + shape_str(data));
  for (int64_t d = 0; d < b; ++d)
    if (data[static_cast<size_t>(d)] != indices[static_cast<size_t>(d)])
      fail(node, ErrorCode::ShapeMismatch, "batch dims of data " + shape_str(data) + " and indices " +
                                               shape_str(indices) + " differ");
  Shape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + b + m, data.end());
  return out;
}

void check_scatter_nd(const Node& node, const Shape& data, const Shape& indices, const Shape& updates) {
  if (indices.empty() || data.empty()) fail(node, ErrorCode::ShapeMismatch, "data and indices must have rank >= 1");
  const int64_t k = indices.back();
  if (k < 1 || k > static_cast<int64_t>(data.size()))
    fail(node, ErrorCode::ShapeMismatch, "the last dim of indices " + shape_str(indices) + " must be in [1, " +
                                             std::to_string(data.size()) + "]");
  Shape want(indices.begin(), indices.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  if (updates != want)
    fail(node, ErrorCode::ShapeMismatch,
         "updates " + shape_str(updates) + " must have shape " + shape_str(want) + " (indices " +
             shape_str(indices) + ", data " + shape_str(data) + ")");
}

std::string scatter_reduction(const Node& node) {
  std::string r = node.attrs.get_string("reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    fail(node, ErrorCode::UnsupportedAttribute, "reduction '" + r + "' is not one of none, add, mul, max, min");
  return r;
}

int64_t gather_elements_axis(const Node& node, const Shape& data, const Shape& indices) {
  const auto rank = static_cast<int64_t>(data.size());
  if (rank < 1 || indices.size() != data.size())
    fail(node, ErrorCode::ShapeMismatch, "data " + shape_str(data) + " and indices " + shape_str(indices) +
                                             " must have the same rank >= 1");
  const int64_t axis = normalize_axis(node, node.attrs.get_int("axis", 0), rank, "axis");
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices[static_cast<size_t>(d)] > data[static_cast<size_t>(d)])
      fail(node, ErrorCode::ShapeMismatch, "indices " + shape_str(indices) + " exceed data " + shape_str(data) +
                                               " in dim " + std::to_string(d));
  return axis;
}

std::vector<ValueType> infer_indexing(const Graph& graph, const Node& node) {
  const Value& data = required_input(graph, node, 0);
  switch (node.op) {
    case Op::NonZero: {
      const int64_t rows = std::max<int64_t>(static_cast<int64_t>(data.shape.size()), 1);
      int64_t count = -1;  // known only from the data: the run-time shape stage learns it
      if (data.constant.defined()) {
        count = 0;
        for (int64_t i = 0; i < data.constant.numel(); ++i) count += data.constant.element_as_double(i) != 0;
      }
      return {{DType::Int64, {rows, count}}};
    }
    case Op::ScatterND: {
      const Value& indices = required_input(graph, node, 1);
      const Value& updates = required_input(graph, node, 2);
      require_index_dtype(node, indices.dtype);
      if (updates.dtype != data.dtype)
        fail(node, ErrorCode::DTypeMismatch, "updates and data have different dtypes");
      std::string r = scatter_reduction(node);
      if (r != "none" && data.dtype == DType::Bool)
        fail(node, ErrorCode::DTypeMismatch, "reduction '" + r + "' does not accept bool data");
      check_scatter_nd(node, data.shape, indices.shape, updates.shape);
      return {{data.dtype, data.shape}};
    }
    case Op::GatherND: {
      const Value& indices = required_input(graph, node, 1);
      require_index_dtype(node, indices.dtype);
      return {{data.dtype, gather_nd_shape(node, data.shape, indices.shape)}};
    }
    case Op::GatherElements: {
      const Value& indices = required_input(graph, node, 1);
      require_index_dtype(node, indices.dtype);
      gather_elements_axis(node, data.shape, indices.shape);
      return {{data.dtype, indices.shape}};
    }
    default:
      fail(node, ErrorCode::Internal, "not an indexing op");
  }
}

}  // namespace lockstep::ir
