// Importer: the opset forms of the reductions (axes attribute → input 1), attributes that later
// opsets added (noop_with_empty_axes, batch_dims, ScatterND reduction), random op attributes.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "onnx/import.h"
#include "support/onnx_builder.h"

namespace lockstep {
namespace {

using test::OnnxBuilder;

std::vector<int64_t> axes_input(const ir::Graph& g, const ir::Node& n) {
  EXPECT_EQ(n.inputs.size(), 2u);
  EXPECT_TRUE(g.is_constant(n.inputs.at(1)));
  std::vector<int64_t> v;
  const Tensor& t = g.value(n.inputs.at(1)).constant;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.element_as_int(i));
  return v;
}

ir::Graph reduce_model(const std::string& op, int64_t opset, bool axes_as_input, bool noop = false) {
  OnnxBuilder b(opset);
  b.input("x", {2, 3, 4});
  std::vector<std::string> in{"x"};
  if (axes_as_input) {
    b.initializer("axes", Tensor::from_vector<int64_t>({1}, {-1}));
    in.push_back("axes");
  }
  auto& n = b.node(op, in, {"y"}, "r");
  if (!axes_as_input) test::set_ints(n, "axes", {-1});
  test::set_int(n, "keepdims", 0);
  if (noop) test::set_int(n, "noop_with_empty_axes", 1);
  b.output("y");
  return onnx::import_model_bytes(b.bytes(), ".");
}

TEST(OnnxImportReduce, AxesAttributeBecomesTheInput) {
  for (auto [op, input_form] : {std::pair{"ReduceMean", 18}, {"ReduceMax", 18}, {"ReduceMin", 18}, {"ReduceSum", 13}}) {
    ir::Graph old_form = reduce_model(op, input_form - 1, false);
    ASSERT_EQ(old_form.nodes.size(), 1u) << op;
    EXPECT_FALSE(old_form.nodes[0].attrs.has("axes")) << op;
    EXPECT_EQ(axes_input(old_form, old_form.nodes[0]), (std::vector<int64_t>{-1})) << op;
    ir::Graph new_form = reduce_model(op, input_form, true);
    EXPECT_EQ(axes_input(new_form, new_form.nodes[0]), (std::vector<int64_t>{-1})) << op;
    // The other form in the other opset is rejected, as is noop_with_empty_axes before it exists.
    EXPECT_THROW(reduce_model(op, input_form, false), Error) << op;
    EXPECT_THROW(reduce_model(op, input_form - 1, true), Error) << op;
    EXPECT_THROW(reduce_model(op, input_form - 1, false, true), Error) << op;
    EXPECT_NO_THROW(reduce_model(op, input_form, true, true)) << op;
  }
}

TEST(OnnxImportIndexing, AttributesByOpset) {
  auto scatter = [](int64_t opset, const std::string& reduction) {
    OnnxBuilder b(opset);
    b.input("d", {4});
    b.input("i", {1, 1}, 7);
    b.input("u", {1});
    auto& n = b.node("ScatterND", {"d", "i", "u"}, {"y"}, "s");
    if (!reduction.empty()) test::set_string(n, "reduction", reduction);
    b.output("y");
    return onnx::import_model_bytes(b.bytes(), ".");
  };
  EXPECT_NO_THROW(scatter(11, ""));
  EXPECT_THROW(scatter(15, "add"), Error);
  EXPECT_EQ(scatter(16, "mul").nodes[0].attrs.get_string("reduction", ""), "mul");
  EXPECT_THROW(scatter(16, "max"), Error);
  EXPECT_NO_THROW(scatter(18, "max"));
  EXPECT_THROW(scatter(10, ""), Error);  // ScatterND exists since opset 11
}

TEST(OnnxImportRandom, AttributesAndTypes) {
  OnnxBuilder b(15);
  b.input("x", {2, 3});
  auto& n = b.node("RandomNormalLike", {"x"}, {"y"}, "noise");
  test::set_float(n, "scale", 0.667f);
  test::set_float(n, "seed", 4.0f);
  b.output("y");
  ir::Graph g = onnx::import_model_bytes(b.bytes(), ".");
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].attrs.get_float("scale", 0), 0.667f);
  EXPECT_EQ(g.nodes[0].attrs.get_float("seed", 0), 4.0f);
  OnnxBuilder bad(15);
  bad.input("x", {2});
  test::set_int(bad.node("RandomUniformLike", {"x"}, {"y"}), "seed", 3);  // seed is a float attribute
  bad.output("y");
  EXPECT_THROW(onnx::import_model_bytes(bad.bytes(), "."), Error);
}

}  // namespace
}  // namespace lockstep
