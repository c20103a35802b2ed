#include "passes/infer_shapes.h"

#include "ir/infer.h"
#include "ir/infer_rules.h"
#include "passes/fold_support.h"

namespace lockstep::passes {

namespace {

// Folding here is not counted (the pass is mandatory), so it stays small: shape arithmetic.
constexpr int64_t kInferFoldMaxBytes = int64_t{1} << 20;

// A value with a non-empty declared shape came with value_info (or is a graph output): check it.
void check_declared(const ir::Node& node, const ir::Value& value, const ir::ValueType& inferred) {
  const Shape& declared = value.shape;
  if (declared.empty()) return;
  bool ok = declared.size() == inferred.shape.size();
  for (size_t d = 0; ok && d < declared.size(); ++d)
    ok = declared[d] < 0 || inferred.shape[d] < 0 || declared[d] == inferred.shape[d];  // < 0: run-time
  if (!ok)
    ir::fail(node, ErrorCode::ShapeMismatch,
             "output '" + value.name + "' is declared " + shape_str(declared) +
                 " but computes to " + shape_str(inferred.shape));
  if (value.dtype != inferred.dtype)
    ir::fail(node, ErrorCode::DTypeMismatch,
             "output '" + value.name + "' is declared " + dtype_name(value.dtype) +
                 " but computes to " + dtype_name(inferred.dtype));
}

}  // namespace

void infer_shapes(ir::Graph& graph, int64_t fold_moved_max_bytes) {
  std::vector<ir::Node> kept;
  kept.reserve(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    std::vector<ir::ValueType> types = ir::infer_node(graph, node);
    if (types.size() != node.outputs.size())
      ir::fail(node, ErrorCode::InvalidModel,
               "has " + std::to_string(node.outputs.size()) + " outputs, the op gives " +
                   std::to_string(types.size()));
    for (size_t o = 0; o < types.size(); ++o) {
      if (node.outputs[o] == ir::kNoValue) continue;
      ir::Value& value = graph.value(node.outputs[o]);
      check_declared(node, value, types[o]);
      value.dtype = types[o].dtype;
      value.shape = types[o].shape;
    }
    if (node.op == ir::Op::Shape && node.epilogue.empty() &&
        graph.value(node.inputs.at(0)).shape_known()) {
      // Only the input's shape is read: fold even when its data is computed at run time.
      const Shape& x = graph.value(node.inputs.at(0)).shape;
      auto [start, end] = ir::shape_range(node, static_cast<int64_t>(x.size()));
      graph.value(node.outputs.at(0)).constant = Tensor::from_vector<int64_t>(
          {end - start}, std::vector<int64_t>(x.begin() + start, x.begin() + end));
      continue;
    }
    if (foldable(graph, node, kInferFoldMaxBytes, fold_moved_max_bytes)) {
      fold_node(graph, node);
      continue;
    }
    kept.push_back(std::move(graph.nodes[n]));  // `node` is not read after this
  }
  graph.nodes = std::move(kept);
}

}  // namespace lockstep::passes
