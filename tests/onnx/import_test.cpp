// Importer tests on the shared models and on small hand-built models (old opset forms, names,
// ordering, Constant nodes, symbolic dims). Expected counts come from python's onnx package.
#include <gtest/gtest.h>

#include <map>

#include "ir/graph.h"
#include "onnx/import.h"
#include "support/fixtures.h"
#include "support/onnx_builder.h"

namespace lockstep {
namespace {

using test::OnnxBuilder;

std::map<std::string, int> op_histogram(const ir::Graph& g) {
  std::map<std::string, int> h;
  for (const auto& n : g.nodes) ++h[ir::op_name(n.op)];
  return h;
}

const Tensor& constant_input(const ir::Graph& g, const ir::Node& n, size_t i) {
  EXPECT_LT(i, n.inputs.size());
  EXPECT_TRUE(g.is_constant(n.inputs.at(i))) << "input " << i << " of " << n.name;
  return g.value(n.inputs.at(i)).constant;
}

std::vector<int64_t> ints_of(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.element_as_int(i));
  return v;
}

TEST(OnnxImport, Seed174HasTheReportsInventory) {
  ir::Graph g = onnx::import_model(test::shared_model("vits_seed_174"));
  EXPECT_EQ(g.nodes.size(), 174u);
  std::map<std::string, int> want = {{"Slice", 49}, {"Mul", 36},  {"Conv", 34},  {"Add", 19},   {"Tanh", 13},
                                     {"Sigmoid", 13}, {"Split", 4}, {"Sub", 3}, {"Concat", 3}};
  EXPECT_EQ(op_histogram(g), want);
  EXPECT_EQ(g.opset, 17);
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.value(g.inputs[0]).name, "z_p");
  EXPECT_EQ(g.value(g.inputs[0]).shape, (Shape{1, 128, 1024}));
  EXPECT_EQ(g.value(g.inputs[1]).name, "y_mask");
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 144, 1024}));
  // Opset 17 Slice takes its parameters as (constant) inputs.
  for (const auto& n : g.nodes)
    if (n.op == ir::Op::Slice) {
      EXPECT_TRUE(n.attrs.all().empty()) << n.name;
      EXPECT_TRUE(g.is_constant(n.inputs.at(1)) && g.is_constant(n.inputs.at(2))) << n.name;
    }
}

// Node counts without Constant nodes (python: sum of non-Constant op_types).
TEST(OnnxImport, AllSharedModelsImport) {
  struct Case {
    const char* stem;
    size_t nodes;
  };
  for (Case c : {Case{"vits_seed_174", 174}, Case{"vits_seed_flow_T1024", 216}, Case{"vits_seed_dec_T256", 413},
                 Case{"vits_low_dec_T128", 284}}) {
    SCOPED_TRACE(c.stem);
    ir::Graph g = onnx::import_model(test::shared_model(c.stem));
    EXPECT_EQ(g.nodes.size(), c.nodes);
    EXPECT_EQ(g.inputs.size(), 2u);
    EXPECT_EQ(g.outputs.size(), 1u);
    for (ir::ValueId v : g.inputs) EXPECT_FALSE(g.is_constant(v));
    // Node names are unique and every input is produced before it is read.
    std::set<std::string> names;
    std::vector<bool> ready(g.values.size(), false);
    for (size_t v = 0; v < g.values.size(); ++v) ready[v] = g.values[v].constant.defined();
    for (ir::ValueId v : g.inputs) ready[static_cast<size_t>(v)] = true;
    for (const auto& n : g.nodes) {
      EXPECT_TRUE(names.insert(n.name).second) << n.name;
      for (ir::ValueId v : n.inputs)
        if (v != ir::kNoValue) EXPECT_TRUE(ready[static_cast<size_t>(v)]) << n.name;
      for (ir::ValueId v : n.outputs)
        if (v != ir::kNoValue) ready[static_cast<size_t>(v)] = true;
    }
  }
}

