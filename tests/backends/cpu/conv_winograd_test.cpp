// Winograd 1-D convolutions (conv_winograd.h) against the float64 reference interpreter: every
// tile size m, tap groups of one, two and three taps, dilations, uneven and oversized pads,
// outputs shorter than a tile, partial output-channel vectors, batch 2; the same bits at 1, 2
// and 3 threads and on every instruction set the host runs; and the graph path (the factory's pick, between channels-last convs or from and
// to planar graph values) giving the same bits as the kernel run by hand.
#include <gtest/gtest.h>

#include <cstddef>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/conv_winograd.h"
#include "backends/cpu/cpu_test_util.h"
#include "backends/cpu/layout.h"
#include "support/graph_check.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

struct Case {
  int64_t n, ci, co, w_in, k, dilation, pad_begin, pad_end;
};

std::string describe(const Case& c, int tile, int threads) {
  return "n " + std::to_string(c.n) + " ci " + std::to_string(c.ci) + " co " + std::to_string(c.co) + " w " +
         std::to_string(c.w_in) + " k " + std::to_string(c.k) + " d " + std::to_string(c.dilation) + " pads " +
         std::to_string(c.pad_begin) + "/" + std::to_string(c.pad_end) + " m " + std::to_string(tile) + " threads " +
         std::to_string(threads);
}

// [n][c][w] <-> [n][w][c]
std::vector<float> to_nwc(const Tensor& t) {
  const Shape& s = t.shape();
  std::vector<float> out(static_cast<size_t>(t.numel()));
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t w = 0; w < s[2]; ++w)
        out[static_cast<size_t>((n * s[2] + w) * s[1] + c)] = t.data<float>()[(n * s[1] + c) * s[2] + w];
  return out;
}
Tensor from_nwc(const std::vector<float>& v, const Shape& ncw) {
  Tensor t(DType::Float32, ncw);
  for (int64_t n = 0; n < ncw[0]; ++n)
    for (int64_t c = 0; c < ncw[1]; ++c)
      for (int64_t w = 0; w < ncw[2]; ++w)
        t.data<float>()[(n * ncw[1] + c) * ncw[2] + w] = v[static_cast<size_t>((n * ncw[2] + w) * ncw[1] + c)];
  return t;
}

std::vector<float> run_winograd(const Case& c, int tile, int threads, const Tensor& x, const Tensor& w, const Tensor& b,
                                int64_t w_out, cpu::Isa isa = cpu::active_isa()) {
  const cpu::Winograd1dShape shape{.n = c.n, .ci = c.ci, .co = c.co, .w_in = c.w_in, .w_out = w_out, .k = c.k,
                                   .dilation = c.dilation, .pad_begin = c.pad_begin, .tile = tile};
  const cpu::Winograd1d conv(shape, w.data<float>(), b.data<float>(), threads, isa);
  std::vector<std::byte> scratch(conv.scratch_bytes());
  const std::vector<float> x_nwc = to_nwc(x);
  std::vector<float> y(static_cast<size_t>(c.n * w_out * c.co), -1.0f);
  conv.run(x_nwc.data(), y.data(), scratch.data());
  return y;
}

// Every instruction set this processor runs: the portable kernels, and each vector one up to
// the host's (an AVX-512 host also runs the AVX2 kernels).
std::vector<cpu::Isa> runnable_isas() {
  std::vector<cpu::Isa> isas = {cpu::Isa::Portable};
  const cpu::Isa host = cpu::detected_isa();
  if (host == cpu::Isa::Neon) isas.push_back(host);
  if (host == cpu::Isa::Avx2 || host == cpu::Isa::Avx512) isas.push_back(cpu::Isa::Avx2);
  if (host == cpu::Isa::Avx512) isas.push_back(cpu::Isa::Avx512);
  else if (static bool said = false; !said && (said = true))
    std::cout << "[   NOTE   ] no AVX-512F here: the AVX-512 Winograd kernels are not run by this test\n";
  return isas;
}

