// Channels-last activations across conv chains (layout.h): which values are chosen, and that
// results, taps (handed out in the declared NCW layout) and bits per thread count hold.
#include "backends/cpu/layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "backends/cpu/cpu_test_util.h"
#include "core/npy.h"
#include "support/fixtures.h"
#include "support/graph_check.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

// A tap is one node's float32 output against the float64 reference's; reductions of <= 32*5
// terms on values of order 1.
constexpr double kTapRelL2 = 1e-6;

struct Chain {
  ir::Graph g;
  ir::ValueId y1, y2, y3, y4, y5, out;
};

// x -> conv1 -> y1 -> LeakyRelu -> y2 -> conv2 (* mask, + y1) -> y3 -> Tanh -> y4 -> conv3 (1x1,
// 24 ch) -> out; y3 -> conv4 -> y5 -> Slice (channels-last in, NCW graph output out). 203
// positions: ragged tiles.
Chain chain_graph() {
  Chain c;
  ir::Graph& g = c.g;
  test::GraphBuilder b(g);
  const int64_t W = 203;
  ir::ValueId x = b.value("x", {1, 32, W}), mask = b.value("mask", {1, 1, W});
  g.inputs = {x, mask};
  auto weights = [&](const char* name, Shape s, uint32_t seed) {
    return b.value(name, s, random_tensor(s, seed, DType::Float32, -0.2f, 0.2f));
  };
  ir::ValueId w1 = weights("w1", {32, 32, 5}, 21), w2 = weights("w2", {32, 32, 3}, 22), w3 = weights("w3", {24, 32, 1}, 23);
  ir::ValueId b1 = b.value("b1", {32}, random_tensor({32}, 24));
  c.y1 = b.value("y1", {1, 32, W});
  c.y2 = b.value("y2", {1, 32, W});
  c.y3 = b.value("y3", {1, 32, W});
  c.y4 = b.value("y4", {1, 32, W});
  c.y5 = b.value("y5", {1, 16, W});
  c.out = b.value("out", {1, 24, W});
  ir::ValueId w4 = weights("w4", {16, 32, 3}, 27);
  ir::ValueId sliced = b.value("sliced", {1, 16, 100});
  ir::Node conv1 = b.node(Op::Conv, "conv1", {x, w1, b1}, c.y1);
  conv1.attrs.set("pads", std::vector<int64_t>{2, 2});
  ir::Node leaky = b.node(Op::LeakyRelu, "leaky", {c.y1}, c.y2);
  leaky.attrs.set("alpha", 0.1f);
  ir::Node conv2 = b.node(Op::Conv, "conv2", {c.y2, w2}, c.y3);
  conv2.attrs.set("pads", std::vector<int64_t>{1, 1});
  conv2.epilogue = {{Op::Mul, mask, false, 0, "mul_mask"}, {Op::Add, c.y1, true, 0, "add_res"}};
  ir::Node tanh = b.node(Op::Tanh, "tanh", {c.y3}, c.y4);
  ir::Node conv3 = b.node(Op::Conv, "conv3", {c.y4, w3}, c.out);
  ir::Node conv4 = b.node(Op::Conv, "conv4", {c.y3, w4}, c.y5);
  conv4.attrs.set("pads", std::vector<int64_t>{1, 1});
  ir::ValueId starts = b.ints("starts", {0}), ends = b.ints("ends", {100}),
              axes = b.ints("axes", {2});
  ir::Node slice = b.node(Op::Slice, "slice", {c.y5, starts, ends, axes}, sliced);
  g.nodes = {conv1, leaky, conv2, tanh, conv3, conv4, slice};
  g.outputs = {c.out, sliced};
  return c;
}

std::vector<Tensor> chain_inputs() {
  Tensor mask = random_tensor({1, 1, 203}, 25);
  for (int i = 0; i < 203; ++i) mask.data<float>()[i] = i < 180 ? 1.0f : 0.0f;
  return {random_tensor({1, 32, 203}, 26), mask};
}

TEST(CpuLayout, ChoosesChannelsLastInsideConvChains) {
  Chain c = chain_graph();
  auto nwc = cpu::choose_nwc(c.g);
  EXPECT_TRUE(nwc[c.y1]) << "conv -> LeakyRelu / epilogue operand";
  EXPECT_TRUE(nwc[c.y2]) << "LeakyRelu -> conv";
  EXPECT_TRUE(nwc[c.y3]) << "conv -> Tanh / conv";
  EXPECT_TRUE(nwc[c.y4]) << "Tanh -> conv";
  EXPECT_TRUE(nwc[c.y5]) << "conv -> Slice (a Slice reads either layout)";
  EXPECT_FALSE(nwc[c.g.outputs[1]]) << "the Slice's output is a graph output";
  EXPECT_FALSE(nwc[c.out]) << "graph output";
  for (ir::ValueId in : c.g.inputs) EXPECT_FALSE(nwc[in]);
}

TEST(CpuLayout, ChainAndTapsMatchReference) {
  Chain c = chain_graph();
  // chain_inputs() is deterministic (seeded): the same inputs the reference ran on.
  test::expect_cpu_taps_match_reference(
      c.g, chain_inputs(),
      {.threads = {1, 2, 3}, .rel_l2 = kTapRelL2, .recompile = true, .what = "chain"});
}

}  // namespace
}  // namespace lockstep::cpu_test

namespace lockstep::cpu_test {
namespace {

// Every tapped value of a decoder (channels-last chains, ConvTranspose, 8-channel values) in
// the declared NCW layout, against the float64 reference's taps; taps change no bits.
constexpr double kDecoderTapRelL2 = 1e-5;

TEST(CpuLayout, DecoderTapsMatchReferenceAndKeepBits) {
  const std::string stem = test::shared_models_dir() + "/vits_low_dec_T128";
  if (!std::filesystem::exists(stem + ".onnx")) GTEST_SKIP() << "no shared model " << stem;
  const std::vector<Tensor> inputs = {read_npy(stem + ".z_p.npy"), read_npy(stem + ".y_mask.npy")};
  Options o;
  o.threads = 2;
  auto exe = lockstep::compile(Model::load(stem + ".onnx"), "cpu", o);
  const ir::Graph& g = exe->graph();
  auto nwc = cpu::choose_nwc(g);
  int channels_last = 0;
  for (char c : nwc) channels_last += c != 0;
  EXPECT_GT(channels_last, 10) << "the decoder's conv chains should run channels-last";
  std::map<std::string, Tensor> want, got;
  reference::evaluate(g, inputs, [&](const ir::Node& n, int o, const Tensor& t) {
    if (o == 0 && is_floating(t.dtype())) want[n.name] = t;
  });
  RunOptions ro;
  ro.tap = [&](const ir::Node& n, int o, const Tensor& t) {
    if (o == 0 && is_floating(t.dtype())) got[n.name] = t;
  };
  auto tapped = exe->run(inputs, ro);
  auto plain = exe->run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (auto& [name, t] : want) EXPECT_LE(diff(got.at(name), t).rel_l2, kDecoderTapRelL2) << name;
  EXPECT_EQ(std::memcmp(plain[0].raw(), tapped[0].raw(), plain[0].nbytes()), 0);
}

}  // namespace
}  // namespace lockstep::cpu_test
