// Channel-slice views (views.h): the gated halves of a conv output and a residual half are read
// in place (strided, channels-last; dense, NCW), taps hand out their values, a fault planted on
// a view reaches its readers, and results match the float64 reference at 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "backends/cpu/cpu_test_util.h"
#include "backends/cpu/layout.h"
#include "support/graph_check.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;
using test::expect_cpu_taps_match_reference;

constexpr double kViewTapRelL2 = 1e-6;  // conv sums of 16*3 terms of order 1

struct Gated {
  ir::Graph g;
  ir::ValueId y, a, b, c, d, f, ta, gate, sum, out, res;
};

// x -> conv -> y [48 ch, channels-last]; a = y[:, :16], b = y[:, 16:32], c = y[:, 32:];
// ta = tanh(a); gate = sigmoid(b) * ta; sum = c + gate -> conv -> out. From the NCW graph
// input x2 (read only by slices): d = x2[:, 4:12], e = x2[:, :4]; res = d - 1.5, res2 = e - 1.5.
// From x (also read by the conv: no views): f = x[:, 2:10]; res3 = f - 1.5.
Gated gated_graph() {
  Gated t;
  ir::Graph& g = t.g;
  test::GraphBuilder b(g);
  const int64_t W = 77;
  ir::ValueId x = b.value("x", {1, 16, W}), x2 = b.value("x2", {1, 12, W});
  g.inputs = {x, x2};
  ir::ValueId w1 =
      b.value("w1", {48, 16, 3}, random_tensor({48, 16, 3}, 61, DType::Float32, -0.3f, 0.3f));
  ir::ValueId w2 =
      b.value("w2", {8, 16, 3}, random_tensor({8, 16, 3}, 62, DType::Float32, -0.3f, 0.3f));
  t.y = b.value("y", {1, 48, W});
  t.a = b.value("a", {1, 16, W});
  t.b = b.value("b", {1, 16, W});
  t.c = b.value("c", {1, 16, W});
  t.d = b.value("d", {1, 8, W});
  t.ta = b.value("ta", {1, 16, W});
  t.gate = b.value("gate", {1, 16, W});
  t.sum = b.value("sum", {1, 16, W});
  t.out = b.value("out", {1, 8, W});
  t.res = b.value("res", {1, 8, W});
  ir::ValueId e = b.value("e", {1, 4, W});
  t.f = b.value("f", {1, 8, W});
  ir::ValueId res2 = b.value("res2", {1, 4, W}), res3 = b.value("res3", {1, 8, W});
  ir::ValueId onehalf = b.value("onehalf", {}, Tensor::from_vector<float>({}, {1.5f}));
  auto slice = [&](const char* name, ir::ValueId from, int64_t s, int64_t e, ir::ValueId to) {
    std::string n(name);
    return b.node(Op::Slice, n,
                  {from, b.ints(n + "_s", {s}), b.ints(n + "_e", {e}), b.ints(n + "_a", {1})}, to);
  };
  ir::Node conv1 = b.node(Op::Conv, "conv1", {x, w1}, t.y);
  conv1.attrs.set("pads", std::vector<int64_t>{1, 1});
  ir::Node sig = b.node(Op::Sigmoid, "sigmoid", {t.b}, t.gate);
  sig.epilogue = {{Op::Mul, t.ta, true, 0, "gate_mul"}};
  ir::Node conv2 = b.node(Op::Conv, "conv2", {t.sum, w2}, t.out);
  conv2.attrs.set("pads", std::vector<int64_t>{1, 1});
  g.nodes = {conv1,
             slice("slice_a", t.y, 0, 16, t.a),
             b.node(Op::Tanh, "tanh", {t.a}, t.ta),
             slice("slice_b", t.y, 16, 32, t.b),
             sig,
             slice("slice_c", t.y, 32, 1000, t.c),
             b.node(Op::Add, "add", {t.c, t.gate}, t.sum),
             conv2,
             slice("slice_d", x2, 4, 12, t.d),
             b.node(Op::Sub, "sub", {t.d, onehalf}, t.res),
             slice("slice_e", x2, 0, 4, e),
             b.node(Op::Sub, "sub2", {e, onehalf}, res2),
             slice("slice_f", x, 2, 10, t.f),
             b.node(Op::Sub, "sub3", {t.f, onehalf}, res3)};
  g.outputs = {t.out, t.res, res2, res3};
  return t;
}

