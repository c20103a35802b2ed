// Discrete decisions: two runs whose Ceil lands on different integers are reported at that node,
// element and inputs, and a later length change is not what is named first.
#include <gtest/gtest.h>

#include "diff/discrete.h"
#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep {
namespace {

ir::ValueId value(ir::Graph& g, const std::string& name, DType dtype, Shape shape) {
  ir::Value v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  return g.add_value(std::move(v));
}

// x [1,4] -> Mul 2 -> Ceil -> Cast int64 -> durations; ReduceSum would follow in a voice.
ir::Graph durations_graph() {
  ir::Graph g;
  ir::ValueId x = value(g, "x", DType::Float32, {1, 4});
  ir::Value three;
  three.name = "three";
  three.constant = Tensor::scalar<float>(2.0f);
  ir::ValueId c = g.add_value(three);
  ir::ValueId w = value(g, "w", DType::Float32, {});
  ir::ValueId up = value(g, "w_ceil", DType::Float32, {});
  ir::ValueId d = value(g, "durations", DType::Int64, {});
  g.inputs = {x};
  g.nodes.push_back({ir::Op::Mul, "/dp/Mul", {x, c}, {w}, {}, {}});
  g.nodes.push_back({ir::Op::Ceil, "/dp/Ceil", {w}, {up}, {}, {}});
  ir::Attributes to;
  to.set("to", int64_t{7});
  g.nodes.push_back({ir::Op::Cast, "/dp/Cast", {up}, {d}, to, {}});
  g.outputs = {d};
  return g;
}

TEST(DiscreteDecisions, NamesTheFirstFlippedCeilWithItsInputs) {
  Model model = Model::from_graph(durations_graph());
  Options options;
  options.fuse = false;
  auto exe = compile(model, "cpu", options);
  const ir::Graph& g = model.graph();
  diff::DiscreteCapture a(g), b(g);
  RunOptions ra, rb;
  ra.tap = a.tap();
  rb.tap = b.tap();
  // Element 2 straddles an integer after the Mul: 2 * 1.0000001 = 2.0000002, 2 * 0.99999994 = 1.9999999.
  exe->run({Tensor::from_vector<float>({1, 4}, {0.5f, 1.5f, 1.0000001f, 0.25f})}, ra);
  exe->run({Tensor::from_vector<float>({1, 4}, {0.5f, 1.5f, 0.99999994f, 0.25f})}, rb);
  auto d = diff::first_discrete_divergence(g, a, b);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->node, "/dp/Ceil");
  EXPECT_EQ(d->op, "Ceil");
  EXPECT_EQ(d->index, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(d->ref_value, 3.0);
  EXPECT_EQ(d->test_value, 2.0);
  ASSERT_EQ(d->inputs.size(), 1u);
  EXPECT_EQ(d->inputs[0].name, "w");
  EXPECT_GT(d->inputs[0].ref, 2.0);
  EXPECT_LT(d->inputs[0].test, 2.0);
  EXPECT_NE(d->message().find("Ceil at /dp/Ceil [0,2]: 3 vs 2 (input 'w': 2.0000"), std::string::npos) << d->message();
  // The same inputs on both sides: nothing to report.
  diff::DiscreteCapture c(g);
  RunOptions rc;
  rc.tap = c.tap();
  exe->run({Tensor::from_vector<float>({1, 4}, {0.5f, 1.5f, 1.0000001f, 0.25f})}, rc);
  EXPECT_FALSE(diff::first_discrete_divergence(g, a, c).has_value());
}

}  // namespace
}  // namespace lockstep