// Each ISA's kernels against the reference, and bit for bit against each other: per output they
// perform the same operations in the same order (conv_winograd_kernels.h), whatever the width.
TEST(CpuConvWinograd, MatchesReferenceAtEveryTileSizeWithTheSameBitsAtAnyThreadCountAndOnEveryIsa) {
  const Case cases[] = {
      {1, 72, 144, 1024, 5, 1, 2, 2},  // the flow's in_layer: several chunks, 48-channel panels
      {2, 5, 40, 61, 4, 2, 3, 1},      // groups of 3 + 1 taps; 16-channel panels, the last one half used
      {1, 17, 96, 50, 7, 3, 9, 9},     // 3 + 3 + 1, dilated
      {1, 3, 64, 37, 11, 1, 0, 0},     // 3 + 3 + 3 + 2, no padding, 32-channel panels
      {1, 8, 8, 9, 2, 5, 5, 5},        // one group of two taps, dilation 5
      {2, 1, 16, 5, 3, 1, 7, 0},       // padding longer than the kernel span, one input channel
      {1, 32, 32, 3, 3, 1, 1, 1},      // fewer outputs than one tile
      {1, 24, 48, 300, 5, 2, 0, 8},    // uneven padding
      {1, 192, 384, 17, 5, 1, 2, 2},   // a short sentence's flow layer: one chunk, its panels split across threads
  };
  uint32_t seed = 4100;
  for (const Case& c : cases) {
    seed += 10;
    const Tensor x = random_tensor({c.n, c.ci, c.w_in}, seed);
    const Tensor w = random_tensor({c.co, c.ci, c.k}, seed + 1, DType::Float32, -0.5f, 0.5f);
    const Tensor b = random_tensor({c.co}, seed + 2);
    ir::Attributes attrs;
    attrs.set("pads", std::vector<int64_t>{c.pad_begin, c.pad_end});
    attrs.set("dilations", std::vector<int64_t>{c.dilation});
    const ir::Graph g = node_graph(Op::Conv, {{x}, {w, false}, {b, false}}, attrs);
    const std::vector<Tensor> want = reference::evaluate(g, {x});
    const Shape& out = want[0].shape();
    for (int tile : {2, 3, 4}) {
      std::vector<float> first;
      for (cpu::Isa isa : runnable_isas())
        for (int threads : {1, 2, 3}) {
          const std::string what = describe(c, tile, threads) + " isa " + cpu::isa_name(isa);
          const std::vector<float> got = run_winograd(c, tile, threads, x, w, b, out[2], isa);
          expect_outputs_match({from_nwc(got, out)}, want, c.ci * c.k + 1, what, kCpuRelL2, kCpuAbsPerTerm);
          if (first.empty()) first = got;
          else
            EXPECT_TRUE(first == got) << what << ": bits differ from the portable kernels at 1 thread";
        }
    }
  }
}

// A conv between two convs reads and writes channels-last and has >= 32 channels: the backend
// runs it as Winograd1d. Checked against the reference at 1-3 threads and, bit for bit, against
// the kernel run by hand on the tapped input.
TEST(CpuConvWinograd, GraphPathPicksItAndMatchesTheKernelBitForBit) {
  if (!cpu::Winograd1d::available())
    GTEST_SKIP() << "this CPU has no vector FMA (AVX2, AVX-512F or NEON): the graph keeps oneDNN for these convs";
  const Case c{1, 64, 96, 200, 5, 2, 4, 4};
  ir::Graph g;
  test::GraphBuilder gb(g);
  uint32_t seed = 4300;
  auto weights = [&](const char* name, Shape s) {
    return gb.value(name, s, random_tensor(s, ++seed, DType::Float32, -0.2f, 0.2f));
  };
  const ir::ValueId x = gb.value("x", {1, 8, c.w_in});
  g.inputs = {x};
  const ir::ValueId mid = gb.append_pad1_conv("pre", x, weights("wp", {c.ci, 8, 3}), {1, c.ci, c.w_in});
  const ir::ValueId w = weights("w", {c.co, c.ci, c.k}), b = weights("b", {c.co});
  const ir::ValueId y = gb.value("y", {1, c.co, c.w_in});
  ir::Node conv = test::GraphBuilder::node(Op::Conv, "winograd", {mid, w, b}, y);
  conv.attrs.set("pads", std::vector<int64_t>{c.pad_begin, c.pad_end});
  conv.attrs.set("dilations", std::vector<int64_t>{c.dilation});
  g.nodes.push_back(conv);
  const ir::ValueId out = gb.append_pad1_conv("post", y, weights("wq", {8, c.co, 3}), {1, 8, c.w_in});
  g.outputs = {out};
  const std::vector<char> nwc = cpu::choose_nwc(g);
  ASSERT_TRUE(nwc[mid] && nwc[y]) << "the conv under test should read and write channels-last";

  const std::vector<Tensor> inputs = {random_tensor({1, 8, c.w_in}, 4399)};
  const std::vector<Tensor> want = reference::evaluate(g, inputs);
  for (int threads : {1, 2, 3}) {
    const std::string what = "graph threads " + std::to_string(threads);
    Options o;
    o.threads = threads;
    auto exe = cpu::backend().compile(g, o);
    std::map<std::string, Tensor> taps;
    RunOptions ro;
    ro.tap = [&](const ir::Node& n, int, const Tensor& v) { taps[n.name] = v; };
    expect_outputs_match(exe->run(inputs, ro), want, c.co * 3 * c.ci * c.k, what, kCpuRelL2, kCpuAbsPerTerm);
    ASSERT_TRUE(taps.count("pre") && taps.count("winograd")) << what;
    const std::vector<float> by_hand =
        run_winograd(c, 4, threads, taps.at("pre"), g.value(w).constant, g.value(b).constant, c.w_in);
    EXPECT_TRUE(by_hand == to_nwc(taps.at("winograd"))) << what << ": the graph's conv is not the Winograd kernel's bits";
  }
}

