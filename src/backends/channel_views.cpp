#include "backends/channel_views.h"

#include <algorithm>

namespace lockstep::backends {

namespace {

// A constant int64 parameter input as a vector (empty when omitted).
std::vector<int64_t> const_ints(const ir::Graph& g, const ir::Node& node, size_t input) {
  if (input >= node.inputs.size() || node.inputs[input] == ir::kNoValue) return {};
  const Tensor& t = g.value(node.inputs[input]).constant;
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = t.element_as_int(i);
  return out;
}

}  // namespace

std::optional<ChannelRange> channel_slice(const ir::Graph& g, const ir::Node& s) {
  if (s.op != ir::Op::Slice || s.inputs.size() < 3 || s.inputs[0] == ir::kNoValue || s.outputs.size() != 1 ||
      s.outputs[0] == ir::kNoValue)
    return std::nullopt;
  for (size_t i = 1; i < s.inputs.size(); ++i)
    if (s.inputs[i] != ir::kNoValue && !g.is_constant(s.inputs[i])) return std::nullopt;
  const Shape& x = g.value(s.inputs[0]).shape;
  const Shape& y = g.value(s.outputs[0]).shape;
  if (x.size() != 3 || y.size() != 3 || x[0] != y[0] || x[2] != y[2] || y[1] <= 0) return std::nullopt;
  const std::vector<int64_t> starts = const_ints(g, s, 1), axes = const_ints(g, s, 3), steps = const_ints(g, s, 4);
  if (starts.size() != 1 || (!axes.empty() && axes != std::vector<int64_t>{1} && axes != std::vector<int64_t>{-2}))
    return std::nullopt;
  if (!steps.empty() && steps != std::vector<int64_t>{1}) return std::nullopt;
  if (axes.empty()) return std::nullopt;  // axis 0 by default: not a channel slice
  const int64_t c0 = std::clamp<int64_t>(starts[0] < 0 ? starts[0] + x[1] : starts[0], 0, x[1]);
  if (c0 + y[1] > x[1]) return std::nullopt;
  return ChannelRange{c0, y[1]};
}

std::vector<ChannelRange> channel_split(const ir::Graph& g, const ir::Node& s) {
  if (s.op != ir::Op::Split || s.inputs.empty() || s.inputs[0] == ir::kNoValue) return {};
  const Shape& x = g.value(s.inputs[0]).shape;
  const int64_t axis = s.attrs.get_int("axis", 0);
  if (x.size() != 3 || (axis != 1 && axis != -2)) return {};
  std::vector<ChannelRange> ranges;
  int64_t at = 0;
  for (ir::ValueId o : s.outputs) {
    if (o == ir::kNoValue) return {};
    const Shape& y = g.value(o).shape;
    if (y.size() != 3 || y[0] != x[0] || y[2] != x[2] || y[1] < 0) return {};
    ranges.push_back(ChannelRange{at, y[1]});
    at += y[1];
  }
  if (at != x[1]) return {};
  return ranges;
}

// The channel ranges node k reads from x: one for a channel Slice, one per output for a channel
// Split; empty when k reads x some other way.
static std::vector<ChannelRange> ranges_read(const ir::Graph& g, size_t k, ir::ValueId x) {
  const ir::Node& n = g.nodes[k];
  if (n.inputs.empty() || n.inputs[0] != x) return {};
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i] == x) return {};
  if (const auto r = channel_slice(g, n)) return {*r};
  return channel_split(g, n);
}

std::vector<std::vector<size_t>> value_readers(const ir::Graph& g) {
  std::vector<std::vector<size_t>> readers(g.values.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (ir::ValueId in : g.nodes[k].inputs)
      if (in != ir::kNoValue) readers[static_cast<size_t>(in)].push_back(k);
    for (const auto& step : g.nodes[k].epilogue)
      if (step.operand != ir::kNoValue) readers[static_cast<size_t>(step.operand)].push_back(k);
  }
  return readers;
}

bool overwritten_between(const ir::Graph& g, size_t slice, size_t last, const ByteSpan& input,
                         const std::function<ByteSpan(ir::ValueId)>& span) {
  for (size_t k = slice + 1; k <= last; ++k)
    for (ir::ValueId out : g.nodes[k].outputs)
      if (out != ir::kNoValue && span(out).overlaps(input)) return true;
  return false;
}