TEST(OnnxImport, ConstantNodesBecomeConstantValues) {
  OnnxBuilder b(13);
  b.input("x", {2, 3});
  auto& c = b.node("Constant", {}, {"two"}, "c");
  test::set_float(c, "value_float", 2.0f);
  auto& ci = b.node("Constant", {}, {"axes"}, "ci");
  test::set_ints(ci, "value_ints", {0});
  b.node("Mul", {"x", "two"}, {"y"});
  b.node("Unsqueeze", {"y", "axes"}, {"z"});
  b.output("z");
  ir::Graph g = onnx::import_model_bytes(b.bytes(), ".");
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].name, "Mul_2");  // invented from the op type and the node index
  EXPECT_EQ(g.nodes[1].name, "Unsqueeze_3");
  const Tensor& two = constant_input(g, g.nodes[0], 1);
  EXPECT_EQ(two.dtype(), DType::Float32);
  EXPECT_EQ(two.element_as_double(0), 2.0);
  EXPECT_EQ(ints_of(constant_input(g, g.nodes[1], 1)), (std::vector<int64_t>{0}));
}

TEST(OnnxImport, SortsNodesTopologicallyAndNamesDuplicates) {
  OnnxBuilder b(17);
  b.input("x", {4});
  b.node("Relu", {"a"}, {"b"}, "same");
  b.node("Neg", {"x"}, {"a"}, "same");
  b.output("b");
  ir::Graph g = onnx::import_model_bytes(b.bytes(), ".");
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, ir::Op::Neg);
  EXPECT_EQ(g.nodes[1].op, ir::Op::Relu);
  EXPECT_NE(g.nodes[0].name, g.nodes[1].name);
}

TEST(OnnxImport, InitializerListedAsInputIsAConstant) {
  OnnxBuilder b(11);
  b.input("x", {2});
  b.input("w", {2});
  b.initializer("w", Tensor::from_vector<float>({2}, {1.0f, 2.0f}));
  b.node("Add", {"x", "w"}, {"y"});
  b.output("y", {2});
  ir::Graph g = onnx::import_model_bytes(b.bytes(), ".");
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.value(g.inputs[0]).name, "x");
  EXPECT_TRUE(g.is_constant(g.nodes[0].inputs[1]));
}

TEST(OnnxImport, SymbolicDimsAreRecorded) {
  OnnxBuilder b(17);
  b.input("x", {1, -1, 8});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", {1, -1, 8});
  ir::Graph g = onnx::import_model_bytes(b.bytes(), ".");
  const ir::Value& x = g.value(g.inputs[0]);
  EXPECT_EQ(x.shape, (Shape{1, -1, 8}));
  EXPECT_EQ(x.dim_params, (std::vector<std::string>{"", "N", ""}));
}

