// infer_shapes: shapes and dtypes of every value, shape subgraphs folded, declared shapes checked.
#include "passes/infer_shapes.h"

#include <gtest/gtest.h>

#include "passes/graph_builder.h"
#include "reference/evaluate.h"

namespace lockstep::testing {
namespace {

using ir::Op;

TEST(InferShapes, ShapeSubgraphFoldsIntoReshapeParameter) {
  // x[2,3,4] → Shape → Gather(0) → Unsqueeze(0) → Concat([-1]) → Reshape(x, ·) = [2,12]
  GraphBuilder b;
  ir::ValueId x = b.input("x", {2, 3, 4});
  ir::ValueId shape = b.node(Op::Shape, "shape", {x}, {}, DType::Int64);
  ir::ValueId zero = b.constant("zero", Tensor::scalar<int64_t>(0));
  ir::Attributes axis0;
  axis0.set("axis", int64_t{0});
  ir::ValueId dim = b.node(Op::Gather, "gather", {shape, zero}, {}, DType::Int64, axis0);
  ir::ValueId dim1 =
      b.node(Op::Unsqueeze, "unsqueeze", {dim, b.ints("axes", {0})}, {}, DType::Int64);
  ir::ValueId target =
      b.node(Op::Concat, "concat", {dim1, b.ints("minus1", {-1})}, {}, DType::Int64, axis0);
  ir::ValueId y = b.node(Op::Reshape, "reshape", {x, target}, {});
  b.output(y);
  ir::Graph& g = b.graph();
  passes::infer_shapes(g);

  ASSERT_EQ(g.nodes.size(), 1u);  // only the Reshape runs at run time
  EXPECT_EQ(g.nodes[0].name, "reshape");
  ASSERT_TRUE(g.is_constant(target));
  EXPECT_EQ(g.value(target).constant.element_as_int(0), 2);
  EXPECT_EQ(g.value(target).constant.element_as_int(1), -1);
  EXPECT_EQ(shape_str(g.value(y).shape), "[2,12]");
  EXPECT_EQ(g.value(y).dtype, DType::Float32);
}

TEST(InferShapes, ConvChainShapesAndDtypes) {
  GraphBuilder b;
  ir::ValueId x = b.input("x", {1, 4, 10});
  ir::Attributes conv;
  conv.set("pads", std::vector<int64_t>{2, 2});
  conv.set("dilations", std::vector<int64_t>{2});
  ir::ValueId c =
      b.node(Op::Conv, "conv", {x, b.filled("w", {6, 4, 3}, 0.1f)}, {}, DType::Float32, conv);
  ir::Attributes ct;
  ct.set("strides", std::vector<int64_t>{4});
  ct.set("pads", std::vector<int64_t>{2, 2});
  ir::ValueId u =
      b.node(Op::ConvTranspose, "up", {c, b.filled("wt", {6, 3, 8}, 0.1f)}, {}, DType::Float32, ct);
  ir::ValueId s = b.node(Op::Slice, "flip",
                         {u, b.ints("st", {INT64_MAX}), b.ints("en", {INT64_MIN}),
                          b.ints("ax", {1}), b.ints("sp", {-1})},
                         {});
  ir::ValueId m = b.node(Op::Equal, "eq", {s, s}, {});
  b.output(m);
  ir::Graph& g = b.graph();
  passes::infer_shapes(g);
  EXPECT_EQ(shape_str(g.value(c).shape), "[1,6,10]");
  EXPECT_EQ(shape_str(g.value(u).shape), "[1,3,40]");  // 4*(10-1) + 8 - 4
  EXPECT_EQ(shape_str(g.value(s).shape), "[1,3,40]");
  EXPECT_EQ(g.value(m).dtype, DType::Bool);
}

TEST(InferShapes, DeclaredShapeMismatchNamesTheNode) {
  GraphBuilder b;
  ir::ValueId x = b.input("x", {2, 3});
  b.output(b.node(Op::Transpose, "tr", {x}, {2, 3}));  // declared [2,3], computes [3,2]
  try {
    passes::infer_shapes(b.graph());
    FAIL() << "expected ShapeMismatch";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ShapeMismatch);
    EXPECT_EQ(e.node(), "tr");
    EXPECT_NE(std::string(e.what()).find("declared [2,3] but computes to [3,2]"), std::string::npos)
        << e.what();
  }
}

TEST(InferShapes, ConvChannelMismatchIsActionable) {
  GraphBuilder b;
  ir::ValueId x = b.input("x", {1, 64, 8});
  b.output(b.node(Op::Conv, "enc/conv", {x, b.filled("w", {16, 128, 1}, 1.0f)}, {}));
  try {
    passes::infer_shapes(b.graph());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ShapeMismatch);
    EXPECT_EQ(e.node(), "enc/conv");
    EXPECT_NE(
        std::string(e.what()).find("Conv input has 64 channels but weight expects 128 (group 1)"),
        std::string::npos);
  }
}

TEST(InferShapes, NonConstantParameterIsAnError) {
  GraphBuilder b;
  ir::ValueId x = b.input("x", {4});
  ir::ValueId shape = b.input("shape", {1}, DType::Int64);
  b.output(b.node(Op::Reshape, "rs", {x, shape}, {}));
  EXPECT_THROW(passes::infer_shapes(b.graph()), Error);
}

TEST(InferShapes, PreservesTheReferenceResult) {
  // Add(x, Expand(ConstantOfShape([3]) , ...)) — folded subgraph, same values.
  GraphBuilder b;
  ir::ValueId x = b.input("x", {2, 3});
  ir::Attributes one;
  one.set("value", Tensor::from_vector<float>({1}, {1.5f}));
  ir::ValueId c = b.node(Op::ConstantOfShape, "cos", {b.ints("s", {3})}, {}, DType::Float32, one);
  ir::ValueId e = b.node(Op::Expand, "exp", {c, b.ints("es", {2, 3})}, {});
  b.output(b.node(Op::Add, "add", {x, e}, {}));
  ir::Graph before = b.graph();
  std::vector<Tensor> in = {Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})};
  auto want = reference::evaluate(before, in);
  ir::Graph after = before;
  passes::infer_shapes(after);
  EXPECT_EQ(after.nodes.size(), 1u);
  auto got = reference::evaluate(after, in);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(got[0].element_as_double(i), want[0].element_as_double(i));
}

}  // namespace
}  // namespace lockstep::testing
