// Exporter tests: round trips through import, epilogue expansion, the ONNX checker, and the
// reference output of a round-tripped model.
#include <gtest/gtest.h>

#include <cstdlib>

#include "ir/graph.h"
#include "lockstep/lockstep.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "support/fixtures.h"
#include "support/onnx_builder.h"

namespace lockstep {
namespace {

// Round-tripped constants and the reference output of the same graph are bit-identical.
constexpr double kSameBits = 0.0;

void expect_same_graph(const ir::Graph& a, const ir::Graph& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const ir::Node& x = a.nodes[i];
    const ir::Node& y = b.nodes[i];
    SCOPED_TRACE(x.name);
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.name, y.name);
    EXPECT_TRUE(x.attrs == y.attrs);
    ASSERT_EQ(x.inputs.size(), y.inputs.size());
    for (size_t k = 0; k < x.inputs.size(); ++k) {
      if (x.inputs[k] == ir::kNoValue) {
        EXPECT_EQ(y.inputs[k], ir::kNoValue);
        continue;
      }
      const ir::Value& u = a.value(x.inputs[k]);
      const ir::Value& v = b.value(y.inputs[k]);
      EXPECT_EQ(u.name, v.name);
      EXPECT_EQ(u.constant.defined(), v.constant.defined());
      if (u.constant.defined() && v.constant.defined()) {
        ASSERT_EQ(u.constant.nbytes(), v.constant.nbytes());
        EXPECT_EQ(u.constant.shape(), v.constant.shape());
        EXPECT_EQ(0, std::memcmp(u.constant.raw(), v.constant.raw(), u.constant.nbytes()));
      }
    }
  }
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) EXPECT_EQ(a.value(a.inputs[i]).shape, b.value(b.inputs[i]).shape);
}

TEST(OnnxExport, SharedModelRoundTrips) {
  for (const char* stem : {"vits_seed_174", "vits_seed_dec_T256"}) {
    SCOPED_TRACE(stem);
    ir::Graph g = onnx::import_model(test::shared_model(stem));
    ir::Graph back = onnx::import_model_bytes(onnx::serialize_model(g), ".");
    EXPECT_EQ(back.opset, 17);
    expect_same_graph(g, back);
  }
}

TEST(OnnxExport, OldOpsetModelExportsNewestForms) {
  test::OnnxBuilder b(9);
  b.input("x", {4, 6});
  auto& s = b.node("Slice", {"x"}, {"s"}, "slice");
  test::set_ints(s, "starts", {1});
  test::set_ints(s, "ends", {3});
  auto& sp = b.node("Split", {"s"}, {"a", "c"}, "split");
  test::set_int(sp, "axis", 1);
  b.output("a").output("c");
  ir::Graph g = onnx::import_model_bytes(b.bytes(), ".");
  // Split into num_outputs parts of an unknown dim: only opset 18 says how uneven parts go.
  EXPECT_EQ(onnx::import_model_bytes(onnx::serialize_model(g), ".").opset, 18);
  g.value(g.find_value("s")).shape = {2, 6};
  ir::Graph back = onnx::import_model_bytes(onnx::serialize_model(g), ".");
  EXPECT_EQ(back.opset, 17);  // opset < 13 graphs are written at 17 when no node needs 18
  expect_same_graph(g, back);
}

