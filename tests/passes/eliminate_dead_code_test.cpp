#include "passes/eliminate_dead_code.h"

#include <gtest/gtest.h>

#include "ir/verify.h"
#include "passes/graph_builder.h"

namespace lockstep {
namespace {

using ir::Op;

// x -> Tanh -> y (output); x -> Sigmoid -> Neg (dead chain); x -> Split -> (used, unused)
testing::GraphBuilder graph_with_dead_nodes() {
  testing::GraphBuilder b;
  auto x = b.input("x", {1, 4, 8});
  auto y = b.node(Op::Tanh, "tanh", {x}, {1, 4, 8});
  auto s = b.node(Op::Sigmoid, "sigmoid", {x}, {1, 4, 8});
  b.node(Op::Neg, "neg", {s}, {1, 4, 8});
  auto sizes = b.ints("sizes", {2, 2});
  auto parts = b.nodes(Op::Split, "split", {x, sizes}, {{"p0", {1, 2, 8}}, {"p1", {1, 2, 8}}});
  auto r = b.node(Op::Relu, "relu", {parts[0]}, {1, 2, 8});
  b.output(y);
  b.output(r);
  return b;
}

std::vector<std::string> node_names(const ir::Graph& g) {
  std::vector<std::string> names;
  for (const auto& n : g.nodes) names.push_back(n.name);
  return names;
}

TEST(EliminateDeadCode, RemovesUnreadNodesAndKeepsPartlyUsedMultiOutputNodes) {
  auto b = graph_with_dead_nodes();
  passes::PassContext ctx({});
  passes::eliminate_dead_code(b.graph(), ctx);
  EXPECT_EQ(node_names(b.graph()), (std::vector<std::string>{"tanh", "split", "relu"}));
  EXPECT_EQ(ctx.applications(), 2);
  ir::verify(b.graph());
}

TEST(EliminateDeadCode, EpilogueOperandsKeepTheirProducerAlive) {
  testing::GraphBuilder b;
  auto x = b.input("x", {4});
  auto e = b.node(Op::Exp, "exp", {x}, {4});
  auto t = b.node(Op::Tanh, "tanh", {x}, {4});
  b.graph().nodes[1].epilogue.push_back({Op::Mul, e, false, 0.0f, "mul"});
  b.output(t);
  passes::PassContext ctx({});
  passes::eliminate_dead_code(b.graph(), ctx);
  EXPECT_EQ(node_names(b.graph()), (std::vector<std::string>{"exp", "tanh"}));
  EXPECT_EQ(ctx.applications(), 0);
}

TEST(EliminateDeadCode, BisectLimitStopsAfterTheFirstRemoval) {
  auto b = graph_with_dead_nodes();
  passes::PipelineOptions options;
  options.opt_bisect_limit = 1;
  passes::PassContext ctx(options);
  passes::eliminate_dead_code(b.graph(), ctx);
  // Backwards: neg goes first; sigmoid then still has a reader and stays.
  EXPECT_EQ(node_names(b.graph()), (std::vector<std::string>{"tanh", "sigmoid", "split", "relu"}));
  ASSERT_EQ(ctx.log().size(), 1u);
  EXPECT_EQ(ctx.log()[0], "#1 eliminate_dead_code: remove unused Neg 'neg'");
  ir::verify(b.graph());
}

}  // namespace
}  // namespace lockstep
