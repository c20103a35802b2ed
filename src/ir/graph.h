// The IR: values (tensors, some of them constants) and nodes in topological order.
// A node may carry an epilogue: elementwise steps fused into it by passes/fuse_epilogues.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attributes.h"
#include "ir/op.h"
#include "lockstep/tensor.h"

namespace lockstep::ir {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

struct Value {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;                          // -1 for a dim not known before shape inference
  std::vector<std::string> dim_params;  // ONNX symbolic dim names, "" for static dims
  Tensor constant;                      // defined() for initializers and folded values
  bool shape_known() const;
};

// One fused elementwise step applied to the running result `acc` of a node's output 0:
// unary: acc = op(acc); binary: acc = op(acc, operand) or op(operand, acc) if operand_is_lhs.
// The operand broadcasts to the node's output shape (numpy rules).
struct EpilogueStep {
  Op op;
  ValueId operand = kNoValue;
  bool operand_is_lhs = false;
  float alpha = 0.0f;     // LeakyRelu slope
  std::string onnx_name;  // the ONNX node this step implements
};

struct Node {
  Op op;
  std::string name;              // the ONNX node name (unique in the graph)
  std::vector<ValueId> inputs;   // kNoValue marks an omitted optional input
  std::vector<ValueId> outputs;
  Attributes attrs;
  std::vector<EpilogueStep> epilogue;

  // The ONNX nodes this IR node implements; the last one produces outputs[0]'s value.
  std::vector<std::string> onnx_names() const;
  const std::string& result_onnx_name() const;
};

// Byte offsets of every non-constant value in one arena (passes/plan_memory).
struct MemoryPlan {
  std::vector<int64_t> offsets;  // per ValueId; -1 for constants and values not stored
  std::vector<int64_t> sizes;    // per ValueId, bytes (float32 for floating values)
  int64_t arena_bytes = 0;
  int64_t lower_bound_bytes = 0;  // largest total of simultaneously live values
  // Per ValueId when some value is planned inside another's bytes (a backend's channel view;
  // passes::Alias), else empty: the value it lies in, kNoValue for a value with its own bytes.
  std::vector<ValueId> alias_of;
};

class Graph {
 public:
  std::string name;
  int64_t opset = 17;
  std::vector<Value> values;
  std::vector<Node> nodes;       // topological order (the verifier checks it)
  std::vector<ValueId> inputs;   // runtime inputs, never constants
  std::vector<ValueId> outputs;
  std::optional<MemoryPlan> plan;

  ValueId add_value(Value value);
  ValueId find_value(std::string_view name) const;  // kNoValue when absent
  Value& value(ValueId id) { return values.at(static_cast<size_t>(id)); }
  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
  bool is_constant(ValueId id) const { return id != kNoValue && value(id).constant.defined(); }

  std::vector<int> producers() const;                // per value: node index, or -1
  std::vector<std::vector<int>> consumers() const;   // per value: node indices that read it
  int find_node(std::string_view onnx_name) const;  // node index implementing that ONNX node, or -1
};

}  // namespace lockstep::ir
