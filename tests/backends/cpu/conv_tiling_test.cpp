// Time-axis tiles of 1-D convolutions (conv_tiling.h): long T not a multiple of the tile,
// dilation, stride, padding on both sides, groups, batch 2, channels-last and NCW neighbours,
// the polyphase ConvTranspose on long inputs; against the float64 reference at 1 and 2
// threads, and the same bits run to run and after other compilations.
#include "backends/cpu/conv_tiling.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iostream>

#include "backends/cpu/cpu_test_util.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/onednn_impl.h"
#include "support/graph_check.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;
using test::expect_cpu_matches;
using test::same_bits;

struct Case {
  int64_t n, ci, co, w, k, dilation, stride, pad_begin, pad_end, group;
  bool chained;  // conv -> tiled conv -> conv: channels-last between them; else NCW graph in/out
};

int64_t out_len(const Case& c) {
  return (c.w + c.pad_begin + c.pad_end - ((c.k - 1) * c.dilation + 1)) / c.stride + 1;
}

ir::Graph case_graph(const Case& c, uint32_t seed, ir::ValueId* mid, bool transpose = false) {
  ir::Graph g;
  test::GraphBuilder b(g);
  auto weights = [&](const char* name, Shape s, uint32_t k) {
    return b.value(name, s, random_tensor(s, seed + k, DType::Float32, -0.3f, 0.3f));
  };
  ir::ValueId x = b.value("x", {c.n, c.ci, c.w});
  g.inputs = {x};
  ir::ValueId src = x;
  if (c.chained)
    src = b.append_pad1_conv("pre", x, weights("wp", {c.ci, c.ci, 3}, 1), {c.n, c.ci, c.w});
  int64_t len = 0;
  if (transpose) {  // polyphase ConvTranspose: stride, kernel, pads
    len = (c.w - 1) * c.stride + c.k - c.pad_begin - c.pad_end;
    *mid = b.value("mid", {c.n, c.co, len});
    ir::Node t = b.node(Op::ConvTranspose, "mid",
                        {src, weights("wt", {c.ci, c.co, c.k}, 2), weights("bt", {c.co}, 3)}, *mid);
    t.attrs.set("strides", std::vector<int64_t>{c.stride});
    t.attrs.set("pads", std::vector<int64_t>{c.pad_begin, c.pad_end});
    g.nodes.push_back(t);
  } else {
    len = out_len(c);
    *mid = b.value("mid", {c.n, c.co, len});
    ir::Node t = b.node(
        Op::Conv, "mid",
        {src, weights("wt", {c.co, c.ci / c.group, c.k}, 2), weights("bt", {c.co}, 3)}, *mid);
    t.attrs.set("strides", std::vector<int64_t>{c.stride});
    t.attrs.set("dilations", std::vector<int64_t>{c.dilation});
    t.attrs.set("pads", std::vector<int64_t>{c.pad_begin, c.pad_end});
    t.attrs.set("group", c.group);
    g.nodes.push_back(t);
  }
  g.outputs = {
      c.chained ? b.append_pad1_conv("post", *mid, weights("wq", {16, c.co, 3}, 4), {c.n, 16, len})
                : *mid};
  return g;
}

std::string describe(const Case& c) {
  return "n " + std::to_string(c.n) + " ci " + std::to_string(c.ci) + " co " +
         std::to_string(c.co) + " w " + std::to_string(c.w) + " k " + std::to_string(c.k) + " d " +
         std::to_string(c.dilation) + " s " + std::to_string(c.stride) + " pads " +
         std::to_string(c.pad_begin) + "/" + std::to_string(c.pad_end) +
         (c.chained ? " nwc" : " ncw");
}

// The tile length in force for `channels` (LOCKSTEP_CPU_CONV_TILE may change it): cases are
// sized from it so that they always span several tiles and end in a partial one.
int64_t long_w(int64_t channels) {
  const int64_t L = cpu::conv_tile_outputs(channels);
  return 2 * L + L / 3 + 7;
}

TEST(CpuConvTiling, TilesOnlyLongAxes) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const int64_t L = cpu::conv_tile_outputs(16);
  cpu::Conv1dShape s{.n = 2,
                     .ci = 16,
                     .co = 16,
                     .groups = 1,
                     .w_in = L,
                     .w_out = L,
                     .k = 11,
                     .stride = 1,
                     .dilation = 4,
                     .pad_begin = 25};
  EXPECT_FALSE(cpu::TiledConv1d(engine, s, true).tiled());
  s.w_in = s.w_out = L + 1;
  const cpu::TiledConv1d tiled(engine, s, true);
  if (cpu::is_reference_impl(tiled.implementation()))
    GTEST_SKIP() << "needs a oneDNN convolution kernel: oneDNN has only " << tiled.implementation()
                 << " on this CPU, which TiledConv1d never tiles (the GEMM convolution runs such convs)";
  EXPECT_TRUE(tiled.tiled());
}

