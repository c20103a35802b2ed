// Polyphase ConvTranspose (conv_transpose.h): strided 1-D ConvTransposes with K a multiple of
// the stride or not, begin/end pads, batches, with and without bias, between channels-last
// convs and as NCW graph input/output, against the float64 reference at 1 and 2 threads.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/cpu/conv_winograd.h"
#include "backends/cpu/cpu_test_util.h"
#include "backends/cpu/layout.h"
#include "support/graph_check.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

struct Case {
  int64_t n, ci, co, w, k, s, pad_begin, pad_end;
  bool bias, chained;  // chained: conv -> ConvTranspose -> conv (channels-last between them)
};

ir::Graph case_graph(const Case& c, uint32_t seed, ir::ValueId* up) {
  ir::Graph g;
  test::GraphBuilder b(g);
  auto weights = [&](const char* name, Shape s, uint32_t k) {
    return b.value(name, s, random_tensor(s, seed + k, DType::Float32, -0.3f, 0.3f));
  };
  const int64_t out_w = (c.w - 1) * c.s + c.k - c.pad_begin - c.pad_end;
  ir::ValueId x = b.value("x", {c.n, c.ci, c.w});
  g.inputs = {x};
  ir::ValueId src = x;
  if (c.chained)
    src = b.append_pad1_conv("pre", x, weights("wp", {c.ci, c.ci, 3}, 1), {c.n, c.ci, c.w});
  *up = b.value("up", {c.n, c.co, out_w});
  std::vector<ir::ValueId> in{src, weights("wt", {c.ci, c.co, c.k}, 2)};
  if (c.bias) in.push_back(weights("bt", {c.co}, 3));
  ir::Node t = b.node(Op::ConvTranspose, "up", in, *up);
  t.attrs.set("strides", std::vector<int64_t>{c.s});
  t.attrs.set("pads", std::vector<int64_t>{c.pad_begin, c.pad_end});
  g.nodes.push_back(t);
  g.outputs = {
      c.chained ? b.append_pad1_conv("post", *up, weights("wq", {8, c.co, 3}, 4), {c.n, 8, out_w})
                : *up};
  return g;
}

TEST(CpuConvTransposePolyphase, MatchesReference) {
  const Case cases[] = {
      {1, 16, 16, 33, 16, 8, 4, 4, true, true},  // HiFi-GAN ups: K = 2s
      {2, 16, 8, 20, 8, 4, 2, 2, true, true},    // batch 2, K = 2s
      {1, 24, 16, 17, 7, 3, 1, 2, false, true},  // K not a multiple of s, uneven pads
      {2, 8, 16, 9, 5, 2, 0, 0, true, false},    // NCW graph input and output
      {1, 16, 32, 40, 4, 4, 0, 0, true, true},   // K = s (one tap)
      {1, 32, 8, 12, 3, 5, 1, 0, true, true},    // K < s: phases past K are zero
  };
  uint32_t seed = 700;
  for (const Case& c : cases) {
    ir::ValueId up = 0;
    ir::Graph g = case_graph(c, seed += 10, &up);
    if (c.chained) EXPECT_TRUE(cpu::choose_nwc(g)[up]) << "the ConvTranspose should write channels-last";
    std::vector<Tensor> inputs = {random_tensor({c.n, c.ci, c.w}, seed)};
    std::string what = "ci " + std::to_string(c.ci) + " co " + std::to_string(c.co) + " k " + std::to_string(c.k) +
                       " s " + std::to_string(c.s) + " n " + std::to_string(c.n);
    const std::vector<Tensor> want = reference::evaluate(g, inputs);
    for (int threads : {1, 2})
      test::expect_cpu_matches(g, inputs, want, threads, c.ci * c.k + 3 * c.co,
                               what + " threads " + std::to_string(threads),
                               /*run_to_run=*/false);
  }
}

// The phases run through the Winograd kernel where it applies, so that a new length
// JIT-compiles no oneDNN primitive: against the reference at two lengths, the HiFi-GAN
// upsamplers' geometry (K = 2s), K not a multiple of s (three taps), and an axis longer than
// a oneDNN tile (which would have been tiled).
TEST(CpuConvTransposePolyphase, RunsTheWinogradKernelWhereItApplies) {
  if (!cpu::Winograd1d::available()) GTEST_SKIP() << "this CPU has no vector FMA (AVX2, AVX-512F or NEON)";
  const Case cases[] = {
      {1, 64, 32, 50, 16, 8, 4, 4, true, true},
      {1, 64, 32, 51, 16, 8, 4, 4, true, true},
      {2, 48, 16, 30, 7, 3, 1, 2, false, false},
      {1, 32, 8, 2100, 16, 8, 4, 4, true, false},
  };
  uint32_t seed = 900;
  for (const Case& c : cases) {
    ir::ValueId up = 0;
    ir::Graph g = case_graph(c, seed += 10, &up);
    std::vector<Tensor> inputs = {random_tensor({c.n, c.ci, c.w}, seed)};
    const std::string what = "ci " + std::to_string(c.ci) + " w " + std::to_string(c.w) + " k " + std::to_string(c.k);
    const std::vector<Tensor> want = reference::evaluate(g, inputs);
    for (int threads : {1, 2}) {
      Options o;
      o.threads = threads;
      const auto exe = cpu::backend().compile(g, o);
      bool winograd = false;
      for (const std::string& impl : exe->kernel_implementations())
        winograd = winograd || impl.rfind("lockstep:winograd", 0) == 0;
      EXPECT_TRUE(winograd) << what << ": the ConvTranspose did not take the Winograd kernel";
      test::expect_cpu_matches(g, inputs, want, threads, c.ci * c.k + 3 * c.co, what + " threads " + std::to_string(threads),
                               /*run_to_run=*/true);
    }
  }
}

}  // namespace
}  // namespace lockstep::cpu_test
