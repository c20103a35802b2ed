// fold_constants: all-constant nodes become constants, one counted application each, size cap.
#include "passes/fold_constants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "dynamic/probe.h"
#include "passes/fold_support.h"
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

// A ConstantOfShape of kFillAtRunTimeBytes or more stays a node for the backend to fill (what the
// voice's flows folded at every new length), in fold_constants, infer_shapes and the run-time
// shapes' probe; one byte under it folds; its consumers then stay run-time nodes too.
TEST(FoldConstants, LargeFillsStayRunTimeNodes) {
  const int64_t at = passes::kFillAtRunTimeBytes / 4;  // float32 elements at the threshold
  for (const int64_t elements : {at - 1, at}) {
    const bool big = elements >= at;
    GraphBuilder b;
    ir::Attributes attrs;
    attrs.set("value", Tensor::from_vector<float>({1}, {0.0f}));
    ir::ValueId zeros = b.node(Op::ConstantOfShape, "zeros", {b.ints("shape", {1, elements})}, {1, elements}, DType::Float32, attrs);
    ir::ValueId e = b.node(Op::Exp, "exp", {b.node(Op::Neg, "neg", {zeros}, {1, elements})}, {1, elements});
    b.output(e);
    ir::Graph infer = b.graph(), fold = b.graph(), probed = b.graph();
    passes::infer_shapes(infer);
    EXPECT_EQ(infer.nodes.size(), big ? 3u : 0u) << elements;
    passes::PipelineOptions options;
    passes::PassContext ctx(options);
    passes::fold_constants(fold, ctx);
    EXPECT_EQ(fold.nodes.size(), big ? 3u : 0u) << elements;
    const dynamic::ProbeResult r = dynamic::probe(probed, {}, int64_t{1} << 30);
    ASSERT_EQ(r.states.size(), 3u);
    for (dynamic::NodeState state : r.states)
      EXPECT_EQ(state, big ? dynamic::NodeState::Runnable : dynamic::NodeState::Folded) << elements;
  }
}

// The float64 evaluator's value of `node` in its outputs' dtype: what fold_node gave before it
// folded element moves in the stored dtype and uniform unary ops from one element.
Tensor evaluator_value(const ir::Graph& g, const ir::Node& node) {
  std::vector<Tensor> inputs;
  for (ir::ValueId v : node.inputs) inputs.push_back(v == ir::kNoValue ? Tensor{} : g.value(v).constant);
  Tensor t = reference::evaluate_node(g, node, inputs).at(0);
  const DType want = g.value(node.outputs[0]).dtype;
  return t.dtype() == want ? t : t.to(want);
}

