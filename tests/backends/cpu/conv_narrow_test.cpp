// Narrow-output convolutions (conv_narrow.h): a channels-last conv feeding a conv to 1-3
// output channels (dilated or not, uneven pads, batch 2, a Tanh epilogue), against the float64
// reference at 1, 2 and 3 threads, with the same bits at every thread count.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/cpu/cpu_test_util.h"
#include "backends/cpu/layout.h"
#include "support/graph_check.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

struct Case {
  int64_t n, c, co, w, k, d, pad_begin, pad_end;
  bool bias;
};

ir::Graph narrow_graph(const Case& c, uint32_t seed, ir::ValueId* mid) {
  ir::Graph g;
  test::GraphBuilder b(g);
  auto weights = [&](const char* name, Shape s, uint32_t k) {
    return b.value(name, s, random_tensor(s, seed + k, DType::Float32, -0.3f, 0.3f));
  };
  ir::ValueId x = b.value("x", {c.n, 8, c.w});
  g.inputs = {x};
  *mid = b.append_pad1_conv("pre", x, weights("wp", {c.c, 8, 3}, 1), {c.n, c.c, c.w});
  const int64_t out_w = c.w + c.pad_begin + c.pad_end - (c.k - 1) * c.d;
  ir::ValueId out = b.value("out", {c.n, c.co, out_w});
  ir::Node post = b.node(Op::Conv, "post", {*mid, weights("wq", {c.co, c.c, c.k}, 2)}, out);
  if (c.bias) post.inputs.push_back(weights("bq", {c.co}, 3));
  post.attrs.set("pads", std::vector<int64_t>{c.pad_begin, c.pad_end});
  post.attrs.set("dilations", std::vector<int64_t>{c.d});
  post.epilogue = {{Op::Tanh, ir::kNoValue, false, 0, "tanh"}};
  g.nodes.push_back(post);
  g.outputs = {out};
  return g;
}

TEST(CpuConvNarrow, MatchesReferenceWithTheSameBitsAtAnyThreadCount) {
  const Case cases[] = {
      {1, 32, 1, 3000, 7, 1, 3, 3, false},  // vocoder conv_post; 3 items of 1024 positions
      {2, 16, 3, 50, 5, 2, 4, 1, true},     // dilated, uneven pads, batch 2
      {1, 8, 1, 9, 7, 1, 3, 3, true},       // shorter than an 8-output block
      {1, 24, 2, 40, 3, 1, 0, 0, true},     // valid padding
  };
  uint32_t seed = 900;
  for (const Case& c : cases) {
    ir::ValueId mid = 0;
    ir::Graph g = narrow_graph(c, seed += 10, &mid);
    EXPECT_TRUE(cpu::choose_nwc(g)[mid]) << "the narrow conv's input should be channels-last";
    const std::vector<Tensor> inputs = {random_tensor({c.n, 8, c.w}, seed)};
    const std::vector<Tensor> want = reference::evaluate(g, inputs);
    const std::string what = "c " + std::to_string(c.c) + " co " + std::to_string(c.co) + " k " + std::to_string(c.k);
    std::vector<Tensor> first;
    for (int threads : {1, 2, 3}) {
      const std::string at = what + " threads " + std::to_string(threads);
      std::vector<Tensor> got = test::expect_cpu_matches(g, inputs, want, threads, c.c * c.k + 24,
                                                         at, /*run_to_run=*/false);
      if (first.empty()) first = got;
      else
        EXPECT_TRUE(test::same_bits(first, got)) << at << ": bits differ from 1 thread";
    }
  }
}

}  // namespace
}  // namespace lockstep::cpu_test
