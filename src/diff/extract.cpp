#include "diff/extract.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/infer.h"

namespace lockstep::diff {

namespace {

std::vector<ir::ValueId> node_reads(const ir::Node& node) {
  std::vector<ir::ValueId> reads = node.inputs;
  for (const auto& step : node.epilogue) reads.push_back(step.operand);
  return reads;
}

// Tensor names -> value ids; a name that is only a node's name stands for its outputs.
std::vector<ir::ValueId> resolve(const ir::Graph& g, const std::vector<std::string>& names,
                                 const char* what, bool allow_node_names) {
  std::vector<ir::ValueId> ids;
  for (const auto& name : names) {
    ir::ValueId v = g.find_value(name);
    if (v != ir::kNoValue) {
      ids.push_back(v);
      continue;
    }
    int node = allow_node_names ? g.find_node(name) : -1;
    if (node >= 0) {
      for (ir::ValueId out : g.nodes[node].outputs)
        if (out != ir::kNoValue) ids.push_back(out);
      continue;
    }
    throw Error(ErrorCode::InvalidArgument, std::string("unknown ") + what + " tensor '" + name +
                                                "': no value of the model has that name" +
                                                (allow_node_names ? " (nor any node)" : "") +
                                                "; `lockstep info MODEL --shapes` lists them");
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

void annotate_types(ir::Graph& graph) {
  for (const ir::Node& node : graph.nodes) {
    std::vector<ir::ValueType> types;
    try {
      types = ir::infer_node(graph, node);
    } catch (const Error&) {
      continue;  // keep the declared type; the reference's values still tell the truth
    }
    for (size_t i = 0; i < node.outputs.size() && i < types.size(); ++i) {
      if (node.outputs[i] == ir::kNoValue) continue;
      ir::Value& v = graph.value(node.outputs[i]);
      v.dtype = types[i].dtype;
      v.shape = types[i].shape;
    }
  }
}

std::vector<int> subgraph_nodes(const ir::Graph& g, const std::vector<ir::ValueId>& outputs,
                                const std::vector<ir::ValueId>& inputs) {
  std::vector<int> producer = g.producers();
  std::set<ir::ValueId> stop(inputs.begin(), inputs.end());
  std::vector<char> keep(g.nodes.size(), 0), seen(g.values.size(), 0);
  std::vector<ir::ValueId> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    ir::ValueId v = stack.back();
    stack.pop_back();
    if (v == ir::kNoValue || seen[v]) continue;
    seen[v] = 1;
    if (stop.count(v) || g.is_constant(v)) continue;
    int p = producer[v];
    if (p < 0)
      throw Error(ErrorCode::InvalidArgument,
                  "the requested outputs need '" + g.value(v).name +
                      "', which is a graph input not among the subgraph's inputs; add it "
                      "to --inputs");
    if (keep[p]) continue;
    keep[p] = 1;
    for (ir::ValueId in : node_reads(g.nodes[p])) stack.push_back(in);
  }
  std::vector<int> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (keep[i]) nodes.push_back(static_cast<int>(i));
  return nodes;
}

ir::Graph extract_subgraph(const ir::Graph& g, const std::vector<std::string>& output_names,
                           const std::vector<std::string>& input_names) {
  if (output_names.empty())
    throw Error(ErrorCode::InvalidArgument, "extract: no output tensor named");
  std::vector<ir::ValueId> outputs = resolve(g, output_names, "output", true);
  std::vector<ir::ValueId> inputs =
      input_names.empty() ? g.inputs : resolve(g, input_names, "input", false);
  for (ir::ValueId v : inputs)
    if (g.is_constant(v))
      throw Error(ErrorCode::InvalidArgument,
                  "'" + g.value(v).name + "' is a constant (initializer), not an input");
  std::vector<int> nodes = subgraph_nodes(g, outputs, inputs);

  ir::Graph sub;
  sub.name = g.name;
  sub.opset = g.opset;
  std::map<ir::ValueId, ir::ValueId> remap;
  auto map_value = [&](ir::ValueId v) {
    if (v == ir::kNoValue) return ir::kNoValue;
    auto it = remap.find(v);
    if (it != remap.end()) return it->second;
    ir::ValueId id = sub.add_value(g.value(v));
    remap[v] = id;
    return id;
  };
  // Inputs first (in the given order) and as plain values: an intermediate made an input drops
  // nothing but its producer.
  std::set<ir::ValueId> input_set(inputs.begin(), inputs.end());
  std::vector<ir::ValueId> ordered_inputs =
      input_names.empty() ? g.inputs : std::vector<ir::ValueId>{};
  if (!input_names.empty())
    for (const auto& name : input_names) ordered_inputs.push_back(g.find_value(name));
  for (ir::ValueId v : ordered_inputs) {
    if (std::find(sub.inputs.begin(), sub.inputs.end(), remap.count(v) ? remap[v] : -2) !=
        sub.inputs.end())
      continue;
    ir::Value value = g.value(v);
    value.constant = Tensor{};
    ir::ValueId id = sub.add_value(value);
    remap[v] = id;
    sub.inputs.push_back(id);
  }
  for (int index : nodes) {
    ir::Node node = g.nodes[index];
    for (auto& in : node.inputs) in = map_value(in);
    for (auto& out : node.outputs) out = map_value(out);
    for (auto& step : node.epilogue) step.operand = map_value(step.operand);
    sub.nodes.push_back(std::move(node));
  }
  for (ir::ValueId v : outputs) {
    if (input_set.count(v))
      throw Error(ErrorCode::InvalidArgument,
                  "'" + g.value(v).name + "' is asked for both as an input and an output");
    sub.outputs.push_back(map_value(v));
  }
  return sub;
}

}  // namespace lockstep::diff
