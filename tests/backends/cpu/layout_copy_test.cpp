// Channels-last Slice, Split and Concat (layout.h): a WaveNet-like chain of channel splits,
// a channel flip, a time slice and a concat stays channels-last, and every tap (handed out in
// the declared NCW layout) matches the float64 reference at 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "backends/cpu/cpu_test_util.h"
#include "backends/cpu/layout.h"
#include "support/graph_check.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

// conv sums of <= 48*3 terms of order 1 against the float64 reference.
constexpr double kCopyTapRelL2 = 1e-6;

struct CopyChain {
  ir::Graph g;
  ir::ValueId y1, a, b, ta, s, f, cat, ts, out, tt;
};

CopyChain copy_chain() {
  CopyChain c;
  ir::Graph& g = c.g;
  test::GraphBuilder b(g);
  const int64_t W = 203;
  ir::ValueId x = b.value("x", {1, 32, W});
  g.inputs = {x};
  ir::ValueId w1 =
      b.value("w1", {32, 32, 3}, random_tensor({32, 32, 3}, 41, DType::Float32, -0.2f, 0.2f));
  ir::ValueId w2 =
      b.value("w2", {8, 48, 3}, random_tensor({8, 48, 3}, 42, DType::Float32, -0.2f, 0.2f));
  c.y1 = b.value("y1", {1, 32, W});
  c.a = b.value("a", {1, 16, W});
  c.b = b.value("b", {1, 16, W});
  c.ta = b.value("ta", {1, 16, W});
  c.s = b.value("s", {1, 16, W});
  c.f = b.value("f", {1, 16, W});
  c.cat = b.value("cat", {1, 48, W});
  c.ts = b.value("ts", {1, 48, 70});
  c.out = b.value("out", {1, 8, W});
  c.tt = b.value("tt", {1, 48, 70});
  ir::Node conv1 = b.node(Op::Conv, "conv1", {x, w1}, {c.y1});
  conv1.attrs.set("pads", std::vector<int64_t>{1, 1});
  ir::Node split = b.node(Op::Split, "split", {c.y1, b.ints("sizes", {16, 16})}, {c.a, c.b});
  split.attrs.set("axis", int64_t{1});
  ir::Node tanh = b.node(Op::Tanh, "tanh", {c.a}, {c.ta});
  ir::Node mid = b.node(Op::Slice, "mid",
                        {c.y1, b.ints("s0", {8}), b.ints("s1", {24}), b.ints("s2", {1})}, {c.s});
  ir::Node flip =
      b.node(Op::Slice, "flip",
             {c.b, b.ints("f0", {-1}), b.ints("f1", {std::numeric_limits<int64_t>::min()}),
              b.ints("f2", {1}), b.ints("f3", {-1})},
             {c.f});
  ir::Node concat = b.node(Op::Concat, "concat", {c.ta, c.f, c.s}, {c.cat});
  concat.attrs.set("axis", int64_t{1});
  ir::Node conv2 = b.node(Op::Conv, "conv2", {c.cat, w2}, {c.out});
  conv2.attrs.set("pads", std::vector<int64_t>{1, 1});
  ir::Node time =
      b.node(Op::Slice, "time",
             {c.cat, b.ints("t0", {10}), b.ints("t1", {150}), b.ints("t2", {2}), b.ints("t3", {2})},
             {c.ts});
  ir::Node tanh2 = b.node(Op::Tanh, "tanh2", {c.ts}, {c.tt});
  g.nodes = {conv1, split, tanh, mid, flip, concat, conv2, time, tanh2};
  g.outputs = {c.out, c.tt};
  return c;
}

TEST(CpuLayoutCopies, SliceSplitConcatStayChannelsLast) {
  CopyChain c = copy_chain();
  auto nwc = cpu::choose_nwc(c.g);
  for (ir::ValueId id : {c.y1, c.a, c.b, c.ta, c.s, c.f, c.cat})
    EXPECT_TRUE(nwc[id]) << c.g.value(id).name;
  EXPECT_FALSE(nwc[c.ts]) << "read by a Tanh whose output is a graph output";
  EXPECT_FALSE(nwc[c.out]);
  EXPECT_FALSE(nwc[c.tt]);
}

TEST(CpuLayoutCopies, MixedLayoutConcatFallsBackToNcw) {
  CopyChain c = copy_chain();
  // Make the flip's output a graph output: it stays NCW, so its Concat group does too.
  c.g.outputs.push_back(c.f);
  auto nwc = cpu::choose_nwc(c.g);
  EXPECT_FALSE(nwc[c.f]);
  EXPECT_FALSE(nwc[c.cat]);
}

TEST(CpuLayoutCopies, TapsMatchReference) {
  for (bool mixed : {false, true}) {
    CopyChain c = copy_chain();
    if (mixed) c.g.outputs.push_back(c.f);
    const std::vector<Tensor> inputs = {random_tensor({1, 32, 203}, 43)};
    test::expect_cpu_taps_match_reference(
        c.g, inputs,
        {.threads = {1, 2, 3},
         .rel_l2 = kCopyTapRelL2,
         .what = std::string("copy chain mixed ") + (mixed ? "1" : "0")});
  }
}

}  // namespace
}  // namespace lockstep::cpu_test
