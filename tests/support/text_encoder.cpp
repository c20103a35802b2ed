#include "support/text_encoder.h"

#include <vector>

#include "backends/cpu/cpu_test_util.h"
#include "support/graph_check.h"

namespace lockstep::test {

ir::Graph text_encoder_products(int64_t t, uint32_t seed) {
  ir::Graph g;
  test::GraphBuilder b(g);
  auto weights = [&](const char* name, Shape s, uint32_t k) {
    return b.value(name, s, cpu_test::random_tensor(s, seed + k, DType::Float32, -0.3f, 0.3f));
  };
  ir::ValueId x = b.value("x", {1, 192, t});
  g.inputs = {x};
  ir::ValueId h = b.value("h", {1, 384, t});
  ir::Node a = b.node(ir::Op::Conv, "/enc/conv_a", {x, weights("wa", {384, 192, 3}, 1), weights("ba", {384}, 2)}, h);
  a.attrs.set("pads", std::vector<int64_t>{1, 1});
  a.epilogue = {{ir::Op::Relu, ir::kNoValue, false, 0, "relu"}};
  g.nodes.push_back(a);
  ir::ValueId y = b.value("y", {1, 192, t});
  ir::Node c = b.node(ir::Op::Conv, "/enc/conv_b", {h, weights("wb", {192, 384, 5}, 3)}, y);
  c.attrs.set("pads", std::vector<int64_t>{4, 4});
  c.attrs.set("dilations", std::vector<int64_t>{2});
  g.nodes.push_back(c);
  // Attention-like products: [1, 192, t] seen as [2, 96, t]; scores [2, t, t] = q^T k.
  ir::ValueId heads = b.value("heads", {2, 96, t});
  ir::Node r = b.node(ir::Op::Reshape, "/enc/heads", {y, b.ints("hs", {2, 96, t})}, heads);
  g.nodes.push_back(r);
  ir::ValueId qt = b.value("qt", {2, t, 96});
  ir::Node tr = b.node(ir::Op::Transpose, "/enc/qt", {heads}, qt);
  tr.attrs.set("perm", std::vector<int64_t>{0, 2, 1});
  g.nodes.push_back(tr);
  ir::ValueId scores = b.value("scores", {2, t, t});
  g.nodes.push_back(b.node(ir::Op::MatMul, "/enc/scores", {qt, heads}, scores));
  // Outside the prefix: float32 as always.
  ir::ValueId out = b.value("out", {1, 192, t});
  g.nodes.push_back(b.node(ir::Op::Conv, "/dec/conv", {y, weights("wd", {192, 192, 1}, 4)}, out));
  g.outputs = {scores, out};
  return g;
}

}  // namespace lockstep::test
