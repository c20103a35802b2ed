#include "backends/cpu/views.h"

#include <algorithm>
#include <cstring>

namespace lockstep::cpu {

namespace {

using ir::Op;

class NoCopyKernel final : public Kernel {
 public:
  void run() override {}
};

bool strided_reader_ok(Op op) {
  switch (op) {
    case Op::Tanh: case Op::Sigmoid: case Op::Relu: case Op::LeakyRelu: case Op::Exp: case Op::Neg: case Op::Sqrt:
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div:
      return true;
    default:
      return false;
  }
}

struct Span {
  const std::byte* begin;
  const std::byte* end;
  bool overlaps(const Span& o) const { return begin < o.end && o.begin < end; }
};

// The sliced channel range [c0, c0 + len) of a rank-3 Slice along axis 1 with step 1, or false.
bool channel_slice(const CompileContext& ctx, const ir::Node& s, int64_t& c0) {
  if (s.inputs.size() < 3 || s.outputs.size() != 1 || s.outputs[0] == ir::kNoValue) return false;
  for (size_t i = 1; i < s.inputs.size(); ++i)
    if (s.inputs[i] != ir::kNoValue && !ctx.graph.is_constant(s.inputs[i])) return false;
  const Shape& x = ctx.value(s.inputs[0]).shape;
  const Shape& y = ctx.value(s.outputs[0]).shape;
  if (x.size() != 3 || y.size() != 3 || x[0] != y[0] || x[2] != y[2] || y[1] <= 0) return false;
  const std::vector<int64_t> starts = ctx.const_ints(s, 1), axes = ctx.const_ints(s, 3), steps = ctx.const_ints(s, 4);
  if (starts.size() != 1 || (!axes.empty() && axes != std::vector<int64_t>{1} && axes != std::vector<int64_t>{-2}))
    return false;
  if (!steps.empty() && steps != std::vector<int64_t>{1}) return false;
  if (axes.empty()) return false;  // axis 0 by default: not a channel slice
  c0 = starts[0] < 0 ? starts[0] + x[1] : starts[0];
  c0 = std::clamp<int64_t>(c0, 0, x[1]);
  return c0 + y[1] <= x[1];
}

// Whether a node after the Slice `s`, up to the view's last reader `last`, writes over x's bytes.
bool k_overwrites(const CompileContext& ctx, const std::vector<void*>& original, size_t s, size_t last,
                  ir::ValueId x) {
  auto span = [&](ir::ValueId id) {
    const auto* p = static_cast<const std::byte*>(original[static_cast<size_t>(id)]);
    const ir::Value& v = ctx.value(id);
    return Span{p, p + num_elements(v.shape) * static_cast<int64_t>(storage_size(v.dtype))};
  };
  const Span xs = span(x);
  for (size_t k = s + 1; k <= last; ++k)
    for (ir::ValueId out : ctx.graph.nodes[k].outputs)
      if (out != ir::kNoValue && span(out).overlaps(xs)) return true;
  return false;
}

}  // namespace

std::vector<int64_t> choose_views(CompileContext& ctx) {
  const ir::Graph& g = ctx.graph;
  std::vector<int64_t> pitch(g.values.size(), 0);
  ctx.view.assign(g.values.size(), 0);
  std::vector<std::vector<size_t>> readers(g.values.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (ir::ValueId in : g.nodes[k].inputs)
      if (in != ir::kNoValue) readers[static_cast<size_t>(in)].push_back(k);
    for (const auto& step : g.nodes[k].epilogue)
      if (step.operand != ir::kNoValue) readers[static_cast<size_t>(step.operand)].push_back(k);
  }
  std::vector<char> is_output(g.values.size(), 0);
  for (ir::ValueId id : g.outputs) is_output[static_cast<size_t>(id)] = 1;
  const std::vector<void*> original = ctx.pointers;
  struct Candidate {
    size_t slice;
    int64_t c0, len;
  };
  std::vector<Candidate> candidates;
  for (size_t s = 0; s < g.nodes.size(); ++s) {
    const ir::Node& node = g.nodes[s];
    if (node.op != Op::Slice) continue;
    int64_t c0 = 0;
    if (!channel_slice(ctx, node, c0)) continue;
    const ir::ValueId x = node.inputs[0], v = node.outputs[0];
    const auto vi = static_cast<size_t>(v);
    const ir::Value &xv = ctx.value(x), &vv = ctx.value(v);
    if (is_output[vi] || ctx.view[static_cast<size_t>(x)] || !is_floating(xv.dtype) || readers[vi].empty()) continue;
    const bool nwc = ctx.is_nwc(x);
    if (nwc != ctx.is_nwc(v)) continue;
    if (!nwc && xv.shape[0] != 1) continue;  // NCW: one batch item keeps the channel block dense
    // Channels-last views are strided: only elementwise kernels reading them as a full-shaped
    // input address them so.
    bool readers_ok = true;
    size_t last = s;
    for (size_t k : readers[vi]) {
      last = std::max(last, k);
      if (!nwc) continue;
      const ir::Node& r = g.nodes[k];
      bool as_epilogue_operand = false;
      for (const auto& step : r.epilogue) as_epilogue_operand = as_epilogue_operand || step.operand == v;
      const ir::ValueId out = r.outputs.empty() ? ir::kNoValue : r.outputs[0];
      bool inputs_float = true;
      for (ir::ValueId in : r.inputs)
        inputs_float = inputs_float && in != ir::kNoValue && storage_dtype(ctx.value(in).dtype) == DType::Float32;
      readers_ok = readers_ok && strided_reader_ok(r.op) && !as_epilogue_operand && out != ir::kNoValue &&
                   ctx.value(out).shape == vv.shape && ctx.is_nwc(out) && inputs_float &&
                   storage_dtype(ctx.value(out).dtype) == DType::Float32;
    }
    if (!readers_ok || k_overwrites(ctx, original, s, last, x)) continue;
    candidates.push_back({s, c0, vv.shape[1]});
  }
  // A fault planted on a view is written into its input's bytes: every reader of that input
  // must then be a view of a disjoint channel range, so that only the view's readers see it.
  for (const Candidate& c : candidates) {
    const ir::Node& node = g.nodes[c.slice];
    const ir::ValueId x = node.inputs[0], v = node.outputs[0];
    bool alone = !is_output[static_cast<size_t>(x)];
    for (size_t k : readers[static_cast<size_t>(x)]) {
      auto other = std::find_if(candidates.begin(), candidates.end(), [&](const Candidate& o) { return o.slice == k; });
      alone = alone && other != candidates.end() &&
              (other->slice == c.slice || other->c0 + other->len <= c.c0 || c.c0 + c.len <= other->c0);
    }
    if (!alone) continue;
    const ir::Value& xv = ctx.value(x);
    const bool nwc = ctx.is_nwc(x);
    const auto vi = static_cast<size_t>(v);
    ctx.pointers[vi] = static_cast<float*>(original[static_cast<size_t>(x)]) + (nwc ? c.c0 : c.c0 * xv.shape[2]);
    pitch[vi] = nwc ? xv.shape[1] : 0;
    ctx.view[vi] = 1;
  }
  return pitch;
}

KernelPtr view_slice_kernel() { return std::make_unique<NoCopyKernel>(); }

void gather_rows(const float* view, int64_t pitch, float* dense, int64_t rows, int64_t inner) {
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dense + r * inner, view + r * pitch, static_cast<size_t>(inner) * sizeof(float));
}

void scatter_rows(const float* dense, float* view, int64_t pitch, int64_t rows, int64_t inner) {
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(view + r * pitch, dense + r * inner, static_cast<size_t>(inner) * sizeof(float));
}

}  // namespace lockstep::cpu
