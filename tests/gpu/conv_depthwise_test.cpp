// The depthwise conv (conv_depthwise.cu): which convs take it, and against float64 on the
// duration predictor's DDSConv shapes (k3 at dilations 1, 3, 9) from one step to 600, with a
// channel multiplier, a stride and an epilogue; safe mode gives the same bits. Skips without a GPU.
#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"
#ifdef LOCKSTEP_HAVE_CUDA
#include "backends/cuda/families.h"  // conv_depthwise_eligible: needs the CUDA headers
#endif

namespace lockstep::gpu_test {
namespace {

using ir::Op;

#ifdef LOCKSTEP_HAVE_CUDA
struct Case {
  int64_t n, c, mult, t, k, dil, stride;
  bool bias;
};

ir::Graph depthwise_graph(const Case& c, uint32_t seed, std::vector<Tensor>& inputs) {
  std::vector<In> in{{random_tensor({c.n, c.c, c.t}, seed), true}, {random_tensor({c.c * c.mult, 1, c.k}, seed + 1), false}};
  if (c.bias) in.push_back({random_tensor({c.c * c.mult}, seed + 2), false});
  ir::Attributes a;
  const int64_t pad = (c.k - 1) * c.dil / 2;
  a.set("group", c.c);
  a.set("pads", std::vector<int64_t>{pad, pad});
  a.set("dilations", std::vector<int64_t>{c.dil});
  a.set("strides", std::vector<int64_t>{c.stride});
  ir::Graph g = node_graph(Op::Conv, in, a);
  inputs = runtime_inputs(in);
  return g;
}

TEST(CudaConvDepthwise, TakesDepthwiseConvsOnly) {
  std::vector<Tensor> inputs;
  ir::Graph g = depthwise_graph({1, 192, 1, 87, 3, 3, 1, true}, 1, inputs);
  EXPECT_TRUE(cuda::conv_depthwise_eligible(g, g.nodes[0], cuda::Precision::kFp32));
  EXPECT_FALSE(cuda::conv_depthwise_eligible(g, g.nodes[0], cuda::Precision::kFp16)) << "fp16 stays on cuDNN";
  std::vector<In> in{{random_tensor({1, 8, 64}, 1), true}, {random_tensor({4, 4, 3}, 2), false}};
  ir::Attributes two_groups;
  two_groups.set("group", int64_t{2});
  const ir::Graph gg = node_graph(Op::Conv, in, two_groups);
  EXPECT_FALSE(cuda::conv_depthwise_eligible(gg, gg.nodes[0], cuda::Precision::kFp32)) << "2 groups of 4 channels";
  in = {{random_tensor({1, 8, 6, 64}, 1), true}, {random_tensor({8, 1, 3, 3}, 2), false}};
  ir::Attributes g8;
  g8.set("group", int64_t{8});
  const ir::Graph g2 = node_graph(Op::Conv, in, g8);
  EXPECT_FALSE(cuda::conv_depthwise_eligible(g2, g2.nodes[0], cuda::Precision::kFp32)) << "2-D";
}

TEST(CudaConvDepthwise, MatchesFloat64Reference) {
  LOCKSTEP_REQUIRE_GPU();
  const Case cases[] = {
      {1, 192, 1, 87, 3, 1, 1, true},  {1, 192, 1, 87, 3, 3, 1, true}, {1, 192, 1, 600, 3, 9, 1, true},
      {1, 192, 1, 1, 3, 9, 1, true},   // one step: only the centre tap is inside
      {1, 192, 1, 5, 3, 9, 1, false},  // dilation past the length
      {2, 8, 2, 100, 5, 2, 1, true},   // batch 2, channel multiplier 2
      {1, 16, 1, 101, 3, 1, 2, true},  // stride 2
  };
  uint32_t seed = 40;
  for (const Case& c : cases) {
    std::vector<Tensor> inputs;
    const ir::Graph g = depthwise_graph(c, seed += 3, inputs);
    ASSERT_TRUE(cuda::conv_depthwise_eligible(g, g.nodes[0], cuda::Precision::kFp32));
    expect_cuda_matches_reference(g, inputs, c.k,
                                  "depthwise c" + std::to_string(c.c) + "x" + std::to_string(c.mult) + " t" + std::to_string(c.t) +
                                      " k" + std::to_string(c.k) + " d" + std::to_string(c.dil) + " s" + std::to_string(c.stride));
  }
  // With an epilogue (the DDSConv's mask multiply), fused by the pipeline into the node.
  std::vector<Tensor> inputs;
  ir::Graph g = depthwise_graph({1, 192, 1, 87, 3, 3, 1, true}, 90, inputs);
  ir::Value mv;
  mv.name = "mask";
  mv.dtype = DType::Float32;
  mv.shape = {1, 1, 87};
  const ir::ValueId mask = g.add_value(std::move(mv));
  g.inputs.push_back(mask);
  inputs.push_back(random_tensor({1, 1, 87}, 91));
  g.nodes[0].epilogue.push_back({Op::Mul, mask, false, 0.0f, "mask"});
  expect_cuda_matches_reference(g, inputs, 3, "depthwise with a mask epilogue");
}
#else
TEST(CudaConvDepthwise, NeedsCuda) { GTEST_SKIP() << "built without CUDA"; }
#endif

}  // namespace
}  // namespace lockstep::gpu_test
