// The performance paths (channels-last transposes with the epilogue fused per tile) against the
// float64 reference, unfused compilation, taps and thread counts.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "backends/cpu/cpu_test_util.h"
#include "core/npy.h"
#include "support/fixtures.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

// Both runs are ~8e-7 from float64 on this model, so they may differ by at most about twice that.
constexpr double kFusedVsUnfusedRelL2 = 2e-6;

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Conv [1,32,203] k5 (channels-last in oneDNN, 32 >= 16 channels: our transposes) with an
// epilogue: + per-channel bias, * mask, tanh, + residual. 203 positions leave ragged 16-tiles.
ir::Graph wide_conv_graph() {
  ir::Graph g;
  auto value = [&](std::string name, Shape shape, Tensor c = {}) {
    ir::Value v;
    v.name = std::move(name);
    v.shape = std::move(shape);
    v.constant = std::move(c);
    return g.add_value(std::move(v));
  };
  ir::ValueId x = value("x", {1, 32, 203}), mask = value("mask", {1, 1, 203});
  g.inputs = {x, mask};
  ir::ValueId w = value("w", {32, 32, 5}, random_tensor({32, 32, 5}, 11, DType::Float32, -0.2f, 0.2f));
  ir::ValueId b = value("b", {32, 1}, random_tensor({32, 1}, 12));
  ir::ValueId y = value("y", {1, 32, 203});
  ir::Node conv;
  conv.op = Op::Conv;
  conv.name = "conv";
  conv.inputs = {x, w};
  conv.outputs = {y};
  conv.attrs.set("pads", std::vector<int64_t>{2, 2});
  conv.epilogue = {{Op::Add, b, false, 0, "add_b"},
                   {Op::Mul, mask, true, 0, "mul_mask"},
                   {Op::Tanh, ir::kNoValue, false, 0, "tanh"},
                   {Op::Add, x, true, 0, "add_res"}};
  g.nodes = {conv};
  g.outputs = {y};
  return g;
}

std::vector<Tensor> wide_inputs() {
  Tensor mask = random_tensor({1, 1, 203}, 13);
  for (int i = 0; i < 203; ++i) mask.data<float>()[i] = i < 170 ? 1.0f : 0.0f;
  return {random_tensor({1, 32, 203}, 14), mask};
}

TEST(CpuFastPaths, ChannelsLastConvWithEpilogueMatchesReference) {
  expect_matches_reference(wide_conv_graph(), wide_inputs(), 32 * 5, "conv 32ch k5 + epilogue");
}

TEST(CpuFastPaths, ChannelsLastConvSameBitsPerThreadCount) {
  for (int threads : {1, 2, 3}) {
    Options o;
    o.threads = threads;
    auto a = cpu::backend().compile(wide_conv_graph(), o);
    auto b = cpu::backend().compile(wide_conv_graph(), o);
    auto r1 = a->run(wide_inputs()), r2 = a->run(wide_inputs()), r3 = b->run(wide_inputs());
    EXPECT_TRUE(same_bits(r1[0], r2[0])) << "threads " << threads;
    EXPECT_TRUE(same_bits(r1[0], r3[0])) << "threads " << threads;
  }
}

// The default-shaped flow: fused and unfused agree within float32 noise; taps change no bits.
TEST(CpuFastPaths, SeedModelFusedVsUnfusedAndTapped) {
  const std::string stem = test::shared_models_dir() + "/vits_seed_174";
  if (!std::filesystem::exists(stem + ".onnx")) GTEST_SKIP() << "no shared model " << stem;
  const std::vector<Tensor> inputs = {read_npy(stem + ".z_p.npy"), read_npy(stem + ".y_mask.npy")};
  Model model = Model::load(stem + ".onnx");
  Options fused_options, unfused_options;
  fused_options.threads = unfused_options.threads = 2;
  unfused_options.fuse = false;
  auto fused = lockstep::compile(model, "cpu", fused_options);
  auto unfused = lockstep::compile(model, "cpu", unfused_options);
  auto out_fused = fused->run(inputs);
  auto out_unfused = unfused->run(inputs);
  ASSERT_EQ(out_fused.size(), 1u);
  EXPECT_LE(diff(out_fused[0], out_unfused[0]).rel_l2, kFusedVsUnfusedRelL2);
  int taps = 0;
  RunOptions ro;
  ro.tap = [&](const ir::Node&, int, const Tensor&) { ++taps; };
  auto tapped = fused->run(inputs, ro);
  EXPECT_GT(taps, 100);
  EXPECT_TRUE(same_bits(tapped[0], out_fused[0]));
  auto again = fused->run(inputs);
  EXPECT_TRUE(same_bits(again[0], out_fused[0]));
}

}  // namespace
}  // namespace lockstep::cpu_test
