// Shape rules shared by ir::infer_node (static shapes) and the reference interpreter (actual
// tensors), so that both agree on how attributes and parameter inputs are read.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/infer.h"

namespace lockstep::ir {

[[noreturn]] void fail(const Node& node, ErrorCode code, const std::string& message);
// The value of the node's input `i`; InvalidModel naming the node when it is omitted.
const Value& required_input(const Graph& graph, const Node& node, size_t i);

// Axis in [-rank, rank) (or [-rank, rank] when `inclusive`) → [0, rank).
int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank, const char* what,
                       bool inclusive = false);
std::vector<int64_t> tensor_ints(const Tensor& t);
// Reads a float attribute as the shortest decimal that round-trips float32 (0.1f → 0.1):
// exporters write double hyper-parameters rounded to float32.
double attr_double(float value);

struct ConvGeometry {
  int64_t group = 1;
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end;
  Shape out_shape;  // [N, M, spatial...]
};
ConvGeometry conv_geometry(const Node& node, const Shape& x, const Shape& w);
ConvGeometry conv_transpose_geometry(const Node& node, const Shape& x, const Shape& w);

struct SliceDim {
  int64_t start = 0, step = 1, count = 0;
};
// One entry per dimension of `x` (untouched dims get start 0, step 1, full count).
std::vector<SliceDim> slice_dims(const Node& node, const Shape& x,
                                 const std::vector<int64_t>& starts,
                                 const std::vector<int64_t>& ends, const std::vector<int64_t>* axes,
                                 const std::vector<int64_t>* steps);

int64_t split_axis(const Node& node, int64_t rank);
std::vector<int64_t> split_sizes(const Node& node, const Shape& x,
                                 const std::vector<int64_t>* sizes);
Shape reshape_shape(const Node& node, const Shape& x, const std::vector<int64_t>& target);
Shape squeeze_shape(const Node& node, const Shape& x, const std::vector<int64_t>* axes);
Shape unsqueeze_shape(const Node& node, const Shape& x, const std::vector<int64_t>& axes);
std::vector<int64_t> transpose_perm(const Node& node, int64_t rank);
Shape concat_shape(const Node& node, const std::vector<Shape>& shapes, int64_t* axis_out);
Shape flatten_shape(const Node& node, const Shape& x);

struct PadAmounts {
  std::vector<int64_t> begin, end;  // per dim, negative crops
};
PadAmounts pad_amounts(const Node& node, const Shape& x, const std::vector<int64_t>& pads,
                       const std::vector<int64_t>* axes);
std::string pad_mode(
    const Node& node);  // "constant", "reflect" or "edge"; else UnsupportedAttribute

Shape gather_shape(const Node& node, const Shape& data, const Shape& indices, int64_t* axis_out);
Shape matmul_shape(const Node& node, const Shape& a, const Shape& b);
Shape gemm_shape(const Node& node, const Shape& a, const Shape& b, const Shape* c);
Shape node_broadcast(const Node& node, const Shape& a, const Shape& b);
std::pair<int64_t, int64_t> shape_range(const Node& node, int64_t rank);  // Shape's [start, end)
int64_t range_count(const Node& node, double start, double limit, double delta);
DType cast_target(const Node& node);
int64_t softmax_axis(const Node& node, int64_t rank);

// Reductions and CumSum (infer_reduce.cpp). Per dim of a rank-`rank` input: 1 where reduced.
// `axes` is the axes input (nullptr when omitted); none or empty reduces every dim unless
// noop_with_empty_axes, which reduces none (the identity).
std::vector<char> reduce_mask(const Node& node, int64_t rank, const std::vector<int64_t>* axes);
Shape reduce_shape(const Node& node, const Shape& x, const std::vector<char>& mask);  // keepdims
int64_t cumsum_axis(const Node& node, int64_t rank, const std::vector<int64_t>& axis);
std::vector<ValueType> infer_reduce(const Graph& graph, const Node& node);

// Indexing (infer_indexing.cpp).
Shape gather_nd_shape(const Node& node, const Shape& data, const Shape& indices);
void check_scatter_nd(const Node& node, const Shape& data, const Shape& indices, const Shape& updates);
std::string scatter_reduction(const Node& node);  // "none", "add", "mul", "max" or "min"
int64_t gather_elements_axis(const Node& node, const Shape& data, const Shape& indices);
// An index read from an indexing op's input, checked against [-dim, dim) and made non-negative;
// out of range: InvalidArgument naming the node, the op, the index and where it was read.
int64_t checked_index(const Node& node, int64_t index, int64_t dim, int64_t position, const char* what);
std::vector<ValueType> infer_indexing(const Graph& graph, const Node& node);

// Random ops (infer_random.cpp). `like` is the *Like op's input dtype.
struct RandomSpec {
  bool normal = true;
  double a = 0, b = 1;  // normal: mean, scale; uniform: low, high
  DType dtype = DType::Float32;
  bool has_seed = false;
  float seed = 0;
};
RandomSpec random_spec(const Node& node, DType like);
std::vector<ValueType> infer_random(const Graph& graph, const Node& node);
// Comparison (Less, ...), logical (And, Or, Xor, Not), unary float math (Erf, Softplus, Ceil,
// Floor, Abs, Reciprocal) and Clip: infer_node's rule for them (infer_elementwise.cpp).
std::vector<ValueType> infer_logical_and_math(const Graph& graph, const Node& node);

}  // namespace lockstep::ir
