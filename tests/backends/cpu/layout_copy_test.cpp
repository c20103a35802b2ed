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
  auto value = [&](std::string name, Shape shape, Tensor t = {}) {
    ir::Value v;
    v.name = std::move(name);
    v.shape = std::move(shape);
    v.constant = std::move(t);
    return g.add_value(std::move(v));
  };
  auto ints = [&](const char* name, std::vector<int64_t> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return value(name, {n}, Tensor::from_vector<int64_t>({n}, v));
  };
  const int64_t W = 203;
  ir::ValueId x = value("x", {1, 32, W});
  g.inputs = {x};
  ir::ValueId w1 = value("w1", {32, 32, 3}, random_tensor({32, 32, 3}, 41, DType::Float32, -0.2f, 0.2f));
  ir::ValueId w2 = value("w2", {8, 48, 3}, random_tensor({8, 48, 3}, 42, DType::Float32, -0.2f, 0.2f));
  c.y1 = value("y1", {1, 32, W});
  c.a = value("a", {1, 16, W});
  c.b = value("b", {1, 16, W});
  c.ta = value("ta", {1, 16, W});
  c.s = value("s", {1, 16, W});
  c.f = value("f", {1, 16, W});
  c.cat = value("cat", {1, 48, W});
  c.ts = value("ts", {1, 48, 70});
  c.out = value("out", {1, 8, W});
  c.tt = value("tt", {1, 48, 70});
  auto node = [&](Op op, std::string name, std::vector<ir::ValueId> in, std::vector<ir::ValueId> out) {
    ir::Node n;
    n.op = op;
    n.name = std::move(name);
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    return n;
  };
  ir::Node conv1 = node(Op::Conv, "conv1", {x, w1}, {c.y1});
  conv1.attrs.set("pads", std::vector<int64_t>{1, 1});
  ir::Node split = node(Op::Split, "split", {c.y1, ints("sizes", {16, 16})}, {c.a, c.b});
  split.attrs.set("axis", int64_t{1});
  ir::Node tanh = node(Op::Tanh, "tanh", {c.a}, {c.ta});
  ir::Node mid = node(Op::Slice, "mid", {c.y1, ints("s0", {8}), ints("s1", {24}), ints("s2", {1})}, {c.s});
  ir::Node flip = node(Op::Slice, "flip",
                       {c.b, ints("f0", {-1}), ints("f1", {std::numeric_limits<int64_t>::min()}), ints("f2", {1}), ints("f3", {-1})}, {c.f});
  ir::Node concat = node(Op::Concat, "concat", {c.ta, c.f, c.s}, {c.cat});
  concat.attrs.set("axis", int64_t{1});
  ir::Node conv2 = node(Op::Conv, "conv2", {c.cat, w2}, {c.out});
  conv2.attrs.set("pads", std::vector<int64_t>{1, 1});
  ir::Node time = node(Op::Slice, "time", {c.cat, ints("t0", {10}), ints("t1", {150}), ints("t2", {2}), ints("t3", {2})},
                       {c.ts});
  ir::Node tanh2 = node(Op::Tanh, "tanh2", {c.ts}, {c.tt});
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
    std::map<std::string, Tensor> want;
    reference::evaluate(c.g, inputs, [&](const ir::Node& n, int o, const Tensor& t) {
      want[n.name + "#" + std::to_string(o)] = t;
    });
    for (int threads : {1, 2, 3}) {
      Options o;
      o.threads = threads;
      auto exe = cpu::backend().compile(c.g, o);
      std::map<std::string, Tensor> got;
      RunOptions ro;
      ro.tap = [&](const ir::Node& n, int o, const Tensor& t) { got[n.name + "#" + std::to_string(o)] = t; };
      auto tapped = exe->run(inputs, ro);
      auto plain = exe->run(inputs);
      ASSERT_EQ(got.size(), want.size());
      for (auto& [name, t] : want) {
        Diff d = diff(got.at(name), t);
        EXPECT_TRUE(d.finite) << name;
        EXPECT_LE(d.rel_l2, kCopyTapRelL2) << name << " threads " << threads << " mixed " << mixed;
      }
      for (size_t i = 0; i < plain.size(); ++i)
        EXPECT_EQ(std::memcmp(plain[i].raw(), tapped[i].raw(), plain[i].nbytes()), 0) << "output " << i;
    }
  }
}

}  // namespace
}  // namespace lockstep::cpu_test
