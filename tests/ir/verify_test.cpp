#include "ir/verify.h"

#include <gtest/gtest.h>

#include "passes/graph_builder.h"

namespace lockstep {
namespace {

using ir::Op;
using testing::GraphBuilder;

// x -> Conv -> Add(b) -> y
GraphBuilder conv_add() {
  GraphBuilder b;
  auto x = b.input("x", {1, 2, 8});
  auto w = b.filled("w", {3, 2, 1}, 0.5f);
  auto c = b.node(Op::Conv, "conv", {x, w}, {1, 3, 8});
  auto bias = b.filled("bias", {1, 3, 1}, 1.0f);
  b.output(b.node(Op::Add, "add", {c, bias}, {1, 3, 8}));
  return b;
}

ErrorCode code_of(const ir::Graph& g, std::string* node = nullptr) {
  try {
    ir::verify(g);
  } catch (const Error& e) {
    if (node) *node = e.node();
    return e.code();
  }
  ADD_FAILURE() << "verify accepted the graph";
  return ErrorCode::Internal;
}

TEST(Verify, AcceptsWellFormedGraph) {
  auto b = conv_add();
  EXPECT_NO_THROW(ir::verify(b.graph()));
}

TEST(Verify, RejectsNodesOutOfTopologicalOrder) {
  auto b = conv_add();
  std::swap(b.graph().nodes[0], b.graph().nodes[1]);
  std::string node;
  EXPECT_EQ(code_of(b.graph(), &node), ErrorCode::InvalidModel);
  EXPECT_EQ(node, "add");
}

TEST(Verify, RejectsCycle) {
  GraphBuilder b;
  auto x = b.input("x", {4});
  auto outs = b.nodes(Op::Add, "a", {x, x}, {{"a", {4}}});
  auto t = b.node(Op::Tanh, "t", {outs[0]}, {4});
  b.graph().nodes[0].inputs[1] = t;  // a reads t, t reads a
  b.output(t);
  std::string node;
  EXPECT_EQ(code_of(b.graph(), &node), ErrorCode::InvalidModel);
  EXPECT_EQ(node, "a");
}

TEST(Verify, RejectsValueNeverProduced) {
  auto b = conv_add();
  ir::Value ghost;
  ghost.name = "ghost";
  ghost.shape = {1, 3, 8};
  b.graph().nodes[1].inputs[1] = b.graph().add_value(ghost);
  std::string node;
  EXPECT_EQ(code_of(b.graph(), &node), ErrorCode::InvalidModel);
  EXPECT_EQ(node, "add");
}

TEST(Verify, RejectsTwoProducers) {
  auto b = conv_add();
  b.graph().nodes[1].outputs[0] = b.graph().nodes[0].outputs[0];
  std::string node;
  EXPECT_EQ(code_of(b.graph(), &node), ErrorCode::InvalidModel);
  EXPECT_EQ(node, "add");
}

TEST(Verify, RejectsIdsOutOfRange) {
  auto b = conv_add();
  b.graph().nodes[0].inputs[1] = 99;
  EXPECT_EQ(code_of(b.graph()), ErrorCode::InvalidModel);
  auto c = conv_add();
  c.graph().outputs.push_back(-7);
  EXPECT_EQ(code_of(c.graph()), ErrorCode::InvalidModel);
}

TEST(Verify, RejectsGraphOutputNobodyProduces) {
  auto b = conv_add();
  ir::Value lonely;
  lonely.name = "lonely";
  b.graph().outputs.push_back(b.graph().add_value(lonely));
  EXPECT_EQ(code_of(b.graph()), ErrorCode::InvalidModel);
}

TEST(Verify, RejectsEpilogueOperandThatDoesNotBroadcast) {
  auto b = conv_add();
  auto bad = b.filled("bad", {5}, 1.0f);
  b.graph().nodes[0].epilogue.push_back({Op::Mul, bad, false, 0.0f, "mul"});
  std::string node;
  EXPECT_EQ(code_of(b.graph(), &node), ErrorCode::Internal);
  EXPECT_EQ(node, "conv");
}

TEST(Verify, RejectsEpilogueOperandProducedLater) {
  auto b = conv_add();
  auto later = b.graph().nodes[1].outputs[0];
  b.graph().nodes[0].epilogue.push_back({Op::Mul, later, false, 0.0f, "mul"});
  EXPECT_EQ(code_of(b.graph()), ErrorCode::InvalidModel);
}

TEST(Verify, ChecksPlanConsistency) {
  auto b = conv_add();
  ir::MemoryPlan plan;
  plan.offsets.assign(b.graph().values.size(), -1);
  plan.sizes.assign(b.graph().values.size(), 0);
  plan.arena_bytes = 1024;
  for (size_t v = 0; v < b.graph().values.size(); ++v)
    if (!b.graph().values[v].constant.defined()) {
      plan.offsets[v] = 0;
      plan.sizes[v] = 96;
    }
  b.graph().plan = plan;
  EXPECT_NO_THROW(ir::verify(b.graph()));  // overlap is the checker's job, not the verifier's
  b.graph().plan->offsets[0] = 32;          // misaligned
  EXPECT_EQ(code_of(b.graph()), ErrorCode::Internal);
  b.graph().plan->offsets[0] = 1024;        // outside the arena
  EXPECT_EQ(code_of(b.graph()), ErrorCode::Internal);
}

TEST(Verify, BroadcastsTo) {
  EXPECT_TRUE(ir::broadcasts_to({1, 3, 1}, {2, 3, 8}));
  EXPECT_TRUE(ir::broadcasts_to({}, {2, 3}));
  EXPECT_TRUE(ir::broadcasts_to({8}, {2, 3, 8}));
  EXPECT_FALSE(ir::broadcasts_to({4, 4}, {4}));
  EXPECT_FALSE(ir::broadcasts_to({2}, {2, 3}));
}

}  // namespace
}  // namespace lockstep
