#include "ir/print.h"

#include <gtest/gtest.h>

#include "passes/graph_builder.h"

namespace lockstep {
namespace {

using ir::Op;

TEST(Print, OneLinePerNodeWithTypesAttributesEpilogueAndNames) {
  testing::GraphBuilder b;
  auto x = b.input("x", {1, 2, 8});
  auto w = b.filled("w", {3, 2, 5}, 0.5f);
  ir::Attributes attrs;
  attrs.set("pads", std::vector<int64_t>{2, 2});
  auto c = b.node(Op::Conv, "conv0", {x, w}, {1, 3, 8}, DType::Float32, attrs);
  auto bias = b.filled("bias", {1, 3, 1}, 1.0f);
  b.graph().nodes[0].epilogue.push_back({Op::Add, bias, false, 0.0f, "add0"});
  b.graph().nodes[0].epilogue.push_back({Op::LeakyRelu, ir::kNoValue, false, 0.25f, "lrelu0"});
  b.output(c);
  std::string text = ir::to_string(b.graph());
  EXPECT_NE(text.find("input %0 'x':f32[1,2,8]"), std::string::npos) << text;
  EXPECT_NE(text.find("#0 %2 'conv0':f32[1,3,8] = Conv(%0 'x', %1 'w'=const f32[3,2,5]) {pads=[2,2]}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("epilogue[Add(acc, %3 'bias'=tensor<float32[1,3,1]>{1,1,1}) 'add0', LeakyRelu(acc) {alpha=0.25} 'lrelu0']"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("onnx 'conv0'"), std::string::npos) << text;
  EXPECT_NE(text.find("output %2 'conv0'"), std::string::npos) << text;
}

TEST(Print, ShowsSymbolicDimsAndSmallConstants) {
  testing::GraphBuilder b;
  auto x = b.input("x", {1, -1});
  b.graph().value(x).dim_params = {"", "T"};
  auto starts = b.ints("starts", {0});
  auto ends = b.ints("ends", {72});
  auto s = b.node(Op::Slice, "slice", {x, starts, ends}, {1, -1});
  b.output(s);
  std::string text = ir::to_string(b.graph());
  EXPECT_NE(text.find("'x':f32[1,T]"), std::string::npos) << text;
  EXPECT_NE(text.find("'ends'=tensor<"), std::string::npos) << text;
  EXPECT_NE(text.find("{72}"), std::string::npos) << text;
  EXPECT_NE(text.find("'slice':f32[1,?]"), std::string::npos) << text;
}

}  // namespace
}  // namespace lockstep
