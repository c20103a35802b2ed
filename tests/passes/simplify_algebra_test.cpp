#include "passes/simplify_algebra.h"

#include <gtest/gtest.h>

#include "ir/verify.h"
#include "passes/graph_builder.h"

namespace lockstep {
namespace {

using ir::Op;

std::vector<std::string> node_names(const ir::Graph& g) {
  std::vector<std::string> names;
  for (const auto& n : g.nodes) names.push_back(n.name);
  return names;
}

int simplify(ir::Graph& g) {
  passes::PassContext ctx({});
  passes::simplify_algebra(g, ctx);
  ir::verify(g);
  return ctx.applications();
}

TEST(SimplifyAlgebra, DropsNeutralElementsAndRewiresReaders) {
  testing::GraphBuilder b;
  auto x = b.input("x", {2, 4});
  auto zeros = b.filled("zeros", {4}, 0.0f);
  auto ones = b.filled("ones", {1, 4}, 1.0f);
  auto a = b.node(Op::Add, "x_plus_0", {x, zeros}, {2, 4});
  auto c = b.node(Op::Add, "0_plus_x", {zeros, a}, {2, 4});
  auto d = b.node(Op::Sub, "x_minus_0", {c, zeros}, {2, 4});
  auto e = b.node(Op::Mul, "x_times_1", {d, ones}, {2, 4});
  auto f = b.node(Op::Mul, "1_times_x", {ones, e}, {2, 4});
  auto g = b.node(Op::Div, "x_over_1", {f, ones}, {2, 4});
  auto h = b.node(Op::Identity, "identity", {g}, {2, 4});
  auto t = b.node(Op::Tanh, "tanh", {h}, {2, 4});
  b.output(t);
  EXPECT_EQ(simplify(b.graph()), 7);
  ASSERT_EQ(node_names(b.graph()), (std::vector<std::string>{"tanh"}));
  EXPECT_EQ(b.graph().nodes[0].inputs[0], x);
}

TEST(SimplifyAlgebra, KeepsOpsThatAreNotIdentities) {
  testing::GraphBuilder b;
  auto x = b.input("x", {4});
  auto zeros = b.filled("zeros", {4}, 0.0f);
  auto twos = b.filled("twos", {4}, 2.0f);
  auto ones = b.filled("ones", {4}, 1.0f);
  auto s = b.node(Op::Sub, "0_minus_x", {zeros, x}, {4});
  auto m = b.node(Op::Mul, "x_times_2", {s, twos}, {4});
  auto d = b.node(Op::Div, "1_over_x", {ones, m}, {4});
  b.output(d);
  EXPECT_EQ(simplify(b.graph()), 0);
  EXPECT_EQ(b.graph().nodes.size(), 3u);
}

TEST(SimplifyAlgebra, KeepsBroadcastingAddOfZeros) {
  testing::GraphBuilder b;
  auto x = b.input("x", {4});
  auto zeros = b.filled("zeros", {4, 4}, 0.0f);
  auto a = b.node(Op::Add, "broadcast", {x, zeros}, {4, 4});
  b.output(b.node(Op::Tanh, "tanh", {a}, {4, 4}));
  EXPECT_EQ(simplify(b.graph()), 0);
  EXPECT_EQ(node_names(b.graph()), (std::vector<std::string>{"broadcast", "tanh"}));
}

TEST(SimplifyAlgebra, DropsIdentitySlicesAndReshapesOnly) {
  testing::GraphBuilder b;
  auto x = b.input("x", {1, 144, 16});
  auto zero = b.ints("zero", {0});
  auto big = b.ints("big", {INT64_MAX});
  auto axis1 = b.ints("axis1", {1});
  auto one = b.ints("one", {1});
  auto minus_one = b.ints("minus_one", {-1});
  auto full = b.node(Op::Slice, "full", {x, zero, big, axis1, one}, {1, 144, 16});
  auto full_default_step = b.node(Op::Slice, "full_default_step", {full, zero, big}, {1, 144, 16});
  auto flip = b.node(Op::Slice, "flip", {full_default_step, minus_one, b.ints("min", {INT64_MIN}), axis1, minus_one},
                     {1, 144, 16});
  auto half = b.node(Op::Slice, "half", {flip, zero, b.ints("e72", {72}), axis1}, {1, 72, 16});
  auto same = b.node(Op::Reshape, "same", {half, b.ints("shape_same", {1, 72, 16})}, {1, 72, 16});
  auto other = b.node(Op::Reshape, "other", {same, b.ints("shape_other", {72, 16})}, {72, 16});
  b.output(other);
  EXPECT_EQ(simplify(b.graph()), 3);
  EXPECT_EQ(node_names(b.graph()), (std::vector<std::string>{"flip", "half", "other"}));
  EXPECT_EQ(b.graph().nodes[0].inputs[0], x);
}

TEST(SimplifyAlgebra, GraphOutputKeepsItsName) {
  testing::GraphBuilder b;
  auto x = b.input("x", {1, 2, 8});
  auto c = b.node(Op::Conv, "conv", {x, b.filled("w", {2, 2, 1}, 0.5f)}, {1, 2, 8});
  auto y = b.node(Op::Add, "y", {c, b.filled("zeros", {1}, 0.0f)}, {1, 2, 8});
  b.output(y);
  EXPECT_EQ(simplify(b.graph()), 1);
  ASSERT_EQ(b.graph().nodes.size(), 1u);
  ASSERT_EQ(b.graph().outputs.size(), 1u);
  EXPECT_EQ(b.graph().outputs[0], c);
  EXPECT_EQ(b.graph().value(b.graph().outputs[0]).name, "y");
  EXPECT_EQ(b.graph().find_value("y"), c);
}

TEST(SimplifyAlgebra, KeepsNodeWhenRenamingWouldChangeAnInputName) {
  testing::GraphBuilder b;
  auto x = b.input("x", {4});
  auto y = b.node(Op::Identity, "y", {x}, {4});
  b.output(y);
  EXPECT_EQ(simplify(b.graph()), 0);
  EXPECT_EQ(b.graph().value(b.graph().outputs[0]).name, "y");
  EXPECT_EQ(b.graph().value(x).name, "x");
}

TEST(SimplifyAlgebra, KeepsNodeWhenTwoOutputsWouldMerge) {
  testing::GraphBuilder b;
  auto x = b.input("x", {4});
  auto t = b.node(Op::Tanh, "t", {x}, {4});
  auto y = b.node(Op::Identity, "y", {t}, {4});
  b.output(t);
  b.output(y);
  EXPECT_EQ(simplify(b.graph()), 0);
  EXPECT_EQ(b.graph().nodes.size(), 2u);
}

}  // namespace
}  // namespace lockstep