Tensor ramp(Shape shape, float scale) {  // distinct values, some needing all 24 bits
  std::vector<float> v(static_cast<size_t>(num_elements(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * (static_cast<float>(i) + 0.1f) / 3.0f - 7.0f;
  return Tensor::from_vector<float>(std::move(shape), v);
}

// Data moved out of constants (the voice's relative-position tables: a 9-row table padded to
// 2L-1 rows, then sliced) folds up to the limit a run-time shape segment passes
// (kMoveAtRunTimeBytes) and stays a run-time node from one byte over it, in infer_shapes,
// fold_constants and the probe; with no limit (a static graph's compile) it always folds. Element-
// wise arithmetic on constants is not a move and folds at any of these sizes.
TEST(FoldConstants, LargeMovesStayRunTimeNodesInSegments) {
  const int64_t limit = passes::kMoveAtRunTimeBytes;
  const int64_t row = 96 * 4;  // bytes of one float32 row of 96
  for (const int64_t rows : {limit / row, limit / row + 1}) {
    const bool big = rows * row > limit;
    const int64_t pad = (rows - 9) / 2, rows_out = 9 + 2 * pad + (rows - 9) % 2;
    GraphBuilder b;
    ir::ValueId table = b.constant("table", ramp({1, 9, 96}, 0.25f));
    ir::ValueId padded = b.node(Op::Pad, "pad", {table, b.ints("pads", {0, pad, 0, 0, pad + (rows - 9) % 2, 0})}, {1, rows_out, 96});
    ir::ValueId sliced = b.node(Op::Slice, "slice", {padded, b.ints("starts", {1}), b.ints("ends", {rows_out}), b.ints("axes", {1})},
                                {1, rows_out - 1, 96});
    ir::ValueId scaled = b.node(Op::Mul, "scale", {b.constant("half", ramp({1, 1, 96}, 0.5f)), b.constant("big", ramp({1, rows, 96}, 1.0f))},
                                {1, rows, 96});
    ir::ValueId x = b.input("x", {1, rows_out - 1, 96});
    b.output(b.node(Op::Add, "add", {x, sliced}, {1, rows_out - 1, 96}));
    b.output(b.node(Op::Add, "add2", {b.input("z", {1, rows, 96}), scaled}, {1, rows, 96}));
    ASSERT_EQ(rows_out * row > limit, big);
    for (const int64_t moved : {limit, INT64_MAX}) {
      const bool stays = big && moved == limit;
      const std::string at = std::to_string(rows) + " rows, limit " + std::to_string(moved);
      ir::Graph infer = b.graph(), fold = b.graph(), probed = b.graph();
      passes::infer_shapes(infer, moved);
      EXPECT_EQ(infer.is_constant(padded), !stays) << at;
      EXPECT_EQ(infer.is_constant(sliced), !stays) << at;
      passes::PipelineOptions options;
      options.fold_moved_max_bytes = moved;
      passes::PassContext ctx(options);
      passes::fold_constants(fold, ctx);
      EXPECT_EQ(fold.is_constant(sliced), !stays) << at;
      EXPECT_TRUE(fold.is_constant(scaled)) << at;
      const dynamic::ProbeResult r = dynamic::probe(probed, {}, int64_t{1} << 30, false, nullptr, moved);
      ASSERT_EQ(r.states.size(), 5u);
      EXPECT_EQ(r.states[0], stays ? dynamic::NodeState::Runnable : dynamic::NodeState::Folded) << at;  // pad
      EXPECT_EQ(r.states[1], stays ? dynamic::NodeState::Runnable : dynamic::NodeState::Folded) << at;  // slice
      EXPECT_EQ(r.states[2], dynamic::NodeState::Folded) << at;                                         // scale
    }
  }
}

TEST(FoldConstants, ElementMovesAndUniformUnaryOpsFoldToTheEvaluatorsBytes) {
  struct Case {
    std::string name;
    Op op;
    std::vector<Tensor> inputs;  // constants (undefined: no input)
    Shape out;
    ir::Attributes attrs;
  };
  auto ints = [](std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); };
  ir::Attributes perm, reflect, edge, gather_axis;
  perm.set("perm", std::vector<int64_t>{0, 2, 1});
  reflect.set("mode", std::string("reflect"));
  edge.set("mode", std::string("edge"));
  gather_axis.set("axis", int64_t{1});
  const Tensor x = ramp({1, 9, 96}, 1.0f);
  std::vector<float> nan_fill(600, std::nanf("")), tiny_fill(600, 1e-40f), neg_fill(600, -0.0f);
  const std::vector<Case> cases{
      {"slice_step", Op::Slice, {x, ints({1, 5}), ints({9, 90}), ints({1, 2}), ints({2, 3})}, {1, 4, 29}, {}},
      {"transpose", Op::Transpose, {x}, {1, 96, 9}, perm},
      {"pad_fill", Op::Pad, {x, ints({0, 200, 0, 0, 300, 0}), Tensor::scalar<float>(1.5f)}, {1, 509, 96}, {}},
      {"pad_rows", Op::Pad, {x, ints({0, 0, 3, 0, 0, -2})}, {1, 9, 97}, {}},
      {"pad_reflect", Op::Pad, {x, ints({0, 2, 5, 0, 3, 4})}, {1, 14, 105}, reflect},
      {"pad_edge_crop", Op::Pad, {x, ints({0, -1, 6, 0, 4, -10})}, {1, 12, 92}, edge},
      {"concat", Op::Concat, {x, ramp({1, 3, 96}, 2.0f)}, {1, 12, 96}, gather_axis},
      {"gather", Op::Gather, {x, ints({8, 0, 3, 3})}, {1, 4, 96}, gather_axis},
      {"unsqueeze", Op::Unsqueeze, {x, ints({0})}, {1, 1, 9, 96}, {}},
      {"expand", Op::Expand, {ramp({1, 9, 1}, 1.0f), ints({2, 9, 7})}, {2, 9, 7}, {}},
      {"neg_of_zeros", Op::Neg, {Tensor(DType::Float32, {3, 200})}, {3, 200}, {}},
      {"exp_of_negative_zero", Op::Exp, {Tensor::from_vector<float>({3, 200}, neg_fill)}, {3, 200}, {}},
      {"sigmoid_of_subnormal", Op::Sigmoid, {Tensor::from_vector<float>({3, 200}, tiny_fill)}, {3, 200}, {}},
      {"sqrt_of_nan", Op::Sqrt, {Tensor::from_vector<float>({3, 200}, nan_fill)}, {3, 200}, {}},
      {"tanh_not_uniform", Op::Tanh, {ramp({3, 200}, 0.01f)}, {3, 200}, {}},
  };
  for (const Case& c : cases) {
    GraphBuilder b;
    std::vector<ir::ValueId> in;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      in.push_back(c.inputs[i].defined() ? b.constant(c.name + "_in" + std::to_string(i), c.inputs[i]) : ir::kNoValue);
    ir::Attributes attrs = c.attrs;
    if (c.op == Op::Concat) attrs.set("axis", int64_t{1});
    ir::ValueId y = b.node(c.op, c.name, in, c.out, DType::Float32, attrs);
    b.output(y);
    ir::Graph& g = b.graph();
    const Tensor expected = evaluator_value(g, g.nodes[0]);
    passes::PipelineOptions options;
    passes::PassContext ctx(options);
    passes::fold_constants(g, ctx);
    ASSERT_TRUE(g.is_constant(y)) << c.name;
    const Tensor& got = g.value(y).constant;
    EXPECT_EQ(got.dtype(), DType::Float32) << c.name;
    EXPECT_EQ(got.shape(), expected.shape()) << c.name;
    ASSERT_EQ(got.nbytes(), expected.nbytes()) << c.name;
    EXPECT_EQ(std::memcmp(got.raw(), expected.raw(), got.nbytes()), 0) << c.name;
  }
}

}  // namespace
}  // namespace lockstep::testing
