#include "ir/infer_rules.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace lockstep::ir {

namespace {
std::string ints_str(const std::vector<int64_t>& v) {
  return shape_str(v);
}

int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}
}  // namespace

void fail(const Node& node, ErrorCode code, const std::string& message) {
  throw Error(code, std::string(op_name(node.op)) + " node '" + node.name + "': " + message,
              node.name, op_name(node.op));
}

const Value& required_input(const Graph& graph, const Node& node, size_t i) {
  if (i >= node.inputs.size() || node.inputs[i] == kNoValue)
    fail(node, ErrorCode::InvalidModel, "required input " + std::to_string(i) + " is missing");
  return graph.value(node.inputs[i]);
}

int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank, const char* what,
                       bool inclusive) {
  int64_t hi = inclusive ? rank + 1 : rank;
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= hi)
    fail(node, ErrorCode::UnsupportedAttribute,
         std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
             std::to_string(rank));
  return a;
}

std::vector<int64_t> tensor_ints(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.element_as_int(i);
  return v;
}

double attr_double(float value) {
  if (!std::isfinite(value)) return value;
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf) - 1, value);
  *res.ptr = '\0';
  return std::strtod(buf, nullptr);
}

std::vector<SliceDim> slice_dims(const Node& node, const Shape& x,
                                 const std::vector<int64_t>& starts,
                                 const std::vector<int64_t>& ends, const std::vector<int64_t>* axes,
                                 const std::vector<int64_t>* steps) {
  int64_t rank = static_cast<int64_t>(x.size());
  std::vector<SliceDim> dims(x.size());
  for (size_t d = 0; d < x.size(); ++d) dims[d] = {0, 1, x[d]};
  size_t n = starts.size();
  if (ends.size() != n || (axes && axes->size() != n) || (steps && steps->size() != n))
    fail(node, ErrorCode::ShapeMismatch, "starts, ends, axes and steps must have the same length");
  std::vector<bool> seen(x.size(), false);
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = normalize_axis(node, axes ? (*axes)[i] : static_cast<int64_t>(i), rank, "axis");
    if (seen[static_cast<size_t>(axis)])
      fail(node, ErrorCode::UnsupportedAttribute, "axis repeated in axes");
    seen[static_cast<size_t>(axis)] = true;
    int64_t dim = x[static_cast<size_t>(axis)];
    int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0) fail(node, ErrorCode::UnsupportedAttribute, "slice step must not be 0");
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;  // INT64_MIN + dim cannot overflow
    if (end < 0) end += dim;
    int64_t count = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      if (end > start) count = (end - start - 1) / step + 1;
    } else if (dim > 0) {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      int64_t magnitude =
          step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
      if (start > end) count = (start - end - 1) / magnitude + 1;
    }
    dims[static_cast<size_t>(axis)] = {start, step, count};
  }
  return dims;
}

int64_t split_axis(const Node& node, int64_t rank) {
  return normalize_axis(node, node.attrs.get_int("axis", 0), rank, "axis");
}

std::vector<int64_t> split_sizes(const Node& node, const Shape& x,
                                 const std::vector<int64_t>* sizes) {
  int64_t dim = x[static_cast<size_t>(split_axis(node, static_cast<int64_t>(x.size())))];
  size_t outputs = node.outputs.size();
  if (sizes && !sizes->empty()) {
    int64_t total = 0;
    for (int64_t s : *sizes) {
      if (s < 0) fail(node, ErrorCode::ShapeMismatch, "negative split size");
      total += s;
    }
    if (sizes->size() != outputs || total != dim)
      fail(node, ErrorCode::ShapeMismatch,
           "split sizes " + ints_str(*sizes) + " do not cover dimension " + std::to_string(dim) +
               " with " + std::to_string(outputs) + " outputs");
    return *sizes;
  }
  int64_t n = node.attrs.get_int("num_outputs", static_cast<int64_t>(outputs));
  if (n != static_cast<int64_t>(outputs) || n < 1)
    fail(node, ErrorCode::ShapeMismatch,
         "num_outputs " + std::to_string(n) + " does not match the node's " +
             std::to_string(outputs) + " outputs");
  if (!node.attrs.has("num_outputs") && dim % n != 0)
    fail(node, ErrorCode::ShapeMismatch,
         "dimension " + std::to_string(dim) + " does not split evenly into " + std::to_string(n));
  int64_t chunk = ceil_div(dim, n);
  std::vector<int64_t> result;
  for (int64_t i = 0, left = dim; i < n; ++i) {
    result.push_back(std::min(chunk, left));
    left -= result.back();
  }
  return result;
}

