#include "ir/graph.h"

namespace lockstep::ir {

bool Value::shape_known() const {
  for (int64_t d : shape)
    if (d < 0) return false;
  return true;
}

std::vector<std::string> Node::onnx_names() const {
  std::vector<std::string> names{name};
  for (const auto& step : epilogue) names.push_back(step.onnx_name);
  return names;
}

const std::string& Node::result_onnx_name() const {
  return epilogue.empty() ? name : epilogue.back().onnx_name;
}

ValueId Graph::add_value(Value value) {
  values.push_back(std::move(value));
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::find_value(std::string_view wanted) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == wanted) return static_cast<ValueId>(i);
  return kNoValue;
}

std::vector<int> Graph::producers() const {
  std::vector<int> result(values.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n)
    for (ValueId v : nodes[n].outputs)
      if (v != kNoValue) result[static_cast<size_t>(v)] = static_cast<int>(n);
  return result;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> result(values.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    auto add = [&](ValueId v) {
      if (v == kNoValue) return;
      auto& list = result[static_cast<size_t>(v)];
      if (list.empty() || list.back() != static_cast<int>(n)) list.push_back(static_cast<int>(n));
    };
    for (ValueId v : nodes[n].inputs) add(v);
    for (const auto& step : nodes[n].epilogue) add(step.operand);
  }
  return result;
}

int Graph::find_node(std::string_view onnx_name) const {
  for (size_t n = 0; n < nodes.size(); ++n)
    for (const auto& name : nodes[n].onnx_names())
      if (name == onnx_name) return static_cast<int>(n);
  return -1;
}

}  // namespace lockstep::ir
