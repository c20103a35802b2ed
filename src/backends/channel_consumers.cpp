#include "backends/channel_consumers.h"

#include <algorithm>

namespace lockstep::backends {

namespace {

bool is_unary_step(ir::Op op) {
  switch (op) {
    case ir::Op::Tanh: case ir::Op::Sigmoid: case ir::Op::Relu: case ir::Op::LeakyRelu:
    case ir::Op::Exp: case ir::Op::Neg: case ir::Op::Sqrt:
      return true;
    default:
      return false;
  }
}

bool is_binary_step(ir::Op op) {
  switch (op) {
    case ir::Op::Add: case ir::Op::Sub: case ir::Op::Mul: case ir::Op::Div: case ir::Op::Pow:
      return true;
    default:
      return false;
  }
}

// The element-wise node that alone reads slice value v, as steps over v; false when there is none
// or it cannot run in the producer's store (an operand made after the producer, another dtype).
bool absorbable_consumer(const ir::Graph& g, const ChannelFacts& f, int producer, ir::ValueId v, ChannelSegment& seg) {
  const int c = f.sole_reader(v);
  if (c < 0) return false;
  const ir::Node& x = g.nodes[static_cast<size_t>(c)];
  if (x.outputs.size() != 1 || x.outputs[0] == ir::kNoValue) return false;
  const ir::Value& in = g.value(v);
  const ir::Value& out = g.value(x.outputs[0]);
  if (!is_floating(in.dtype) || out.dtype != in.dtype || out.shape != in.shape) return false;
  ir::EpilogueStep first{x.op, ir::kNoValue, false, 0.0f, x.name};
  if (is_unary_step(x.op) && x.inputs.size() == 1 && x.inputs[0] == v) {
    if (x.op == ir::Op::LeakyRelu) first.alpha = x.attrs.get_float("alpha", 0.01f);
  } else if (is_binary_step(x.op) && x.inputs.size() == 2 && (x.inputs[0] == v) != (x.inputs[1] == v)) {
    first.operand_is_lhs = x.inputs[1] == v;
    first.operand = first.operand_is_lhs ? x.inputs[0] : x.inputs[1];
    if (!f.ready_before(g, first.operand, producer)) return false;
  } else {
    return false;  // v read through an epilogue operand, or an op the store cannot apply
  }
  for (const ir::EpilogueStep& step : x.epilogue)
    if (step.operand != ir::kNoValue && !f.ready_before(g, step.operand, producer)) return false;
  seg.consumer = c;
  seg.steps = {first};
  seg.steps.insert(seg.steps.end(), x.epilogue.begin(), x.epilogue.end());
  seg.out = x.outputs[0];
  return true;
}

// The producer's output when every reader is a channel Slice of it (no graph output, no
// epilogue): the slice node indices, else empty.
std::vector<size_t> channel_slice_readers(const ir::Graph& g, const ChannelFacts& f, int producer) {
  const ir::Node& p = g.nodes[static_cast<size_t>(producer)];
  if (p.outputs.size() != 1 || p.outputs[0] == ir::kNoValue || !p.epilogue.empty()) return {};
  const ir::ValueId y = p.outputs[0];
  if (f.is_output[static_cast<size_t>(y)]) return {};
  const auto& readers = f.readers[static_cast<size_t>(y)];
  for (size_t k : readers) {
    const ir::Node& s = g.nodes[k];
    if (!channel_slice(g, s) || s.inputs[0] != y) return {};
  }
  return readers;
}

bool disjoint(ChannelRange a, ChannelRange b) { return a.c0 + a.len <= b.c0 || b.c0 + b.len <= a.c0; }

}  // namespace

ChannelFacts::ChannelFacts(const ir::Graph& g) : readers(value_readers(g)), is_output(g.values.size(), 0), made_by(g.producers()) {
  for (ir::ValueId v : g.outputs) is_output[static_cast<size_t>(v)] = 1;
}

int ChannelFacts::sole_reader(ir::ValueId v) const {
  const auto& r = readers[static_cast<size_t>(v)];
  return r.size() == 1 ? static_cast<int>(r[0]) : -1;
}

bool ChannelFacts::ready_before(const ir::Graph& g, ir::ValueId v, int producer) const {
  return v != ir::kNoValue && is_floating(g.value(v).dtype) && made_by[static_cast<size_t>(v)] < producer;
}

std::optional<std::vector<ChannelSegment>> absorbable_segments(const ir::Graph& g, const ChannelFacts& f, int producer) {
  const std::vector<size_t> slices = channel_slice_readers(g, f, producer);
  if (slices.empty()) return std::nullopt;
  std::vector<ChannelSegment> segs;
  bool any = false;
  for (size_t k : slices) {
    ChannelSegment seg;
    seg.slice = static_cast<int>(k);
    seg.range = *channel_slice(g, g.nodes[k]);
    const ir::ValueId v = g.nodes[k].outputs[0];
    if (!f.is_output[static_cast<size_t>(v)] && absorbable_consumer(g, f, producer, v, seg)) any = true;
    for (const ChannelSegment& other : segs)
      if (!disjoint(other.range, seg.range)) return std::nullopt;
    segs.push_back(std::move(seg));
  }
  if (!any) return std::nullopt;
  std::sort(segs.begin(), segs.end(), [](const ChannelSegment& a, const ChannelSegment& b) { return a.range.c0 < b.range.c0; });
  return segs;
}

std::optional<GatePattern> gate_pattern(const ir::Graph& g, const ChannelFacts& f, int producer) {
  const std::vector<size_t> slices = channel_slice_readers(g, f, producer);
  if (slices.size() != 2 || slices[0] == slices[1]) return std::nullopt;
  for (int order = 0; order < 2; ++order) {
    GatePattern gp;
    gp.slice_a = static_cast<int>(slices[order]);
    gp.slice_b = static_cast<int>(slices[1 - order]);
    gp.a = *channel_slice(g, g.nodes[static_cast<size_t>(gp.slice_a)]);
    gp.b = *channel_slice(g, g.nodes[static_cast<size_t>(gp.slice_b)]);
    if (gp.a.len != gp.b.len || !disjoint(gp.a, gp.b)) continue;
    const ir::ValueId va = g.nodes[static_cast<size_t>(gp.slice_a)].outputs[0];
    const ir::ValueId vb = g.nodes[static_cast<size_t>(gp.slice_b)].outputs[0];
    if (f.is_output[static_cast<size_t>(va)] || f.is_output[static_cast<size_t>(vb)]) continue;
    gp.unary_a = f.sole_reader(va);
    gp.unary_b = f.sole_reader(vb);
    if (gp.unary_a < 0 || gp.unary_b < 0 || gp.unary_a == gp.unary_b) continue;
    const ir::Node& ua = g.nodes[static_cast<size_t>(gp.unary_a)];
    const ir::Node& ub = g.nodes[static_cast<size_t>(gp.unary_b)];
    auto unary_of = [&](const ir::Node& u, ir::ValueId in) {
      return is_unary_step(u.op) && u.inputs.size() == 1 && u.inputs[0] == in && u.outputs.size() == 1 &&
             u.outputs[0] != ir::kNoValue && is_floating(g.value(in).dtype) &&
             g.value(u.outputs[0]).dtype == g.value(in).dtype && g.value(u.outputs[0]).shape == g.value(in).shape;
    };
    if (!unary_of(ua, va) || !unary_of(ub, vb) || !ua.epilogue.empty()) continue;
    const ir::ValueId ta = ua.outputs[0];
    if (ub.epilogue.size() != 1 || ub.epilogue[0].op != ir::Op::Mul || ub.epilogue[0].operand != ta) continue;
    if (f.is_output[static_cast<size_t>(ta)] || f.sole_reader(ta) != gp.unary_b) continue;
    gp.a_is_lhs = ub.epilogue[0].operand_is_lhs;
    gp.out = ub.outputs[0];
    return gp;
  }
  return std::nullopt;
}

}  // namespace lockstep::backends
