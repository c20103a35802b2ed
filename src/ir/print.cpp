#include "ir/print.h"

#include <ostream>
#include <sstream>

namespace lockstep::ir {

namespace {

constexpr int64_t kShownConstantElements = 8;

const char* short_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "f32";
    case DType::Float64: return "f64";
    case DType::Int64: return "i64";
    case DType::Int32: return "i32";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::string type_str(const Value& value) {
  std::string dims = "[";
  for (size_t i = 0; i < value.shape.size(); ++i) {
    if (i) dims += ",";
    bool symbolic = value.shape[i] < 0 && i < value.dim_params.size() && !value.dim_params[i].empty();
    dims += symbolic ? value.dim_params[i] : value.shape[i] < 0 ? "?" : std::to_string(value.shape[i]);
  }
  return std::string(short_dtype(value.dtype)) + dims + "]";
}

void print_ref(const Graph& graph, ValueId id, std::ostream& out) {
  if (id == kNoValue) {
    out << "_";
    return;
  }
  if (id < 0 || static_cast<size_t>(id) >= graph.values.size()) {
    out << "%" << id << "<out of range>";
    return;
  }
  const Value& value = graph.value(id);
  out << "%" << id << " '" << value.name << "'";
  // Constants show their type, and their values when small (Slice bounds, Reshape shapes).
  if (value.constant.defined())
    out << (value.constant.numel() <= kShownConstantElements ? "=" + attribute_str(value.constant)
                                                             : "=const " + type_str(value));
}

void print_step(const Graph& graph, const EpilogueStep& step, std::ostream& out) {
  out << op_name(step.op) << "(";
  if (step.operand == kNoValue) {
    out << "acc";
  } else if (step.operand_is_lhs) {
    print_ref(graph, step.operand, out);
    out << ", acc";
  } else {
    out << "acc, ";
    print_ref(graph, step.operand, out);
  }
  out << ")";
  if (step.op == Op::LeakyRelu) out << " {alpha=" << step.alpha << "}";
  out << " '" << step.onnx_name << "'";
}

void print_node(const Graph& graph, size_t index, const Node& node, std::ostream& out) {
  out << "  #" << index << " ";
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (i) out << ", ";
    print_ref(graph, node.outputs[i], out);
    ValueId id = node.outputs[i];
    if (id >= 0 && static_cast<size_t>(id) < graph.values.size()) out << ":" << type_str(graph.value(id));
  }
  out << " = " << op_name(node.op) << "(";
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (i) out << ", ";
    print_ref(graph, node.inputs[i], out);
  }
  out << ")";
  if (!node.attrs.all().empty()) {
    out << " {";
    bool first = true;
    for (const auto& [name, value] : node.attrs.all()) {
      out << (first ? "" : ", ") << name << "=" << attribute_str(value);
      first = false;
    }
    out << "}";
  }
  if (!node.epilogue.empty()) {
    out << " epilogue[";
    for (size_t i = 0; i < node.epilogue.size(); ++i) {
      if (i) out << ", ";
      print_step(graph, node.epilogue[i], out);
    }
    out << "]";
  }
  out << " onnx '" << node.name << "'";
  if (graph.plan && node.outputs.size() == 1 && node.outputs[0] >= 0 &&
      static_cast<size_t>(node.outputs[0]) < graph.plan->offsets.size())
    out << " @" << graph.plan->offsets[node.outputs[0]];
  out << "\n";
}

}  // namespace

void print(const Graph& graph, std::ostream& out) {
  out << "graph '" << graph.name << "' opset " << graph.opset << " (" << graph.nodes.size() << " nodes)\n";
  for (ValueId id : graph.inputs) {
    out << "  input ";
    print_ref(graph, id, out);
    if (id >= 0 && static_cast<size_t>(id) < graph.values.size()) out << ":" << type_str(graph.value(id));
    out << "\n";
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) print_node(graph, i, graph.nodes[i], out);
  for (ValueId id : graph.outputs) {
    out << "  output ";
    print_ref(graph, id, out);
    out << "\n";
  }
  if (graph.plan)
    out << "  plan: arena " << graph.plan->arena_bytes << " bytes, lower bound " << graph.plan->lower_bound_bytes
        << " bytes\n";
}

std::string to_string(const Graph& graph) {
  std::ostringstream out;
  print(graph, out);
  return out.str();
}

}  // namespace lockstep::ir