TEST(CpuViews, GatedHalvesMatchReferenceAndTapsAtAnyThreadCount) {
  Gated t = gated_graph();
  auto nwc = cpu::choose_nwc(t.g);
  for (ir::ValueId id : {t.y, t.a, t.b, t.c, t.ta, t.gate, t.sum}) EXPECT_TRUE(nwc[id]) << t.g.value(id).name;
  const std::vector<Tensor> inputs = {random_tensor({1, 16, 77}, 63), random_tensor({1, 12, 77}, 65)};
  expect_cpu_taps_match_reference(t.g, inputs,
                                  {.threads = {1, 2, 3}, .rel_l2 = kViewTapRelL2, .what = "gated"});
}

// A Slice of a channel slice (NCW, batch 1: both could be views): the second reads the first's
// values, which live in x's buffer. Before the fix it read the first view's own, never-written
// buffer (rel L2 1 against the reference).
TEST(CpuViews, SliceOfAViewReadsTheViewsValues) {
  ir::Graph g;
  test::GraphBuilder b(g);
  const int64_t W = 64;
  const ir::ValueId x = b.value("x", {1, 32, W}), a = b.value("a", {1, 16, W}), c = b.value("c", {1, 8, W});
  const ir::ValueId y = b.value("y", {1, 8, W});
  g.inputs = {x};
  g.outputs = {y};
  auto slice = [&](const char* name, ir::ValueId from, int64_t s, int64_t e, ir::ValueId to) {
    std::string n(name);
    return b.node(Op::Slice, n, {from, b.ints(n + "_s", {s}), b.ints(n + "_e", {e}), b.ints(n + "_a", {1})}, to);
  };
  g.nodes = {slice("outer", x, 0, 16, a), slice("inner", a, 8, 16, c), b.node(Op::Tanh, "tanh", {c}, y)};
  expect_cpu_taps_match_reference(g, {random_tensor({1, 32, W}, 67)},
                                  {.threads = {1, 2}, .rel_l2 = kViewTapRelL2, .what = "slice of a view"});
}

// A fault planted on a view's value must reach its readers exactly as on a copied slice: the
// reference given the same faulted value is the oracle.
TEST(CpuViews, FaultOnAViewReachesItsReaders) {
  Gated t = gated_graph();
  const std::vector<Tensor> inputs = {random_tensor({1, 16, 77}, 64), random_tensor({1, 12, 77}, 66)};
  auto shift = [](const ir::Node& n, int, Tensor& v) {
    if (n.name != "slice_b" && n.name != "slice_d" && n.name != "slice_f") return;
    for (int64_t i = 0; i < v.numel(); i += 3) v.data<float>()[i] += 0.25f;
  };
  RunOptions ro;
  ro.fault_for_testing = shift;
  auto got = cpu::backend().compile(t.g, Options{})->run(inputs, ro);
  // Oracle: the same graph with the slices' outputs shifted by an explicit Add of a constant.
  Gated r = gated_graph();
  test::GraphBuilder rb(r.g);
  auto delta = [&](const char* name, ir::ValueId id) {
    Tensor d(DType::Float32, r.g.value(id).shape);
    std::memset(d.raw(), 0, d.nbytes());
    for (int64_t i = 0; i < d.numel(); i += 3) d.data<float>()[i] = 0.25f;
    return rb.value(name, d.shape(), d);
  };
  for (auto [slice_name, id] : {std::pair<const char*, ir::ValueId>{"slice_b", r.b}, {"slice_d", r.d}, {"slice_f", r.f}}) {
    const ir::ValueId s = rb.value(std::string(slice_name) + "_shifted", r.g.value(id).shape);
    for (auto& n : r.g.nodes)
      for (auto& in : n.inputs)
        if (in == id) in = s;
    ir::Node add = rb.node(Op::Add, std::string(slice_name) + "_fault",
                           {id, delta((std::string(slice_name) + "_delta").c_str(), id)}, s);
    auto at = std::find_if(r.g.nodes.begin(), r.g.nodes.end(), [name = std::string(slice_name)](const ir::Node& n) { return n.name == name; });
    r.g.nodes.insert(at + 1, add);
  }
  expect_outputs_match(got, reference::evaluate(r.g, inputs), 48 * 3, "faulted views", kCpuRelL2, kCpuAbsPerTerm);
}

}  // namespace
}  // namespace lockstep::cpu_test
