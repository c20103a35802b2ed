#include "backends/cpu/views.h"

#include <algorithm>
#include <cstring>

#include "backends/channel_views.h"

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
    case Op::Erf: case Op::Softplus: case Op::Ceil: case Op::Floor: case Op::Abs: case Op::Reciprocal:
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<int64_t> choose_views(CompileContext& ctx) {
  const ir::Graph& g = ctx.graph;
  std::vector<int64_t> pitch(g.values.size(), 0);
  ctx.view.assign(g.values.size(), 0);
  const std::vector<std::vector<size_t>> readers = backends::value_readers(g);
  std::vector<char> is_output(g.values.size(), 0);
  for (ir::ValueId id : g.outputs) is_output[static_cast<size_t>(id)] = 1;
  const std::vector<void*> original = ctx.pointers;
  // Laid-out bytes of a value, before any view is taken.
  auto span = [&](ir::ValueId id) {
    const auto* p = static_cast<const std::byte*>(original[static_cast<size_t>(id)]);
    const ir::Value& v = ctx.value(id);
    return backends::ByteSpan{p, p + num_elements(v.shape) * static_cast<int64_t>(storage_size(v.dtype))};
  };
  std::vector<backends::ViewCandidate> candidates;
  for (size_t s = 0; s < g.nodes.size(); ++s) {
    const ir::Node& node = g.nodes[s];
    if (node.op != Op::Slice) continue;
    const std::optional<backends::ChannelRange> range = backends::channel_slice(g, node);
    if (!range) continue;
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
    if (!readers_ok || backends::overwritten_between(g, s, last, span(x), span)) continue;
    candidates.push_back({s, *range});
  }
  // A fault planted on a view is written into its input's bytes: every reader of that input
  // must then be a view of a disjoint channel range, so that only the view's readers see it.
  for (const backends::ViewCandidate& c : candidates) {
    const ir::Node& node = g.nodes[c.slice];
    const ir::ValueId x = node.inputs[0], v = node.outputs[0];
    if (!backends::alone(g, c, candidates, readers, is_output)) continue;
    // A Slice of a view copies: the view's own buffer is never written (found by the cuda views).
    if (ctx.view[static_cast<size_t>(x)]) continue;
    const ir::Value& xv = ctx.value(x);
    const bool nwc = ctx.is_nwc(x);
    const auto vi = static_cast<size_t>(v);
    ctx.pointers[vi] = static_cast<float*>(original[static_cast<size_t>(x)]) + (nwc ? c.range.c0 : c.range.c0 * xv.shape[2]);
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
