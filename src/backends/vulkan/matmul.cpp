// MatMul (numpy semantics: batched, broadcast batch dims, 1-D operands), Gemm (transA, transB,
// alpha, beta, C broadcast to [M, N]) and Softmax (matmul.comp, softmax.comp): plain kernels, one
// output (Softmax: one row) per invocation, each sum in order from zero; epilogues in place after.
#include <cstring>

#include "backends/vulkan/families.h"
#include "backends/vulkan/shaders/params.h"
#include "ir/infer_rules.h"

namespace lockstep::vulkan {

namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

struct MatMulGeometry {
  int64_t m = 1, n = 1, k = 1;
  Shape batch;                                // the broadcast batch dims
  std::vector<int64_t> a_batch, b_batch;      // per batch dim, in elements (0: broadcast)
  int64_t am = 0, ak = 0, bk = 0, bn = 0;     // matrix strides
  int64_t batches() const { return num_elements(batch); }
};

MatMulGeometry geometry(const ir::Graph& graph, const ir::Node& node) {
  const Shape& a = graph.value(node.inputs[0]).shape;
  const Shape& b = graph.value(node.inputs[1]).shape;
  MatMulGeometry g;
  if (node.op == ir::Op::Gemm) {
    const bool ta = node.attrs.get_int("transA", 0) != 0, tb = node.attrs.get_int("transB", 0) != 0;
    g.m = ta ? a[1] : a[0];
    g.k = ta ? a[0] : a[1];
    g.n = tb ? b[0] : b[1];
    g.am = ta ? 1 : a[1];
    g.ak = ta ? a[1] : 1;
    g.bk = tb ? 1 : b[1];
    g.bn = tb ? b[1] : 1;
    return g;
  }
  const Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a, b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  g.m = a2[a2.size() - 2];
  g.k = a2.back();
  g.n = b2.back();
  g.am = g.k;
  g.ak = 1;
  g.bk = g.n;
  g.bn = 1;
  const Shape ab(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
  g.batch = ir::node_broadcast(node, ab, bb);
  g.a_batch = broadcast_strides(ab, g.batch);
  g.b_batch = broadcast_strides(bb, g.batch);
  for (auto& s : g.a_batch) s *= g.m * g.k;
  for (auto& s : g.b_batch) s *= g.k * g.n;
  return g;
}

void record_softmax(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const Shape& x = ctx.graph().value(node.inputs[0]).shape;
  const auto axis = static_cast<size_t>(ir::softmax_axis(node, static_cast<int64_t>(x.size())));
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x[d];
  for (size_t d = axis + 1; d < x.size(); ++d) inner *= x[d];
  if (outer * inner == 0 || x[axis] == 0) return;
  std::vector<uint32_t> p(SM_WORDS, 0);
  p[SM_ROWS] = word(outer * inner, node);
  p[SM_DIM] = word(x[axis], node);
  p[SM_INNER] = word(inner, node);
  p[SM_X] = ctx.at(node.inputs[0]);
  p[SM_Y] = ctx.at(node.outputs[0]);
  Dispatch d;
  d.shader = "softmax";
  d.base = ctx.add_params(p);
  d.groups[0] = groups_for(outer * inner, 64);
  program.dispatches.push_back(d);
}

}  // namespace

std::optional<std::string> matmul_unsupported(const ir::Graph& graph, const ir::Node& node) {
  if (node.op == ir::Op::Softmax) {
    const Shape& x = graph.value(node.inputs.at(0)).shape;
    const int64_t dim = x.empty() ? 1 : x[static_cast<size_t>(ir::softmax_axis(node, static_cast<int64_t>(x.size())))];
    if (dim * grid_passes(num_elements(x) / std::max<int64_t>(1, dim), 64) > kMaxSerialLoop)
      return "Softmax over " + std::to_string(dim) + " elements: vulkan walks a row serially up to " + std::to_string(kMaxSerialLoop) +
             " (llvmpipe's loop limit)";
    return std::nullopt;
  }
  if (node.inputs.size() < 2 || node.inputs[0] == ir::kNoValue || node.inputs[1] == ir::kNoValue)
    return std::string("needs two operands");
  MatMulGeometry g;
  try {
    g = geometry(graph, node);
  } catch (const Error& e) {
    return std::string(e.message());
  }
  if (g.batch.size() > MM_MAX_BATCH_RANK) return std::string("more than 4 batch dims are not supported on vulkan");
  if (g.m > 65535 || g.batches() > 65535 || (g.n + 63) / 64 > 65535)
    return std::string("the matrix product's dispatch grid exceeds 65535 workgroups in one dimension");
  if (g.k > kMaxSerialLoop)
    return "a matrix product over k = " + std::to_string(g.k) + ": vulkan sums serially up to " + std::to_string(kMaxSerialLoop) +
           " (llvmpipe's loop limit; a split sum is not implemented yet)";
  return std::nullopt;
}

void record_matmul(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& graph = ctx.graph();
  const ir::Node& node = graph.nodes[static_cast<size_t>(node_index)];
  if (node.op == ir::Op::Softmax) {
    record_softmax(ctx, node, program);
    record_epilogue(ctx, node_index, program);
    return;
  }
  const MatMulGeometry g = geometry(graph, node);
  if (g.m * g.n * g.batches() == 0) return;
  std::vector<uint32_t> p(MM_WORDS, 0);
  p[MM_M] = word(g.m, node);
  p[MM_N] = word(g.n, node);
  p[MM_K] = word(g.k, node);
  p[MM_BRANK] = static_cast<uint32_t>(g.batch.size());
  for (size_t d = 0; d < g.batch.size(); ++d) {
    p[MM_BDIMS + d] = word(g.batch[d], node);
    p[MM_ABSTR + d] = word(g.a_batch[d], node);
    p[MM_BBSTR + d] = word(g.b_batch[d], node);
  }
  p[MM_A] = ctx.at(node.inputs[0]);
  p[MM_A + 1] = word(g.am, node);
  p[MM_A + 2] = word(g.ak, node);
  p[MM_B] = ctx.at(node.inputs[1]);
  p[MM_B + 1] = word(g.bk, node);
  p[MM_B + 2] = word(g.bn, node);
  p[MM_C] = CV_NO_BIAS;
  float alpha = 1.0f, beta = 0.0f;
  if (node.op == ir::Op::Gemm) {
    alpha = node.attrs.get_float("alpha", 1.0f);
    beta = node.attrs.get_float("beta", 1.0f);
    if (node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue) {
      const std::vector<int64_t> cs = broadcast_strides(graph.value(node.inputs[2]).shape, {g.m, g.n});
      p[MM_C] = ctx.at(node.inputs[2]);
      p[MM_C + 1] = word(cs[0], node);
      p[MM_C + 2] = word(cs[1], node);
    }
  }
  p[MM_Y] = ctx.at(node.outputs[0]);
  p[MM_ALPHA] = float_bits(alpha);
  p[MM_BETA] = float_bits(beta);
  Dispatch d;
  d.shader = "matmul";
  d.base = ctx.add_params(p);
  d.groups[0] = static_cast<uint32_t>((g.n + 63) / 64);
  d.groups[1] = static_cast<uint32_t>(g.m);
  d.groups[2] = static_cast<uint32_t>(std::max<int64_t>(g.batches(), 1));
  program.dispatches.push_back(d);
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::vulkan
