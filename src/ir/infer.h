// Per-op shape and dtype rules. A rule may need the values of parameter inputs (Reshape's
// shape, Slice's starts, ...): those must be constants by then, else an Error naming the node.
#pragma once

#include <utility>
#include <vector>

#include "ir/graph.h"

namespace lockstep::ir {

struct ValueType {
  DType dtype;
  Shape shape;
};

// Output types of `node` from its inputs' types (and constant values where needed).
// Throws Error(ShapeMismatch / UnsupportedAttribute / ...) naming the node.
std::vector<ValueType> infer_node(const Graph& graph, const Node& node);

// numpy broadcasting of two shapes; throws ShapeMismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace lockstep::ir
