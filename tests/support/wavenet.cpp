#include "support/wavenet.h"

#include <string>
#include <vector>

#include "backends/cpu/cpu_test_util.h"
#include "support/graph_check.h"

namespace lockstep::test {

ir::Graph wn_layer(const WnLayerOptions& o) {
  using ir::Op;
  using cpu_test::random_tensor;
  const int64_t n = o.n, h = o.h, t = o.t, k = o.k;
  ir::Graph g;
  GraphBuilder b(g);
  const ir::ValueId x = b.value("x", {n, h, t}), mask = b.value("mask", {1, 1, t}), s = b.value("s", {n, h, t});
  g.inputs = {x, mask, s};
  const float bound = 1.0f / static_cast<float>(h * k);  // keeps the activations near unit scale
  const ir::ValueId w_in = b.value("w_in", {2 * h, h, k}, random_tensor({2 * h, h, k}, 81, DType::Float32, -3 * bound, 3 * bound));
  const ir::ValueId b_in = b.value("b_in", {2 * h}, random_tensor({2 * h}, 82, DType::Float32, -0.2f, 0.2f));
  const ir::ValueId w_rs = b.value("w_rs", {2 * h, h, 1}, random_tensor({2 * h, h, 1}, 83, DType::Float32, -0.3f, 0.3f));
  const ir::ValueId b_rs = b.value("b_rs", {2 * h}, random_tensor({2 * h}, 84, DType::Float32, -0.2f, 0.2f));
  auto v = [&](const char* name, int64_t c) { return b.value(name, {n, c, t}); };
  const ir::ValueId y = v("y", 2 * h), a = v("a", h), bb = v("b", h), ta = v("ta", h), sb = v("sb", h), acts = v("acts", h);
  const ir::ValueId rs = v("rs", 2 * h), res = v("res", h), skip = v("skip", h), sum = v("sum", h), x_new = v("x_new", h);
  const ir::ValueId out = v("out", h), rs_in = o.late_operand ? v("relu_s", h) : s;
  auto slice = [&](const std::string& name, ir::ValueId from, int64_t c0, int64_t c1, ir::ValueId to) {
    return b.node(Op::Slice, name, {from, b.ints(name + "_s", {c0}), b.ints(name + "_e", {c1}), b.ints(name + "_a", {1})}, to);
  };
  ir::Node conv_in = b.node(Op::Conv, "conv_in", {x, w_in, b_in}, y);
  conv_in.attrs.set("pads", std::vector<int64_t>{(k - 1) / 2, (k - 1) / 2});
  g.nodes = {conv_in,
             slice("slice_a", y, 0, h, a),
             b.node(Op::Tanh, "tanh", {a}, ta),
             slice("slice_b", y, h, 2 * h, bb),
             b.node(Op::Sigmoid, "sigmoid", {bb}, sb),
             b.node(Op::Mul, "gate", {ta, sb}, acts),
             b.node(Op::Conv, "conv_rs", {acts, w_rs, b_rs}, rs)};
  if (o.late_operand) g.nodes.push_back(b.node(Op::Relu, "relu_s", {s}, rs_in));
  for (ir::Node node : {slice("slice_res", rs, 0, h, res), b.node(Op::Add, "add_res", {x, res}, sum),
                        b.node(Op::Mul, "mask_res", {sum, mask}, x_new), slice("slice_skip", rs, h, 2 * h, skip),
                        b.node(Op::Add, "add_skip", {rs_in, skip}, out)})
    g.nodes.push_back(std::move(node));
  g.outputs = {x_new, out};
  if (o.tanh_is_output) g.outputs.push_back(ta);
  if (o.skip_is_output) g.outputs.push_back(skip);
  for (auto& value : g.values)
    if (value.constant.defined()) value.dtype = value.constant.dtype();
  return g;
}

}  // namespace lockstep::test