bool alone(const ir::Graph& g, const ViewCandidate& c, const std::vector<ViewCandidate>& candidates,
           const std::vector<std::vector<size_t>>& readers, const std::vector<char>& is_output) {
  const ir::ValueId x = g.nodes[c.slice].inputs[0];
  bool ok = !is_output[static_cast<size_t>(x)];
  for (size_t k : readers[static_cast<size_t>(x)]) {
    auto other = std::find_if(candidates.begin(), candidates.end(), [&](const ViewCandidate& o) { return o.slice == k; });
    ok = ok && other != candidates.end() &&
         (other->slice == c.slice || other->range.c0 + other->range.len <= c.range.c0 ||
          c.range.c0 + c.range.len <= other->range.c0);
  }
  return ok;
}

// The dense views of `g` by the shape rules (see choose_dense_views), keeping a candidate only
// where `keep(node, output, x, own byte range offset and length)` agrees; a view of a view copies.
static std::vector<DenseView> dense_views(
    const ir::Graph& g, const std::vector<size_t>& bytes, size_t align,
    const std::function<bool(size_t, ir::ValueId, ir::ValueId, int64_t, int64_t, size_t)>& keep) {
  const auto readers = value_readers(g);
  std::vector<char> is_output(g.values.size(), 0);
  for (ir::ValueId id : g.outputs) is_output[static_cast<size_t>(id)] = 1;
  std::vector<DenseView> views;
  std::vector<char> is_view(g.values.size(), 0);
  for (size_t s = 0; s < g.nodes.size(); ++s) {
    const ir::Node& node = g.nodes[s];
    std::vector<ChannelRange> outs;
    if (const std::optional<ChannelRange> r = channel_slice(g, node)) outs.push_back(*r);
    else outs = channel_split(g, node);
    for (size_t o = 0; o < outs.size(); ++o) {
      const ChannelRange range = outs[o];
      const ir::ValueId x = node.inputs[0], v = node.outputs[o];
      const ir::Value& xv = g.value(x);
      const auto vi = static_cast<size_t>(v), xi = static_cast<size_t>(x);
      // A constant's bytes must never take a planted fault; batch > 1 makes the channel block strided.
      if (is_output[vi] || xv.constant.defined() || !is_floating(xv.dtype) || xv.shape[0] != 1 || readers[vi].empty() ||
          num_elements(xv.shape) == 0 || range.len <= 0 || bytes[xi] == 0)
        continue;
      const int64_t elem = static_cast<int64_t>(bytes[xi]) / num_elements(xv.shape);
      const int64_t begin = range.c0 * xv.shape[2] * elem, len = range.len * xv.shape[2] * elem;
      if (begin % static_cast<int64_t>(align) != 0) continue;
      // Alone: every reader of x is a channel Slice or Split of ranges disjoint from this one
      // (this node's own other outputs are), copied or viewed alike.
      bool disjoint = !is_output[xi];
      for (size_t k : readers[xi]) {
        const std::vector<ChannelRange> read = ranges_read(g, k, x);
        disjoint = disjoint && !read.empty();
        for (size_t j = 0; j < read.size() && disjoint; ++j)
          disjoint = (k == s && j == o) || read[j].c0 + read[j].len <= range.c0 || range.c0 + range.len <= read[j].c0;
      }
      if (!disjoint || is_view[xi] || !keep(s, v, x, begin, len, readers[vi].back())) continue;
      views.push_back({s, v, x, begin, static_cast<int>(o)});
      is_view[vi] = 1;
    }
  }
  return views;
}

std::vector<DenseView> planned_dense_views(const ir::Graph& g, const std::vector<size_t>& bytes, size_t align) {
  return dense_views(g, bytes, align, [](size_t, ir::ValueId, ir::ValueId, int64_t, int64_t, size_t) { return true; });
}

std::vector<DenseView> choose_dense_views(const ir::Graph& g, const std::vector<const std::byte*>& ptr,
                                          const std::vector<size_t>& bytes, size_t align) {
  auto span = [&](ir::ValueId id) {
    const std::byte* p = ptr[static_cast<size_t>(id)];
    return ByteSpan{p, p ? p + bytes[static_cast<size_t>(id)] : p};
  };
  return dense_views(g, bytes, align, [&](size_t s, ir::ValueId v, ir::ValueId x, int64_t begin, int64_t len, size_t last) {
    const std::byte* base = ptr[static_cast<size_t>(x)];
    if (!base || !ptr[static_cast<size_t>(v)]) return false;
    // A dense view reads only its own sub-range of x: writes elsewhere in x do not matter.
    return !overwritten_between(g, s, last, ByteSpan{base + begin, base + begin + len}, span);
  });
}

}  // namespace lockstep::backends