// A conv straight from a planar graph input to a planar graph output takes the kernel too,
// through channels-last copies: the same bits as the kernel by hand, and the reference's values.
TEST(CpuConvWinograd, PlanarGraphInputAndOutputGoThroughTheKernel) {
  if (!cpu::Winograd1d::available())
    GTEST_SKIP() << "this CPU has no vector FMA (AVX2, AVX-512F or NEON): the graph keeps oneDNN for these convs";
  const Case c{2, 40, 48, 77, 7, 1, 3, 3};
  const Tensor x = random_tensor({c.n, c.ci, c.w_in}, 4501);
  const Tensor w = random_tensor({c.co, c.ci, c.k}, 4502, DType::Float32, -0.3f, 0.3f);
  const Tensor b = random_tensor({c.co}, 4503);
  ir::Attributes attrs;
  attrs.set("pads", std::vector<int64_t>{c.pad_begin, c.pad_end});
  const ir::Graph g = node_graph(Op::Conv, {{x}, {w, false}, {b, false}}, attrs);
  const std::vector<Tensor> want = reference::evaluate(g, {x});
  for (int threads : {1, 2, 3}) {
    const std::string what = "planar threads " + std::to_string(threads);
    Options o;
    o.threads = threads;
    const std::vector<Tensor> got = cpu::backend().compile(g, o)->run({x});
    expect_outputs_match(got, want, c.ci * c.k + 1, what, kCpuRelL2, kCpuAbsPerTerm);
    const std::vector<float> by_hand = run_winograd(c, 4, threads, x, w, b, c.w_in);
    EXPECT_TRUE(by_hand == to_nwc(got[0])) << what << ": not the Winograd kernel's bits";
  }
}

}  // namespace
}  // namespace lockstep::cpu_test

namespace lockstep::cpu_test {
namespace {

// Weights made by the caller (a ConvTranspose's phases) are read only when no transform under
// their key is alive: another length of the same conv reuses it, with the same bits as the
// pointer constructor's.
TEST(CpuConvWinograd, CallerMadeWeightsAreReadOncePerKeyWhileAlive) {
  if (!cpu::Winograd1d::available()) GTEST_SKIP() << "this CPU has no vector FMA (AVX2, AVX-512F or NEON)";
  const Case c{1, 32, 48, 40, 2, 1, 1, 1};
  const Tensor w = random_tensor({c.co, c.ci, c.k}, 4601, DType::Float32, -0.3f, 0.3f);
  const Tensor b = random_tensor({c.co}, 4602);
  int reads = 0;
  auto weights = [&] {
    ++reads;
    return w.data<float>();
  };
  const std::string key = "test/caller-made/" + std::to_string(reinterpret_cast<uintptr_t>(&reads));
  auto shape = [&](int64_t w_in) {
    return cpu::Winograd1dShape{.n = 1, .ci = c.ci, .co = c.co, .w_in = w_in, .w_out = w_in + 1, .k = c.k,
                                .dilation = 1, .pad_begin = 1, .tile = 4};
  };
  const cpu::Winograd1d first(shape(40), weights, b.data<float>(), key, 2);
  const cpu::Winograd1d second(shape(97), weights, b.data<float>(), key, 2);
  EXPECT_EQ(reads, 1) << "a second length of the same weights transformed them again";
  const Tensor x = random_tensor({1, c.ci, 97}, 4603);
  const std::vector<float> x_nwc = to_nwc(x);
  std::vector<float> got(static_cast<size_t>(98 * c.co)), want(got.size());
  std::vector<std::byte> scratch(second.scratch_bytes());
  second.run(x_nwc.data(), got.data(), scratch.data());
  const cpu::Winograd1d by_pointer(shape(97), w.data<float>(), b.data<float>(), 2);
  std::vector<std::byte> scratch2(by_pointer.scratch_bytes());
  by_pointer.run(x_nwc.data(), want.data(), scratch2.data());
  EXPECT_TRUE(got == want) << "the shared transform differs from the pointer constructor's";
}

}  // namespace
}  // namespace lockstep::cpu_test