// x -> Conv(w) with epilogue [+bias, tanh, mask * acc]: four ONNX nodes after export.
ir::Graph conv_with_epilogue() {
  ir::Graph g;
  g.name = "epi";
  auto value = [&](const std::string& name, Shape shape, Tensor constant = {}) {
    ir::Value v;
    v.name = name;
    v.shape = std::move(shape);
    v.constant = std::move(constant);
    return g.add_value(std::move(v));
  };
  std::vector<float> w(3 * 2 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * float(int(i % 7) - 3);
  ir::ValueId x = value("x", {1, 2, 5});
  ir::ValueId mask = value("mask", {1, 1, 5});
  ir::ValueId wid = value("w", {3, 2, 3}, Tensor::from_vector<float>({3, 2, 3}, w));
  ir::ValueId bias = value("bias", {1, 3, 1}, Tensor::from_vector<float>({1, 3, 1}, {0.5f, -0.25f, 0.125f}));
  ir::ValueId y = value("y", {1, 3, 5});
  g.inputs = {x, mask};
  ir::Node conv;
  conv.op = ir::Op::Conv;
  conv.name = "conv";
  conv.inputs = {x, wid};
  conv.outputs = {y};
  conv.attrs.set("pads", std::vector<int64_t>{1, 1});
  conv.epilogue = {ir::EpilogueStep{ir::Op::Add, bias, false, 0.0f, "add_bias"},
                   ir::EpilogueStep{ir::Op::Tanh, ir::kNoValue, false, 0.0f, "tanh"},
                   ir::EpilogueStep{ir::Op::Mul, mask, true, 0.0f, "masked"}};
  g.nodes.push_back(conv);
  g.outputs = {y};
  return g;
}

TEST(OnnxExport, EpilogueBecomesSeparateNodes) {
  ir::Graph g = conv_with_epilogue();
  ir::Graph back = onnx::import_model_bytes(onnx::serialize_model(g), ".");
  ASSERT_EQ(back.nodes.size(), 4u);
  EXPECT_EQ(back.nodes[0].name, "conv");
  EXPECT_EQ(back.nodes[1].name, "add_bias");
  EXPECT_EQ(back.nodes[1].op, ir::Op::Add);
  EXPECT_EQ(back.value(back.nodes[1].inputs[1]).name, "bias");
  EXPECT_EQ(back.nodes[2].op, ir::Op::Tanh);
  EXPECT_EQ(back.nodes[3].op, ir::Op::Mul);
  EXPECT_EQ(back.value(back.nodes[3].inputs[0]).name, "mask");  // operand_is_lhs
  EXPECT_EQ(back.value(back.outputs[0]).name, "y");
}

bool python_has_onnx() { return std::system("python3 -c 'import onnx' >/dev/null 2>&1") == 0; }

TEST(OnnxExport, PassesOnnxChecker) {
  if (!python_has_onnx()) GTEST_SKIP() << "python3 with the onnx package is not available";
  std::string path = test::temp_dir() + "/epilogue.onnx";
  onnx::export_model(conv_with_epilogue(), path);
  std::string cmd = "python3 -c 'import onnx,sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)' " + path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string seed = test::temp_dir() + "/seed.onnx";
  onnx::export_model(onnx::import_model(test::shared_model("vits_seed_174")), seed);
  cmd = "python3 -c 'import onnx,sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)' " + seed;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST(OnnxExport, RoundTripKeepsTheReferenceOutput) {
  ir::Graph g = conv_with_epilogue();
  std::string path = test::temp_dir() + "/epilogue_ref.onnx";
  onnx::export_model(g, path);
  std::vector<Tensor> inputs = {Tensor(DType::Float32, {1, 2, 5}), Tensor(DType::Float32, {1, 1, 5})};
  for (int64_t i = 0; i < 10; ++i) inputs[0].data<float>()[i] = 0.3f * float(i) - 1.0f;
  for (int64_t i = 0; i < 5; ++i) inputs[1].data<float>()[i] = i % 2 ? 1.0f : 0.5f;
  auto fused = compile(Model::from_graph(g), "reference")->run(inputs);
  auto unfused = compile(Model::load(path), "reference")->run(inputs);
  ASSERT_EQ(fused.size(), 1u);
  ASSERT_EQ(unfused.size(), 1u);
  ASSERT_EQ(fused[0].numel(), unfused[0].numel());
  for (int64_t i = 0; i < fused[0].numel(); ++i)
    EXPECT_NEAR(fused[0].element_as_double(i), unfused[0].element_as_double(i), kSameBits) << i;
}

}  // namespace
}  // namespace lockstep
