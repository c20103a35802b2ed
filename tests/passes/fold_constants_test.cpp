// fold_constants: all-constant nodes become constants, one counted application each, size cap.
#include "passes/fold_constants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "passes/graph_builder.h"
#include "passes/infer_shapes.h"
#include "reference/evaluate.h"

namespace lockstep::testing {
namespace {

using ir::Op;

TEST(FoldConstants, FoldsChainsAndKeepsGraphOutputs) {
  // (2 + 3) * w feeds a Mul with x; the constant product is also a graph output.
  GraphBuilder b;
  ir::ValueId x = b.input("x", {2});
  ir::ValueId s = b.node(Op::Add, "add", {b.filled("a", {2}, 2), b.filled("b", {2}, 3)}, {2});
  ir::ValueId t = b.node(Op::Tanh, "tanh", {s}, {2});
  ir::ValueId y = b.node(Op::Mul, "mul", {x, t}, {2});
  b.output(y);
  b.output(t);
  ir::Graph& g = b.graph();
  passes::PipelineOptions options;
  passes::PassContext ctx(options);
  passes::fold_constants(g, ctx);
  EXPECT_EQ(ctx.applications(), 2);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].name, "mul");
  ASSERT_TRUE(g.is_constant(t));
  EXPECT_EQ(g.value(t).constant.dtype(), DType::Float32);  // rounded back to the value's dtype
  EXPECT_FLOAT_EQ(g.value(t).constant.data<float>()[1], static_cast<float>(std::tanh(5.0)));
  EXPECT_EQ(g.outputs[1], t);
}

TEST(FoldConstants, BisectLimitStopsFolding) {
  GraphBuilder b;
  ir::ValueId s = b.node(Op::Add, "add", {b.filled("a", {2}, 2), b.filled("b", {2}, 3)}, {2});
  ir::ValueId t = b.node(Op::Neg, "neg", {s}, {2});
  b.output(t);
  passes::PipelineOptions options;
  options.opt_bisect_limit = 1;
  passes::PassContext ctx(options);
  passes::fold_constants(b.graph(), ctx);
  EXPECT_TRUE(b.graph().is_constant(s));
  EXPECT_FALSE(b.graph().is_constant(t));
  ASSERT_EQ(b.graph().nodes.size(), 1u);
  EXPECT_EQ(b.graph().nodes[0].name, "neg");
}

TEST(FoldConstants, LargeOutputsStayRuntimeNodes) {
  // Expand of a scalar to 2^25 float32 elements (128 MiB) is over kFoldMaxBytes.
  GraphBuilder b;
  ir::ValueId big =
      b.node(Op::Expand, "big", {b.filled("one", {1}, 1), b.ints("shape", {int64_t{1} << 25})},
             {int64_t{1} << 25});
  b.output(big);
  passes::PipelineOptions options;
  passes::PassContext ctx(options);
  passes::fold_constants(b.graph(), ctx);
  EXPECT_EQ(ctx.applications(), 0);
  EXPECT_EQ(b.graph().nodes.size(), 1u);
}

TEST(FoldConstants, ConstantOfShapeFoldsToTheEvaluatorsValueInEveryDtype) {
  // fold_node fills ConstantOfShape itself (not through the float64 evaluator): the same dtype,
  // shape and bytes as the evaluator's result converted to the value's dtype.
  struct Case {
    std::string name;
    DType dtype;
    Tensor value;  // undefined: no attribute (float32 zeros)
  };
  const std::vector<Case> cases{{"zeros", DType::Float32, Tensor{}},
                                {"float", DType::Float32, Tensor::from_vector<float>({1}, {-2.75f})},
                                {"tiny", DType::Float32, Tensor::from_vector<float>({1}, {1e-40f})},
                                {"int64", DType::Int64, Tensor::from_vector<int64_t>({1}, {-7})},
                                {"int32", DType::Int32, Tensor::from_vector<int32_t>({1}, {123456})},
                                {"bool", DType::Bool, Tensor::from_vector<bool>({1}, {true})}};
  for (const Case& c : cases) {
    GraphBuilder b;
    ir::Attributes attrs;
    if (c.value.defined()) attrs.set("value", c.value);
    ir::ValueId y = b.node(Op::ConstantOfShape, "cos_" + c.name, {b.ints("shape", {3, 1, 1029})}, {3, 1, 1029},
                           c.dtype, attrs);
    b.output(y);
    ir::Graph& g = b.graph();
    const ir::Node node = g.nodes[0];
    std::vector<Tensor> want = reference::evaluate_node(g, node, {g.value(node.inputs[0]).constant});
    const Tensor expected = want[0].dtype() == c.dtype ? want[0] : want[0].to(c.dtype);
    passes::PipelineOptions options;
    passes::PassContext ctx(options);
    passes::fold_constants(g, ctx);
    ASSERT_TRUE(g.is_constant(y)) << c.name;
    const Tensor& got = g.value(y).constant;
    EXPECT_EQ(got.dtype(), c.dtype) << c.name;
    EXPECT_EQ(got.shape(), (Shape{3, 1, 1029})) << c.name;
    ASSERT_EQ(got.nbytes(), expected.nbytes()) << c.name;
    EXPECT_EQ(std::memcmp(got.raw(), expected.raw(), got.nbytes()), 0) << c.name;
  }
}

}  // namespace
}  // namespace lockstep::testing