TEST(OnnxImport, TypedAndRawInitializerData) {
  OnnxBuilder b(17);
  b.input("x", {3});
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name("i32");
  t->set_data_type(::onnx::TensorProto::INT32);
  t->add_dims(3);
  for (int v : {1, -2, 3}) t->add_int32_data(v);
  auto* m = b.proto().mutable_graph()->add_initializer();
  m->set_name("mask");
  m->set_data_type(::onnx::TensorProto::BOOL);
  m->add_dims(3);
  for (int v : {1, 0, 1}) m->add_int32_data(v);
  auto* d = b.proto().mutable_graph()->add_initializer();
  d->set_name("f64");
  d->set_data_type(::onnx::TensorProto::DOUBLE);
  d->add_dims(3);
  for (double v : {0.5, 1.5, -2.5}) d->add_double_data(v);
  b.node("Where", {"mask", "f64", "f64"}, {"w"});
  test::set_int(b.node("Cast", {"i32"}, {"c"}), "to", 7);
  b.node("Add", {"x", "x"}, {"y"});
  b.output("y").output("w").output("c");
  ir::Graph g = onnx::import_model_bytes(b.bytes(), ".");
  const Tensor& mask = g.value(g.find_value("mask")).constant;
  EXPECT_EQ(mask.dtype(), DType::Bool);
  EXPECT_EQ(ints_of(mask), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(ints_of(g.value(g.find_value("i32")).constant), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(g.value(g.find_value("f64")).constant.element_as_double(2), -2.5);
  EXPECT_EQ(g.nodes[g.find_node("Cast_1")].attrs.get_int("to", 0), 7);
}

TEST(OnnxImport, OldSliceSqueezeSplitPadFormsBecomeInputs) {
  OnnxBuilder b(9);
  b.input("x", {4, 6});
  auto& s = b.node("Slice", {"x"}, {"s"}, "slice");
  test::set_ints(s, "starts", {1});
  test::set_ints(s, "ends", {3});
  test::set_ints(s, "axes", {0});
  auto& u = b.node("Unsqueeze", {"s"}, {"u"}, "unsq");
  test::set_ints(u, "axes", {0});
  auto& sq = b.node("Squeeze", {"u"}, {"q"}, "sq");
  test::set_ints(sq, "axes", {0});
  auto& sp = b.node("Split", {"q"}, {"a", "c"}, "split");
  test::set_int(sp, "axis", 1);
  test::set_ints(sp, "split", {2, 4});
  auto& p = b.node("Pad", {"a"}, {"p"}, "pad");
  test::set_ints(p, "pads", {0, 1, 0, 1});
  test::set_float(p, "value", 0.5f);
  auto& eq = b.node("Split", {"c"}, {"e0", "e1"}, "split_eq");
  test::set_int(eq, "axis", 1);
  b.output("p").output("e0");
  ir::Graph g = onnx::import_model_bytes(b.bytes(), ".");
  const auto& slice = g.nodes[g.find_node("slice")];
  EXPECT_TRUE(slice.attrs.all().empty());
  EXPECT_EQ(ints_of(constant_input(g, slice, 1)), (std::vector<int64_t>{1}));
  EXPECT_EQ(ints_of(constant_input(g, slice, 2)), (std::vector<int64_t>{3}));
  EXPECT_EQ(ints_of(constant_input(g, slice, 3)), (std::vector<int64_t>{0}));
  EXPECT_EQ(ints_of(constant_input(g, g.nodes[g.find_node("unsq")], 1)), (std::vector<int64_t>{0}));
  EXPECT_EQ(ints_of(constant_input(g, g.nodes[g.find_node("sq")], 1)), (std::vector<int64_t>{0}));
  const auto& split = g.nodes[g.find_node("split")];
  EXPECT_EQ(ints_of(constant_input(g, split, 1)), (std::vector<int64_t>{2, 4}));
  EXPECT_FALSE(split.attrs.has("split"));
  EXPECT_EQ(g.nodes[g.find_node("split_eq")].attrs.get_int("num_outputs", 0), 2);
  const auto& pad = g.nodes[g.find_node("pad")];
  EXPECT_EQ(ints_of(constant_input(g, pad, 1)), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(constant_input(g, pad, 2).element_as_double(0), 0.5);
  EXPECT_FALSE(pad.attrs.has("pads") || pad.attrs.has("value"));
}

TEST(OnnxImport, OldSoftmaxOnLastAxisIsAccepted) {
  OnnxBuilder b(11);
  b.input("x", {2, 5});
  b.node("Softmax", {"x"}, {"y"}, "sm");  // default axis 1 == last axis of a rank-2 input
  b.output("y");
  ir::Graph g = onnx::import_model_bytes(b.bytes(), ".");
  EXPECT_EQ(g.nodes[0].attrs.get_int("axis", 0), -1);
}

TEST(OnnxImport, LoadsConformanceTensorProto) {
  std::string dir = test::onnx_node_data_dir() + "/test_add/test_data_set_0";
  std::string name;
  Tensor t = onnx::load_tensor_proto(dir + "/input_0.pb", &name);
  EXPECT_EQ(name, "x");
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.shape(), (Shape{3, 4, 5}));
}

}  // namespace
}  // namespace lockstep
