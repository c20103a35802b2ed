// Subgraph extraction, the C++ counterpart of onnx.utils.extract_model: the nodes computing the
// named tensors from the named inputs, with only the constants they read. Works on the imported
// graph (before passes), so names are the model's own ONNX names.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace lockstep::diff {

// Sets dtype and shape of every value from ir::infer_node, node by node, without folding or
// removing anything (graph inputs must have known shapes: bind them first). Values whose rule
// fails keep what they had.
void annotate_types(ir::Graph& graph);

// `outputs`: tensor names (a name that is only a node name stands for all of its outputs);
// `inputs`: tensor names to become graph inputs (empty: the model's inputs). Errors
// (InvalidArgument) for unknown names and for outputs that need a graph input not listed.
// Values that become inputs keep their dtype and shape (run annotate_types first).
ir::Graph extract_subgraph(const ir::Graph& graph, const std::vector<std::string>& outputs,
                           const std::vector<std::string>& inputs = {});

// Node indices (into `graph.nodes`) that extract_subgraph would keep, in order.
std::vector<int> subgraph_nodes(const ir::Graph& graph, const std::vector<ir::ValueId>& outputs,
                                const std::vector<ir::ValueId>& inputs);

}  // namespace lockstep::diff
