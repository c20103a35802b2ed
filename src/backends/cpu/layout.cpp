#include "backends/cpu/layout.h"

#include <algorithm>

namespace lockstep::cpu {

namespace {

using ir::Op;

constexpr int64_t kMinNwcChannels = 8;  // oneDNN's brgemm kernels pick nwc from 8 channels

// Float elementwise ops whose kernels can run on the channels-last view.
bool nwc_elementwise(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Tanh: case Op::Sigmoid: case Op::Relu:
    case Op::LeakyRelu: case Op::Exp: case Op::Neg: case Op::Sqrt:
    case Op::Erf: case Op::Softplus: case Op::Ceil: case Op::Floor: case Op::Abs: case Op::Reciprocal:
      return true;
    default:
      return false;
  }
}

bool is_conv(Op op) { return op == Op::Conv || op == Op::ConvTranspose; }

// Copies whose kernels address either layout (data_movement.cpp): a Slice reads any layout;
// a Concat/Split has one layout for the whole and every part.
bool nwc_copy(Op op) { return op == Op::Slice || op == Op::Concat || op == Op::Split; }

// Same bytes in both layouts: rank <= 3 with a size-1 channel or position dim once padded.
bool layout_invariant(const Shape& s) {
  if (s.size() > 3) return false;
  Shape p = s;
  while (p.size() < 3) p.insert(p.begin(), 1);
  return p[1] == 1 || p[2] == 1;
}

}  // namespace

Shape nwc_view(const Shape& shape) {
  Shape p = shape;
  while (p.size() < 3) p.insert(p.begin(), 1);
  std::swap(p[1], p[2]);
  return p;
}

std::vector<char> choose_nwc(const ir::Graph& graph) {
  std::vector<char> nwc(graph.values.size(), 0);
  for (const auto& node : graph.nodes) {
    if (node.outputs.empty() || node.outputs[0] == ir::kNoValue) continue;
    if (!(nwc_elementwise(node.op) || nwc_copy(node.op) || (is_conv(node.op) && conv_can_write_nwc(graph, node))))
      continue;
    for (ir::ValueId out : node.outputs) {
      if (out == ir::kNoValue) continue;
      const ir::Value& v = graph.value(out);
      if (v.constant.defined() || !is_floating(v.dtype) || v.shape.size() != 3 || v.shape[1] < kMinNwcChannels ||
          v.shape[2] <= 1)
        continue;
      nwc[static_cast<size_t>(out)] = 1;
      if (node.op != Op::Split) break;  // only a Split has several outputs that take a layout
    }
  }
  for (ir::ValueId id : graph.inputs) nwc[static_cast<size_t>(id)] = 0;
  for (ir::ValueId id : graph.outputs) nwc[static_cast<size_t>(id)] = 0;
  auto is = [&](ir::ValueId id) { return id != ir::kNoValue && nwc[static_cast<size_t>(id)] != 0; };
  // Shrink to a fixed point: every full-shaped operand has its node's output layout.
  for (bool changed = true; changed;) {
    changed = false;
    auto clear = [&](ir::ValueId id) {
      if (is(id)) {
        nwc[static_cast<size_t>(id)] = 0;
        changed = true;
      }
    };
    for (const auto& node : graph.nodes) {
      const ir::ValueId out = node.outputs.empty() ? ir::kNoValue : node.outputs[0];
      const bool out_nwc = is(out);
      std::vector<ir::ValueId> operands;  // read elementwise on the output's layout
      for (const auto& step : node.epilogue)
        if (step.operand != ir::kNoValue) operands.push_back(step.operand);
      if (node.op == Op::Concat || node.op == Op::Split) {
        // One layout for the whole and the parts (layout-invariant parts fit either).
        std::vector<ir::ValueId> group = node.op == Op::Concat ? node.inputs : node.outputs;
        group.push_back(node.op == Op::Concat ? out : node.inputs.at(0));
        bool all = true;
        for (ir::ValueId id : group)
          if (id != ir::kNoValue && !is(id) && !layout_invariant(graph.value(id).shape)) all = false;
        if (!all)
          for (ir::ValueId id : group) clear(id);
      } else if (node.op == Op::Slice) {
        // Reads either layout; writes channels-last only from a channels-last input (a
        // transposing gather from NCW would be slow).
        if (out_nwc && !is(node.inputs.at(0))) clear(out);
      }
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const ir::ValueId in = node.inputs[i];
        if (in == ir::kNoValue) continue;
        if (nwc_elementwise(node.op)) operands.push_back(in);
        else if (node.op == Op::Concat || (nwc_copy(node.op) && i == 0)) continue;  // handled above
        else if (!(is_conv(node.op) && i == 0)) clear(in);  // other readers want the declared layout
      }
      for (ir::ValueId id : operands) {
        if (layout_invariant(graph.value(id).shape)) continue;
        if (is(id) == out_nwc) continue;
        if (out_nwc) clear(out);
        else clear(id);
      }
    }
  }
  return nwc;
}

}  // namespace lockstep::cpu