Shape reshape_shape(const Node& node, const Shape& x, const std::vector<int64_t>& target) {
  bool allowzero = node.attrs.get_int("allowzero", 0) != 0;
  Shape out(target.size());
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowzero) {
      if (i >= x.size())
        fail(node, ErrorCode::ShapeMismatch, "shape " + ints_str(target) + " copies a missing dim");
      d = x[i];
    }
    if (d == -1) {
      if (infer_at >= 0)
        fail(node, ErrorCode::ShapeMismatch, "shape " + ints_str(target) + " has two -1 dims");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < 0)
      fail(node, ErrorCode::ShapeMismatch, "shape " + ints_str(target) + " has a negative dim");
    out[i] = d;
    known *= d;
  }
  int64_t total = num_elements(x);
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      fail(node, ErrorCode::ShapeMismatch,
           "cannot reshape " + shape_str(x) + " to " + ints_str(target));
    out[static_cast<size_t>(infer_at)] = total / known;
  } else if (known != total) {
    fail(node, ErrorCode::ShapeMismatch,
         "cannot reshape " + shape_str(x) + " to " + ints_str(target));
  }
  return out;
}

Shape squeeze_shape(const Node& node, const Shape& x, const std::vector<int64_t>* axes) {
  int64_t rank = static_cast<int64_t>(x.size());
  std::vector<bool> drop(x.size(), false);
  if (!axes || axes->empty()) {
    for (size_t i = 0; i < x.size(); ++i) drop[i] = x[i] == 1;
  } else {
    for (int64_t a : *axes) {
      int64_t ax = normalize_axis(node, a, rank, "axis");
      if (x[static_cast<size_t>(ax)] != 1)
        fail(node, ErrorCode::ShapeMismatch,
             "cannot squeeze axis " + std::to_string(a) + " of size " +
                 std::to_string(x[static_cast<size_t>(ax)]));
      drop[static_cast<size_t>(ax)] = true;
    }
  }
  Shape out;
  for (size_t i = 0; i < x.size(); ++i)
    if (!drop[i]) out.push_back(x[i]);
  return out;
}

Shape unsqueeze_shape(const Node& node, const Shape& x, const std::vector<int64_t>& axes) {
  int64_t rank = static_cast<int64_t>(x.size() + axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    int64_t ax = normalize_axis(node, a, rank, "axis");
    if (inserted[static_cast<size_t>(ax)])
      fail(node, ErrorCode::UnsupportedAttribute, "axis repeated in axes");
    inserted[static_cast<size_t>(ax)] = true;
  }
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(inserted[static_cast<size_t>(i)] ? 1 : x[next++]);
  return out;
}

