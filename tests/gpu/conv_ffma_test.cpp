// The FFMA conv (conv_ffma.cu): which convs take it, accuracy against float64, the same bits on
// every tile, with its epilogue fused or run after, twice, and in safe mode. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "gpu/gpu_test_util.h"
#ifdef LOCKSTEP_HAVE_CUDA
#include "backends/cuda/families.h"  // conv_ffma_eligible: needs the CUDA headers
#endif

namespace lockstep::gpu_test {
namespace {

using ir::Op;

#ifdef LOCKSTEP_HAVE_CUDA
constexpr double kFfmaRelL2 = 1e-6;  // one FMA chain of C_in*k terms per output

struct Case {
  Shape x, w;
  std::vector<int64_t> pads;
  int64_t dil;
  bool bias;
  int epilogue;  // 0 none, 1 the flows' mask, 2 mask + residual + LeakyRelu, 3 six steps (past the fused four)
};

// A graph input of `shape` for an epilogue operand, its random value appended to `inputs`.
ir::ValueId operand(ir::Graph& g, std::vector<Tensor>& inputs, const std::string& name, Shape shape, uint32_t seed) {
  ir::Value v;
  v.name = name;
  v.dtype = DType::Float32;
  v.shape = shape;
  const ir::ValueId id = g.add_value(std::move(v));
  g.inputs.push_back(id);
  inputs.push_back(random_tensor(std::move(shape), seed));
  return id;
}

ir::Graph conv_graph(const Case& c, uint32_t seed, std::vector<Tensor>& inputs, bool runtime_w = false) {
  std::vector<In> in{{random_tensor(c.x, seed), true}, {random_tensor(c.w, seed + 1), runtime_w}};
  if (c.bias) in.push_back({random_tensor({c.w[0]}, seed + 2), false});
  ir::Attributes a;
  a.set("pads", c.pads);
  a.set("dilations", std::vector<int64_t>{c.dil});
  ir::Graph g = node_graph(Op::Conv, in, a);
  inputs = runtime_inputs(in);
  if (c.epilogue == 0) return g;
  const Shape out = g.value(g.nodes[0].outputs[0]).shape;
  const ir::ValueId mask = operand(g, inputs, "mask", {out[0], 1, out[2]}, seed + 3);
  auto& steps = g.nodes[0].epilogue;
  steps.push_back({Op::Mul, mask, false, 0.0f, "mask"});
  if (c.epilogue >= 2) {
    const ir::ValueId z = operand(g, inputs, "residual", out, seed + 4);
    steps.push_back({Op::Add, z, true, 0.0f, "residual"});
    steps.push_back({Op::LeakyRelu, ir::kNoValue, false, 0.1f, "leaky"});
    if (c.epilogue == 3) {
      const ir::ValueId per_channel = operand(g, inputs, "scale", {1, out[1], 1}, seed + 5);
      steps.push_back({Op::Sub, per_channel, true, 0.0f, "sub_from_scale"});
      steps.push_back({Op::Tanh, ir::kNoValue, false, 0.0f, "tanh"});
      steps.push_back({Op::Mul, z, false, 0.0f, "times_residual"});
    }
  }
  return g;
}

std::string describe(const Case& c) {
  return "ffma conv x" + shape_str(c.x) + " w" + shape_str(c.w) + " d" + std::to_string(c.dil) + " epilogue " +
         std::to_string(c.epilogue);
}

// Runs `g` with LOCKSTEP_CUDA_CONV_FFMA_TILE / _FUSE set to `tile` / `fuse` ("" leaves them unset).
Tensor run_with(const ir::Graph& g, const std::vector<Tensor>& inputs, const char* tile, const char* fuse) {
  if (*tile) setenv("LOCKSTEP_CUDA_CONV_FFMA_TILE", tile, 1);
  if (*fuse) setenv("LOCKSTEP_CUDA_CONV_FFMA_FUSE", fuse, 1);
  const int before = cuda::conv_ffma_recorded_count();
  Tensor out = cuda::backend().compile(g, Options{})->run(inputs)[0];
  EXPECT_EQ(cuda::conv_ffma_recorded_count(), before + 1) << "the conv did not take the FFMA path";
  unsetenv("LOCKSTEP_CUDA_CONV_FFMA_TILE");
  unsetenv("LOCKSTEP_CUDA_CONV_FFMA_FUSE");
  return out;
}

TEST(CudaConvFfma, TakesConstantWeightOneByOneConvsInStrictFp32) {
  std::vector<Tensor> inputs;
  const Case flow{{1, 192, 64}, {384, 192, 1}, {0, 0}, 1, true, 0};
  const ir::Graph g = conv_graph(flow, 1, inputs);
  EXPECT_TRUE(cuda::conv_ffma_eligible(g, g.nodes[0], cuda::Precision::kFp32));
  EXPECT_FALSE(cuda::conv_ffma_eligible(g, g.nodes[0], cuda::Precision::kTf32));
  EXPECT_FALSE(cuda::conv_ffma_eligible(g, g.nodes[0], cuda::Precision::kFp16));
  setenv("LOCKSTEP_CUDA_CONV_FFMA", "0", 1);
  EXPECT_FALSE(cuda::conv_ffma_eligible(g, g.nodes[0], cuda::Precision::kFp32));
  unsetenv("LOCKSTEP_CUDA_CONV_FFMA");
  const ir::Graph runtime_w = conv_graph(flow, 1, inputs, true);
  EXPECT_FALSE(cuda::conv_ffma_eligible(runtime_w, runtime_w.nodes[0], cuda::Precision::kFp32)) << "runtime weights";
  const Case k5{{1, 72, 64}, {144, 72, 5}, {2, 2}, 1, true, 0};
  const ir::Graph wide = conv_graph(k5, 1, inputs);
  EXPECT_FALSE(cuda::conv_ffma_eligible(wide, wide.nodes[0], cuda::Precision::kFp32)) << "kernel 5 without the opt-in";
  setenv("LOCKSTEP_CUDA_CONV_FFMA", "all", 1);
  EXPECT_TRUE(cuda::conv_ffma_eligible(wide, wide.nodes[0], cuda::Precision::kFp32)) << "kernel 5 with the opt-in";
  unsetenv("LOCKSTEP_CUDA_CONV_FFMA");
  setenv("LOCKSTEP_CUDA_CONV_FFMA_MAX_OUT", "9216", 1);  // 144 x 64 outputs
  EXPECT_TRUE(cuda::conv_ffma_eligible(wide, wide.nodes[0], cuda::Precision::kFp32)) << "kernel 5 within the size opt-in";
  setenv("LOCKSTEP_CUDA_CONV_FFMA_MAX_OUT", "9215", 1);
  EXPECT_FALSE(cuda::conv_ffma_eligible(wide, wide.nodes[0], cuda::Precision::kFp32)) << "kernel 5 past the size opt-in";
  unsetenv("LOCKSTEP_CUDA_CONV_FFMA_MAX_OUT");
  setenv("LOCKSTEP_CUDA_CONV_TC_K1", "1", 1);
  EXPECT_FALSE(cuda::conv_ffma_eligible(g, g.nodes[0], cuda::Precision::kFp32)) << "the tensor-core 1x1 opt-in";
  unsetenv("LOCKSTEP_CUDA_CONV_TC_K1");
  std::vector<In> in{{random_tensor({1, 8, 64}, 1), true}, {random_tensor({4, 4, 1}, 2), false}};
  ir::Attributes grouped;
  grouped.set("group", int64_t{2});
  const ir::Graph gg = node_graph(Op::Conv, in, grouped);
  EXPECT_FALSE(cuda::conv_ffma_eligible(gg, gg.nodes[0], cuda::Precision::kFp32)) << "grouped";
  in = {{random_tensor({1, 8, 64}, 1), true}, {random_tensor({8, 8, 1}, 2), false}};
  ir::Attributes strided;
  strided.set("strides", std::vector<int64_t>{2});
  const ir::Graph sg = node_graph(Op::Conv, in, strided);
  EXPECT_FALSE(cuda::conv_ffma_eligible(sg, sg.nodes[0], cuda::Precision::kFp32)) << "stride 2";
  in = {{random_tensor({1, 8, 6, 64}, 1), true}, {random_tensor({8, 8, 1, 1}, 2), false}};
  const ir::Graph g2 = node_graph(Op::Conv, in, {});
  EXPECT_FALSE(cuda::conv_ffma_eligible(g2, g2.nodes[0], cuda::Precision::kFp32)) << "2-D";
  unsetenv("LOCKSTEP_CUDA_CONV_FFMA");
}

// Each case against float64, then the same bits on both tiles, with the epilogue run after
// (LOCKSTEP_CUDA_CONV_FFMA_FUSE=0), on a second run and in safe mode.
TEST(CudaConvFfma, MatchesReferenceAndGivesTheSameBitsOnEveryTile) {
  LOCKSTEP_REQUIRE_GPU();
  const Case one_by_one[] = {
      {{1, 192, 1024}, {384, 192, 1}, {0, 0}, 1, true, 0},  // flow res_skip
      {{1, 96, 1024}, {192, 96, 1}, {0, 0}, 1, true, 1},    // flow pre, times the mask
      {{1, 192, 1024}, {96, 192, 1}, {0, 0}, 1, true, 2},   // flow post-like, three steps
      {{2, 5, 37}, {7, 5, 1}, {0, 0}, 1, false, 0},         // odd T (4-byte copies), batch 2, no bias
      {{3, 13, 130}, {40, 13, 1}, {0, 0}, 1, true, 3},      // C_in 13, C_out 40, six steps (four fused)
      {{1, 8, 64}, {40, 8, 1}, {1, 2}, 1, true, 1},         // padded 1x1: copies start 3 floats in, T_out 67
  };
  const Case wider[] = {
      {{1, 72, 1024}, {144, 72, 5}, {2, 2}, 1, true, 0},      // flow in_layer (seed)
      {{1, 24, 1000}, {40, 24, 3}, {3, 3}, 3, true, 2},       // dilation 3: copies start 1 float in
      {{1, 16, 515}, {33, 16, 7}, {2, 4}, 1, false, 1},       // asymmetric pads, odd T
      {{2, 16, 300}, {32, 16, 7}, {15, 15}, 5, true, 0},      // k7 d5, batch 2
  };
  uint32_t seed = 900;
  auto check = [&](const Case& c) {
    std::vector<Tensor> inputs;
    const ir::Graph g = conv_graph(c, seed += 10, inputs);
    const std::string what = describe(c);
    ASSERT_TRUE(cuda::conv_ffma_eligible(g, g.nodes[0], cuda::Precision::kFp32)) << what;
    const Tensor got = run_with(g, inputs, "", "");
    const cpu_test::Diff d = cpu_test::diff(got, reference::evaluate(g, inputs)[0]);
    EXPECT_TRUE(d.finite) << what;
    EXPECT_LE(d.rel_l2, kFfmaRelL2) << what;
    std::printf("[cuda] %s: rel L2 %.3g vs float64\n", what.c_str(), d.rel_l2);
    EXPECT_TRUE(same_bits(got, run_with(g, inputs, "64", ""))) << what << ": tile 32x64 changed the bits";
    EXPECT_TRUE(same_bits(got, run_with(g, inputs, "32", ""))) << what << ": tile 32x32 changed the bits";
    EXPECT_TRUE(same_bits(got, run_with(g, inputs, "", "0"))) << what << ": the fused epilogue changed the bits";
    expect_cuda_matches_reference(g, inputs, c.w[1] * c.w[2], what);
  };
  for (const Case& c : one_by_one) check(c);
  setenv("LOCKSTEP_CUDA_CONV_FFMA", "all", 1);
  for (const Case& c : wider) check(c);
  unsetenv("LOCKSTEP_CUDA_CONV_FFMA");
}
#endif  // LOCKSTEP_HAVE_CUDA

}  // namespace
}  // namespace lockstep::gpu_test
