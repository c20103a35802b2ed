#include "passes/fuse_epilogues.h"

#include <gtest/gtest.h>

#include "ir/verify.h"
#include "passes/graph_builder.h"
#include "reference/evaluate.h"

namespace lockstep {
namespace {

using ir::Op;

// The reference runs epilogues in float64 exactly like the unfused ops.
constexpr double kFusedVsUnfusedAbs = 1e-15;

int fuse(ir::Graph& g, int limit = -1) {
  passes::PipelineOptions options;
  options.opt_bisect_limit = limit;
  passes::PassContext ctx(options);
  passes::fuse_epilogues(g, ctx);
  ir::verify(g);
  return ctx.applications();
}

void expect_step(const ir::EpilogueStep& step, Op op, ir::ValueId operand, bool lhs, const std::string& name) {
  EXPECT_EQ(step.op, op) << name;
  EXPECT_EQ(step.operand, operand) << name;
  EXPECT_EQ(step.operand_is_lhs, lhs) << name;
  EXPECT_EQ(step.onnx_name, name);
}

TEST(FuseEpilogues, FoldsConvAddTanhMulLeakyReluChain) {
  testing::GraphBuilder b;
  auto x = b.input("x", {1, 2, 8});
  auto mask = b.input("mask", {1, 1, 8});
  auto c = b.node(Op::Conv, "conv", {x, b.filled("w", {3, 2, 1}, 0.5f)}, {1, 3, 8});
  auto bias = b.filled("bias", {1, 3, 1}, 0.1f);
  auto a = b.node(Op::Add, "add", {c, bias}, {1, 3, 8});
  auto t = b.node(Op::Tanh, "tanh", {a}, {1, 3, 8});
  auto m = b.node(Op::Mul, "mul", {mask, t}, {1, 3, 8});
  ir::Attributes alpha;
  alpha.set("alpha", 0.2f);
  auto l = b.node(Op::LeakyRelu, "lrelu", {m}, {1, 3, 8}, DType::Float32, alpha);
  b.output(l);
  EXPECT_EQ(fuse(b.graph()), 4);
  ASSERT_EQ(b.graph().nodes.size(), 1u);
  const ir::Node& conv = b.graph().nodes[0];
  EXPECT_EQ(conv.name, "conv");
  EXPECT_EQ(conv.outputs[0], l);
  ASSERT_EQ(conv.epilogue.size(), 4u);
  expect_step(conv.epilogue[0], Op::Add, bias, false, "add");
  expect_step(conv.epilogue[1], Op::Tanh, ir::kNoValue, false, "tanh");
  expect_step(conv.epilogue[2], Op::Mul, mask, true, "mul");
  expect_step(conv.epilogue[3], Op::LeakyRelu, ir::kNoValue, false, "lrelu");
  EXPECT_FLOAT_EQ(conv.epilogue[3].alpha, 0.2f);
  EXPECT_EQ(conv.result_onnx_name(), "lrelu");
  EXPECT_EQ(b.graph().find_node("tanh"), 0);
}

TEST(FuseEpilogues, OperandMustExistBeforeTheProducer) {
  // Residual: Add(conv_a, conv_b) may join conv_b (conv_a is ready then), not conv_a.
  testing::GraphBuilder b;
  auto x = b.input("x", {1, 2, 8});
  auto w = b.filled("w", {2, 2, 1}, 0.5f);
  auto ca = b.node(Op::Conv, "conv_a", {x, w}, {1, 2, 8});
  auto cb = b.node(Op::Conv, "conv_b", {x, w}, {1, 2, 8});
  auto s = b.node(Op::Sub, "sub", {ca, cb}, {1, 2, 8});
  b.output(s);
  EXPECT_EQ(fuse(b.graph()), 1);
  ASSERT_EQ(b.graph().nodes.size(), 2u);
  EXPECT_TRUE(b.graph().nodes[0].epilogue.empty());
  ASSERT_EQ(b.graph().nodes[1].epilogue.size(), 1u);
  expect_step(b.graph().nodes[1].epilogue[0], Op::Sub, ca, true, "sub");
}

TEST(FuseEpilogues, GatedActivationFusesMulIntoTheLaterActivation) {
  // conv -> slice/slice -> tanh, sigmoid -> mul: Slices break the chain at the conv.
  testing::GraphBuilder b;
  auto x = b.input("x", {1, 4, 8});
  auto c = b.node(Op::Conv, "conv", {x, b.filled("w", {4, 4, 1}, 0.5f)}, {1, 4, 8});
  auto axis = b.ints("axis", {1});
  auto lo = b.node(Op::Slice, "lo", {c, b.ints("s0", {0}), b.ints("e2", {2}), axis}, {1, 2, 8});
  auto hi = b.node(Op::Slice, "hi", {c, b.ints("s2", {2}), b.ints("e4", {4}), axis}, {1, 2, 8});
  auto t = b.node(Op::Tanh, "tanh", {lo}, {1, 2, 8});
  auto s = b.node(Op::Sigmoid, "sigmoid", {hi}, {1, 2, 8});
  auto m = b.node(Op::Mul, "mul", {t, s}, {1, 2, 8});
  b.output(m);
  EXPECT_EQ(fuse(b.graph()), 1);
  ASSERT_EQ(b.graph().nodes.size(), 5u);
  const ir::Node& sigmoid = b.graph().nodes[4];
  EXPECT_EQ(sigmoid.name, "sigmoid");
  ASSERT_EQ(sigmoid.epilogue.size(), 1u);
  expect_step(sigmoid.epilogue[0], Op::Mul, t, true, "mul");
  EXPECT_EQ(sigmoid.outputs[0], m);
}

TEST(FuseEpilogues, RefusesSharedIntermediatesOutputsAndGrowingBroadcasts) {
  testing::GraphBuilder b;
  auto x = b.input("x", {1, 2, 8});
  auto w = b.filled("w", {2, 2, 1}, 0.5f);
  // Two readers of the conv output.
  auto c1 = b.node(Op::Conv, "c1", {x, w}, {1, 2, 8});
  auto t1 = b.node(Op::Tanh, "t1", {c1}, {1, 2, 8});
  auto t2 = b.node(Op::Sigmoid, "t2", {c1}, {1, 2, 8});
  // Intermediate that is a graph output.
  auto c2 = b.node(Op::Conv, "c2", {t1, w}, {1, 2, 8});
  auto r2 = b.node(Op::Relu, "r2", {c2}, {1, 2, 8});
  // Broadcast that grows the shape.
  auto c3 = b.node(Op::Conv, "c3", {t2, b.filled("w1", {1, 2, 8}, 0.5f)}, {1, 1, 1});
  auto grow = b.node(Op::Add, "grow", {c3, x}, {1, 2, 8});
  // x * x reads the intermediate twice.
  auto c4 = b.node(Op::Conv, "c4", {grow, w}, {1, 2, 8});
  auto sq = b.node(Op::Mul, "square", {c4, c4}, {1, 2, 8});
  b.output(c2);
  b.output(r2);
  b.output(sq);
  EXPECT_EQ(fuse(b.graph()), 0);
  EXPECT_EQ(b.graph().nodes.size(), 9u);
}

TEST(FuseEpilogues, BisectLimitStopsMidChain) {
  testing::GraphBuilder b;
  auto x = b.input("x", {2, 3});
  auto mm = b.node(Op::MatMul, "mm", {x, b.filled("w", {3, 3}, 0.5f)}, {2, 3});
  auto e = b.node(Op::Exp, "exp", {mm}, {2, 3});
  auto n = b.node(Op::Neg, "neg", {e}, {2, 3});
  auto q = b.node(Op::Sqrt, "sqrt", {n}, {2, 3});
  b.output(q);
  EXPECT_EQ(fuse(b.graph(), 2), 2);
  ASSERT_EQ(b.graph().nodes.size(), 2u);
  EXPECT_EQ(b.graph().nodes[0].epilogue.size(), 2u);
  EXPECT_EQ(b.graph().nodes[0].outputs[0], n);
  EXPECT_EQ(b.graph().nodes[1].name, "sqrt");
  EXPECT_EQ(b.graph().nodes[1].inputs[0], n);
}

TEST(FuseEpilogues, FusedChainOfEveryStepOpMatchesTheUnfusedReference) {
  testing::GraphBuilder b;
  auto x = b.input("x", {2, 3});
  auto y = b.input("y", {1, 3});
  auto mm = b.node(Op::MatMul, "mm", {x, b.filled("w", {3, 3}, 0.25f)}, {2, 3});
  auto v = b.node(Op::Add, "add", {mm, b.filled("b", {3}, -0.5f)}, {2, 3});
  ir::Attributes alpha;
  alpha.set("alpha", 0.1f);
  v = b.node(Op::LeakyRelu, "lrelu", {v}, {2, 3}, DType::Float32, alpha);
  v = b.node(Op::Pow, "pow", {b.filled("two", {1}, 2.0f), v}, {2, 3});
  v = b.node(Op::Sub, "sub", {b.filled("c", {}, 1.5f), v}, {2, 3});
  v = b.node(Op::Neg, "neg", {v}, {2, 3});
  v = b.node(Op::Exp, "exp", {v}, {2, 3});
  v = b.node(Op::Sqrt, "sqrt", {v}, {2, 3});
  v = b.node(Op::Div, "div", {v, y}, {2, 3});
  v = b.node(Op::Sigmoid, "sigmoid", {v}, {2, 3});
  v = b.node(Op::Tanh, "tanh", {v}, {2, 3});
  v = b.node(Op::Relu, "relu", {v}, {2, 3});
  v = b.node(Op::Mul, "mul", {v, y}, {2, 3});
  b.output(v);
  std::vector<Tensor> inputs = {Tensor::from_vector<float>({2, 3}, {0.5f, -1.f, 2.f, 0.25f, 3.f, -2.f}),
                                Tensor::from_vector<float>({1, 3}, {2.f, -0.5f, 4.f})};
  ir::Graph unfused = b.graph();
  std::vector<Tensor> want = reference::evaluate(unfused, inputs);
  EXPECT_EQ(fuse(b.graph()), 12);
  ASSERT_EQ(b.graph().nodes.size(), 1u);
  std::vector<Tensor> got = reference::evaluate(b.graph(), inputs);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].numel(), 6);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_NEAR(got[0].element_as_double(i), want[0].element_as_double(i), kFusedVsUnfusedAbs) << i;
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// `observe` keeps the named ONNX node's value a kernel boundary: fusion stops right after it.
TEST(FuseEpilogues, ObservedNodeStaysAKernelBoundary) {
  testing::GraphBuilder b;
  auto x = b.input("x", {1, 2, 8});
  auto c = b.node(ir::Op::Conv, "conv", {x, b.filled("w", {3, 2, 1}, 0.5f)}, {1, 3, 8});
  auto a = b.node(ir::Op::Add, "add", {c, b.filled("bias", {1, 3, 1}, 0.1f)}, {1, 3, 8});
  auto t = b.node(ir::Op::Tanh, "tanh", {a}, {1, 3, 8});
  b.output(t);
  passes::PipelineOptions options;
  options.observe = {"add"};
  passes::PassContext ctx(options);
  passes::fuse_epilogues(b.graph(), ctx);
  ir::verify(b.graph());
  ASSERT_EQ(b.graph().nodes.size(), 2u);  // conv+add, then tanh on its own
  EXPECT_EQ(b.graph().nodes[0].result_onnx_name(), "add");
  EXPECT_EQ(b.graph().nodes[0].outputs[0], a);
  EXPECT_EQ(b.graph().nodes[1].name, "tanh");
}

// The float math ops fuse like Tanh; the decisions Ceil and Floor, comparisons (bool results) and
// Clip do not.
TEST(FuseEpilogues, FloatMathStepsFuseDecisionsAndComparisonsDoNot) {
  testing::GraphBuilder b;
  auto x = b.input("x", {2, 3});
  auto mm = b.node(Op::MatMul, "mm", {x, b.filled("w", {3, 3}, 0.25f)}, {2, 3});
  auto v = mm;
  for (Op op : {Op::Erf, Op::Softplus, Op::Reciprocal, Op::Abs, Op::Ceil, Op::Floor})
    v = b.node(op, std::string("s_") + ir::op_name(op), {v}, {2, 3});
  auto c = b.node(Op::Clip, "clip", {v, b.filled("lo", {}, 0.0f)}, {2, 3});
  auto less = b.node(Op::Less, "less", {c, b.filled("half", {}, 0.5f)}, {2, 3}, DType::Bool);
  b.output(less);
  std::vector<Tensor> inputs = {Tensor::from_vector<float>({2, 3}, {0.5f, -1.f, 2.f, 0.25f, 3.f, -2.f})};
  ir::Graph unfused = b.graph();
  std::vector<Tensor> want = reference::evaluate(unfused, inputs);
  EXPECT_EQ(fuse(b.graph()), 4);
  ASSERT_EQ(b.graph().nodes.size(), 5u);
  EXPECT_EQ(b.graph().nodes[0].epilogue.size(), 4u);
  EXPECT_EQ(b.graph().nodes[1].op, Op::Ceil);
  EXPECT_EQ(b.graph().nodes[2].op, Op::Floor);
  EXPECT_EQ(b.graph().nodes[3].op, Op::Clip);
  EXPECT_EQ(b.graph().nodes[4].op, Op::Less);
  std::vector<Tensor> got = reference::evaluate(b.graph(), inputs);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(got[0].element_as_int(i), want[0].element_as_int(i)) << i;
}

}  // namespace
}  // namespace lockstep