TEST(CpuConvTiling, LongConvMatchesReference) {
  const Case cases[] = {
      // dilation, pads both sides, batch 2, channels-last
      {2, 16, 16, long_w(16), 11, 5, 1, 25, 25, 1, true},
      {2, 8, 8, long_w(8), 11, 5, 1, 25, 25, 1, false},  // the shape, NCW graph in/out
      {1, 24, 32, long_w(32), 7, 1, 2, 4, 1, 1, true},   // stride 2, uneven pads
      {2, 32, 32, long_w(32), 5, 3, 1, 6, 6, 2, true},   // groups
      {1, 64, 64, long_w(64), 3, 1, 1, 0, 0, 1, false},  // no padding (last tile shorter only)
      {1, 16, 16, long_w(16), 1, 1, 1, 0, 0, 1, true},   // pointwise between channels-last convs
  };
  uint32_t seed = 900;
  for (const Case& c : cases) {
    ir::ValueId mid = 0;
    ir::Graph g = case_graph(c, seed += 10, &mid);
    if (c.chained)
      EXPECT_TRUE(cpu::choose_nwc(g)[mid])
          << describe(c) << ": the tiled conv should write channels-last";
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const cpu::TiledConv1d tiled(engine,
                                 {.n = c.n,
                                  .ci = c.ci,
                                  .co = c.co,
                                  .groups = c.group,
                                  .w_in = c.w,
                                  .w_out = out_len(c),
                                  .k = c.k,
                                  .stride = c.stride,
                                  .dilation = c.dilation - 1,
                                  .pad_begin = c.pad_begin},
                                 true);
    if (cpu::is_reference_impl(tiled.implementation()))  // oneDNN without a kernel of its own (arm64 without SVE)
      std::cout << "[ note ] " << describe(c) << ": oneDNN has only " << tiled.implementation()
                << " here, so no oneDNN tiles (the GEMM convolution runs it); checking the values only\n";
    else
      EXPECT_TRUE(tiled.tiled()) << describe(c);
    std::vector<Tensor> inputs = {random_tensor({c.n, c.ci, c.w}, seed)};
    const std::vector<Tensor> want = reference::evaluate(g, inputs);
    for (int threads : {1, 2})
      expect_cpu_matches(g, inputs, want, threads, c.ci * c.k + 3 * c.co,
                         describe(c) + " threads " + std::to_string(threads), /*run_to_run=*/true);
  }
}

TEST(CpuConvTiling, LongPolyphaseConvTransposeMatchesReference) {
  // The polyphase convolution has stride x C_out output channels.
  const int64_t L1 = cpu::conv_tile_outputs(8 * 16), L2 = cpu::conv_tile_outputs(3 * 16);
  const Case cases[] = {
      {2, 16, 16, L1 + L1 / 2 + 3, 16, 1, 8, 4, 4, 1, true},  // HiFi-GAN ups (K = 2s), batch 2
      {1, 24, 16, L2 + 5, 7, 1, 3, 1, 2, 1, false},           // K not a multiple of s, NCW in/out
  };
  uint32_t seed = 950;
  for (const Case& c : cases) {
    ir::ValueId mid = 0;
    ir::Graph g = case_graph(c, seed += 10, &mid, /*transpose=*/true);
    std::vector<Tensor> inputs = {random_tensor({c.n, c.ci, c.w}, seed)};
    const std::vector<Tensor> want = reference::evaluate(g, inputs);
    for (int threads : {1, 2})
      expect_cpu_matches(g, inputs, want, threads, c.ci * c.k + 3 * c.co,
                         "transpose " + describe(c) + " threads " + std::to_string(threads),
                         /*run_to_run=*/true);
  }
}

// Compile A, compile a different long conv, compile A again: the same bits (the primitive cache
// shares tile primitives between convs of one shape; it must not change what A computes).
TEST(CpuConvTiling, SameBitsAfterOtherCompilations) {
  const int64_t W = long_w(16);
  const Case a{2, 16, 16, W, 11, 5, 1, 25, 25, 1, true},
      b{1, 16, 16, W + 100, 11, 5, 1, 25, 25, 1, true};
  ir::ValueId mid = 0;
  ir::Graph ga = case_graph(a, 1000, &mid), gb = case_graph(b, 1010, &mid);
  std::vector<Tensor> in_a = {random_tensor({a.n, a.ci, a.w}, 1001)},
                      in_b = {random_tensor({b.n, b.ci, b.w}, 1011)};
  Options o;
  o.threads = 2;
  const std::vector<Tensor> first = cpu::backend().compile(ga, o)->run(in_a);
  auto other = cpu::backend().compile(gb, o);
  (void)other->run(in_b);
  EXPECT_TRUE(same_bits(first, cpu::backend().compile(ga, o)->run(in_a)));
}

}  // namespace
}  // namespace lockstep::cpu_test
