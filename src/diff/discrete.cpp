#include "diff/discrete.h"

#include <cstdio>

namespace lockstep::diff {

namespace {

std::string number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string index_str(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? "," : "") + std::to_string(index[i]);
  return s + "]";
}

// The flat offset of `index` (of a tensor shaped `out`) in a tensor shaped `in`, numpy broadcasting.
int64_t broadcast_offset(const Shape& in, const Shape& out, const std::vector<int64_t>& index) {
  if (in.size() > out.size()) return -1;
  int64_t offset = 0;
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t i = in[d] == 1 ? 0 : index[lead + d];
    if (i >= in[d]) return -1;
    offset = offset * in[d] + i;
  }
  return offset;
}

}  // namespace

bool is_deciding_node(const ir::Graph& graph, const ir::Node& node) {
  if (node.op == ir::Op::Ceil || node.op == ir::Op::Floor) return true;
  for (ir::ValueId v : node.outputs)
    if (v != ir::kNoValue && !is_floating(graph.value(v).dtype)) return true;
  return false;
}

DiscreteCapture::DiscreteCapture(const ir::Graph& graph) : graph_(graph), wanted_(graph.values.size(), 0) {
  for (const ir::Node& node : graph.nodes) {
    if (!is_deciding_node(graph, node)) continue;
    for (ir::ValueId v : node.outputs)
      if (v != ir::kNoValue) wanted_[static_cast<size_t>(v)] = 1;
    for (ir::ValueId v : node.inputs)
      if (v != ir::kNoValue && !graph.is_constant(v)) wanted_[static_cast<size_t>(v)] = 1;
  }
}

TapFn DiscreteCapture::tap() {
  return [this](const ir::Node& node, int output, const Tensor& value) {
    ir::ValueId v = node.outputs.at(static_cast<size_t>(output));
    if (v == ir::kNoValue || static_cast<size_t>(v) >= wanted_.size() || !wanted_[static_cast<size_t>(v)]) return;
    values_[graph_.value(v).name] = value.clone();
  };
}

const Tensor* DiscreteCapture::find(const std::string& value_name) const {
  auto it = values_.find(value_name);
  return it == values_.end() ? nullptr : &it->second;
}

std::string DiscreteDivergence::message() const {
  if (ref_shape != test_shape)
    return op + " at " + node + ": output '" + value + "' is " + shape_str(ref_shape) + " on ref, " +
           shape_str(test_shape) + " on test";
  std::string s = op + " at " + node + " " + index_str(index) + ": " + number(ref_value) + " vs " + number(test_value);
  for (size_t i = 0; i < inputs.size(); ++i)
    s += (i ? "; " : " (") + std::string("input '") + inputs[i].name + "': " + number(inputs[i].ref) + " vs " +
         number(inputs[i].test);
  if (!inputs.empty()) s += ")";
  return s + " (ref vs test)";
}

std::optional<DiscreteDivergence> first_discrete_divergence(const ir::Graph& graph, const DiscreteCapture& ref,
                                                             const DiscreteCapture& test) {
  for (const ir::Node& node : graph.nodes) {
    if (!is_deciding_node(graph, node)) continue;
    for (ir::ValueId v : node.outputs) {
      if (v == ir::kNoValue) continue;
      const std::string& name = graph.value(v).name;
      const Tensor* r = ref.find(name);
      const Tensor* t = test.find(name);
      if (!r || !t) continue;  // folded, or inside a fused kernel on one side
      DiscreteDivergence d{node.name, ir::op_name(node.op), name, r->shape(), t->shape()};
      if (r->shape() != t->shape()) return d;
      for (int64_t i = 0; i < r->numel(); ++i) {
        double a = r->element_as_double(i), b = t->element_as_double(i);
        if (a == b || (a != a && b != b)) continue;
        d.ref_value = a;
        d.test_value = b;
        int64_t rest = i;
        d.index.assign(r->shape().size(), 0);
        for (size_t k = r->shape().size(); k-- > 0;) {
          d.index[k] = rest % r->shape()[k];
          rest /= r->shape()[k];
        }
        for (ir::ValueId in : node.inputs) {
          if (in == ir::kNoValue) continue;
          const std::string& in_name = graph.value(in).name;
          const Tensor* ri = ref.find(in_name);
          const Tensor* ti = test.find(in_name);
          if (!ri || !ti || ri->shape() != ti->shape()) continue;
          int64_t at = broadcast_offset(ri->shape(), r->shape(), d.index);
          if (at < 0) continue;
          d.inputs.push_back({in_name, ri->element_as_double(at), ti->element_as_double(at)});
        }
        return d;
      }
    }
  }
  return std::nullopt;
}

}  // namespace lockstep::diff