std::vector<int64_t> transpose_perm(const Node& node, int64_t rank) {
  std::vector<int64_t> perm = node.attrs.get_ints("perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < static_cast<int64_t>(sorted.size()); ++i)
    if (sorted[static_cast<size_t>(i)] != i || static_cast<int64_t>(perm.size()) != rank)
      fail(node, ErrorCode::UnsupportedAttribute,
           "perm " + ints_str(perm) + " is not a permutation of rank " + std::to_string(rank));
  return perm;
}

Shape concat_shape(const Node& node, const std::vector<Shape>& shapes, int64_t* axis_out) {
  if (shapes.empty()) fail(node, ErrorCode::ShapeMismatch, "Concat needs at least one input");
  int64_t rank = static_cast<int64_t>(shapes[0].size());
  int64_t axis = normalize_axis(node, node.attrs.get_int("axis", 0), rank, "axis");
  Shape out = shapes[0];
  out[static_cast<size_t>(axis)] = 0;
  for (const Shape& s : shapes) {
    bool ok = static_cast<int64_t>(s.size()) == rank;
    for (int64_t d = 0; ok && d < rank; ++d)
      ok = d == axis || s[static_cast<size_t>(d)] == out[static_cast<size_t>(d)];
    if (!ok)
      fail(node, ErrorCode::ShapeMismatch,
           "inputs " + shape_str(shapes[0]) + " and " + shape_str(s) + " differ outside axis " +
               std::to_string(axis));
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  if (axis_out) *axis_out = axis;
  return out;
}

Shape flatten_shape(const Node& node, const Shape& x) {
  int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = normalize_axis(node, node.attrs.get_int("axis", 1), rank, "axis", true);
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? a : b) *= x[static_cast<size_t>(i)];
  return {a, b};
}

PadAmounts pad_amounts(const Node& node, const Shape& x, const std::vector<int64_t>& pads,
                       const std::vector<int64_t>* axes) {
  int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> ax;
  if (axes && !axes->empty()) {
    for (int64_t a : *axes) ax.push_back(normalize_axis(node, a, rank, "axis"));
  } else {
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  }
  if (pads.size() != 2 * ax.size())
    fail(node, ErrorCode::ShapeMismatch,
         "pads " + ints_str(pads) + " must have 2 values per padded axis (" +
             std::to_string(ax.size()) + " axes)");
  PadAmounts p{std::vector<int64_t>(x.size(), 0), std::vector<int64_t>(x.size(), 0)};
  for (size_t i = 0; i < ax.size(); ++i) {
    p.begin[static_cast<size_t>(ax[i])] = pads[i];
    p.end[static_cast<size_t>(ax[i])] = pads[i + ax.size()];
  }
  for (size_t d = 0; d < x.size(); ++d)
    if (x[d] + p.begin[d] + p.end[d] < 0)
      fail(node, ErrorCode::ShapeMismatch,
           "pads " + ints_str(pads) + " crop more than dimension " + std::to_string(d));
  return p;
}

std::string pad_mode(const Node& node) {
  std::string mode = node.attrs.get_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    fail(node, ErrorCode::UnsupportedAttribute,
         "Pad mode '" + mode + "' is not supported (constant, reflect, edge)");
  return mode;
}

Shape gather_shape(const Node& node, const Shape& data, const Shape& indices, int64_t* axis_out) {
  int64_t axis = normalize_axis(node, node.attrs.get_int("axis", 0),
                                static_cast<int64_t>(data.size()), "axis");
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  if (axis_out) *axis_out = axis;
  return out;
}

Shape node_broadcast(const Node& node, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(node, ErrorCode::ShapeMismatch,
           "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape matmul_shape(const Node& node, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty())
    fail(node, ErrorCode::ShapeMismatch, "MatMul operands must have rank >= 1");
  Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  int64_t k = a2.back(), kb = b2[b2.size() - 2];
  if (k != kb)
    fail(node, ErrorCode::ShapeMismatch,
         "MatMul inner dimensions differ: " + shape_str(a) + " x " + shape_str(b));
  Shape batch =
      node_broadcast(node, Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2));
  if (a.size() != 1) batch.push_back(a2[a2.size() - 2]);
  if (b.size() != 1) batch.push_back(b2.back());
  return batch;
}

Shape gemm_shape(const Node& node, const Shape& a, const Shape& b, const Shape* c) {
  if (a.size() != 2 || b.size() != 2)
    fail(node, ErrorCode::ShapeMismatch,
         "Gemm operands must be 2-D, got " + shape_str(a) + " and " + shape_str(b));
  bool ta = node.attrs.get_int("transA", 0) != 0, tb = node.attrs.get_int("transB", 0) != 0;
  int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (k != kb)
    fail(node, ErrorCode::ShapeMismatch,
         "Gemm inner dimensions differ: A " + shape_str(a) + " B " + shape_str(b));
  Shape out{m, n};
  if (c && node_broadcast(node, *c, out) != out)
    fail(node, ErrorCode::ShapeMismatch,
         "Gemm C " + shape_str(*c) + " does not broadcast to " + shape_str(out));
  return out;
}

std::pair<int64_t, int64_t> shape_range(const Node& node, int64_t rank) {
  int64_t start = node.attrs.get_int("start", 0), end = node.attrs.get_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {start, std::max(start, end)};
}

int64_t range_count(const Node& node, double start, double limit, double delta) {
  if (delta == 0) fail(node, ErrorCode::ShapeMismatch, "Range delta must not be 0");
  double n = std::ceil((limit - start) / delta);
  if (!(n >= 0)) return 0;
  if (n > 1e12) fail(node, ErrorCode::LimitExceeded, "Range has too many elements");
  return static_cast<int64_t>(n);
}

DType cast_target(const Node& node) {
  int64_t to = node.attrs.get_int("to", -1);
  switch (to) {
    case 1:
      return DType::Float32;
    case 6:
      return DType::Int32;
    case 7:
      return DType::Int64;
    case 9:
      return DType::Bool;
    case 11:
      return DType::Float64;
    default:
      fail(node, ErrorCode::UnsupportedAttribute,
           "Cast to ONNX type " + std::to_string(to) +
               " is not supported (1 float, 6 int32, 7 int64, 9 bool, 11 double)");
  }
}

int64_t softmax_axis(const Node& node, int64_t rank) {
  return normalize_axis(node, node.attrs.get_int("axis", -1), rank, "axis");
}

}  // namespace lockstep::ir
