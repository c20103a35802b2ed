// Importer: Clip's opset-6 attributes become inputs; opset-11+ Clip with an omitted min; ops that
// do not exist in the model's opset are errors naming the node.
#include <gtest/gtest.h>

#include <limits>

#include "ir/graph.h"
#include "onnx/import.h"
#include "support/onnx_builder.h"

namespace lockstep {
namespace {

using test::OnnxBuilder;

TEST(OnnxImportLogicalMath, ClipAttributesBecomeConstantInputs) {
  OnnxBuilder b(9);
  b.input("x", {2, 3});
  auto& c = b.node("Clip", {"x"}, {"y"}, "clip");
  test::set_float(c, "min", -0.5f);
  b.node("Clip", {"y"}, {"z"}, "clip_default");
  b.output("z", {2, 3});
  ir::Graph g = onnx::import_model_bytes(b.bytes(), ".");
  const ir::Node& n = g.nodes[g.find_node("clip")];
  EXPECT_TRUE(n.attrs.all().empty());
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(g.value(n.inputs[1]).constant.element_as_double(0), -0.5);
  EXPECT_EQ(g.value(n.inputs[2]).constant.element_as_double(0), std::numeric_limits<float>::max());
  const ir::Node& d = g.nodes[g.find_node("clip_default")];
  ASSERT_EQ(d.inputs.size(), 3u);
  EXPECT_EQ(g.value(d.inputs[1]).constant.element_as_double(0), std::numeric_limits<float>::lowest());
  EXPECT_EQ(g.value(d.inputs[1]).constant.dtype(), DType::Float32);
}

TEST(OnnxImportLogicalMath, ClipInputsWithOmittedMin) {
  OnnxBuilder b(13);
  b.input("x", {4}).input("hi", {});
  b.node("Clip", {"x", "", "hi"}, {"y"}, "clip");
  b.output("y", {4});
  ir::Graph g = onnx::import_model_bytes(b.bytes(), ".");
  const ir::Node& n = g.nodes[0];
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[1], ir::kNoValue);
  EXPECT_NE(n.inputs[2], ir::kNoValue);
}

void expect_import_error(const OnnxBuilder& b, ErrorCode code, const std::string& part) {
  try {
    onnx::import_model_bytes(b.bytes(), ".");
    ADD_FAILURE() << "imported; wanted an error mentioning '" << part << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(OnnxImportLogicalMath, OpsAndFormsOutsideTheirOpsets) {
  {
    OnnxBuilder b(13);
    b.input("x", {4});
    test::set_float(b.node("Clip", {"x"}, {"y"}, "clip13"), "min", 0.0f);
    b.output("y", {4});
    expect_import_error(b, ErrorCode::UnsupportedAttribute, "is an input of Clip since opset 11");
  }
  {
    OnnxBuilder b(11);
    b.input("x", {4}).input("y", {4});
    b.node("LessOrEqual", {"x", "y"}, {"z"}, "le");
    b.output("z", {4}, 9);
    expect_import_error(b, ErrorCode::InvalidModel, "does not exist before opset 12");
  }
  {
    OnnxBuilder b(8);
    b.input("x", {4});
    b.node("Erf", {"x"}, {"y"}, "erf");
    b.output("y", {4});
    expect_import_error(b, ErrorCode::InvalidModel, "does not exist before opset 9");
  }
}

}  // namespace
}  // namespace lockstep
