// The strict-fp32 tensor-core Conv (3xTF32, src/backends/cuda/conv_tc.h) against the float64
// reference interpreter: routing (which nodes take it), accuracy at a bar tighter than the generic
// GPU one, same bits on every run and in safe mode. Skips the device parts without a CUDA device.
#include <gtest/gtest.h>

// The tensor-core path's internals need the CUDA headers: a CPU-only build compiles this file empty.
#ifdef LOCKSTEP_HAVE_CUDA

#include "backends/cuda/conv_tc.h"
#include "backends/cuda/conv_tc_gate.h"
#include "backends/cuda/conv_tc_kernel.h"
#include "backends/cuda/conv_tc_split.h"
#include "backends/cuda/conv_wgmma.h"
#include "gpu/gpu_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <limits>
#include <vector>

namespace lockstep::gpu_test {
namespace {

using ir::Op;

// 3xTF32 with per-chunk IEEE flushes measured rel L2 1.4e-7..2.7e-7 for reductions up to
// K = C_in*k = 3584 (H200 probe, 2026-11-30); cuDNN FMA 3.5e-7..1.1e-6. One tensor-core
// accumulator over the whole reduction (what this bar catches) gave 2.5e-5 at K = 3584, plain TF32 3e-4.
constexpr double kTcRelL2 = 1e-6;

struct Case {
  int n, cin, cout, t, k, d, pb, pe;
  bool bias;
  const char* auto_pad;  // nullptr: explicit pads
};

ir::Graph conv_graph(const Case& c, uint32_t seed, std::vector<In>& in) {
  in = {{random_tensor({c.n, c.cin, c.t}, seed), true}, {random_tensor({c.cout, c.cin, c.k}, seed + 1), false}};
  if (c.bias) in.push_back({random_tensor({c.cout}, seed + 2), false});
  ir::Attributes a;
  a.set("dilations", std::vector<int64_t>{c.d});
  if (c.auto_pad) a.set("auto_pad", std::string(c.auto_pad));
  else a.set("pads", std::vector<int64_t>{c.pb, c.pe});
  return node_graph(Op::Conv, in, a);
}

std::string describe(const Case& c) {
  return "conv n" + std::to_string(c.n) + " c" + std::to_string(c.cin) + "->" + std::to_string(c.cout) + " T" +
         std::to_string(c.t) + " k" + std::to_string(c.k) + " d" + std::to_string(c.d);
}

// Compiles the conv of `c` (random data from `seed`) with `options`, checks that it took the
// tensor-core path, runs it twice (same bits) and returns its error against float64. With
// `generic`, also the generic GPU bars and safe mode's bits (expect_cuda_matches_reference).
cpu_test::Diff run_tc_case(const Case& c, uint32_t seed, const Options& options = {}, bool generic = false) {
  std::vector<In> in;
  ir::Graph g = conv_graph(c, seed, in);
  const int before = cuda::conv_tc_recorded_count();
  auto exe = cuda::backend().compile(g, options);
  EXPECT_EQ(cuda::conv_tc_recorded_count(), before + 1) << describe(c) << " did not take the tensor-core path";
  const std::vector<Tensor> inputs = runtime_inputs(in);
  const Tensor got = exe->run(inputs)[0];
  const cpu_test::Diff d = cpu_test::diff(got, reference::evaluate(g, inputs)[0]);
  EXPECT_TRUE(d.finite) << describe(c);
  EXPECT_TRUE(same_bits(got, exe->run(inputs)[0])) << describe(c) << ": a second run changed the bits";
  if (generic) expect_cuda_matches_reference(g, inputs, int64_t{c.cin} * c.k, describe(c));
  return d;
}

// HiFi-GAN's residual pattern on the conv of `c`: "+ residual" then LeakyRelu(0.1) as its epilogue,
// the residual a new graph input (appended to `inputs`, random with `seed`).
void add_residual_and_leaky(ir::Graph& g, std::vector<Tensor>& inputs, uint32_t seed) {
  const Shape out = g.value(g.nodes[0].outputs[0]).shape;  // the residual has the conv output's shape
  ir::Value zv;
  zv.name = "residual";
  zv.dtype = DType::Float32;
  zv.shape = out;
  const ir::ValueId z = g.add_value(std::move(zv));
  g.inputs.push_back(z);
  g.nodes[0].epilogue = {ir::EpilogueStep{Op::Add, z, true, 0.0f, "add_residual"},
                         ir::EpilogueStep{Op::LeakyRelu, ir::kNoValue, false, 0.1f, "leaky"}};
  inputs.push_back(random_tensor(out, seed));
}

// The conv with its residual + LeakyRelu epilogue: the fused store matches float64 and gives the
// bits of the separate epilogue kernel (LOCKSTEP_CUDA_CONV_TC_FUSE=0).
void expect_fused_epilogue_same_bits(const Case& c, uint32_t seed, const std::string& what) {
  std::vector<In> in;
  ir::Graph g = conv_graph(c, seed, in);
  std::vector<Tensor> inputs = runtime_inputs(in);
  add_residual_and_leaky(g, inputs, seed + 1);
  const Tensor fused = cuda::backend().compile(g, Options{})->run(inputs)[0];
  const cpu_test::Diff d = cpu_test::diff(fused, reference::evaluate(g, inputs)[0]);
  EXPECT_TRUE(d.finite) << what;
  EXPECT_LE(d.rel_l2, kTcRelL2) << what;
  std::printf("[conv_tc] %s %s + residual + LeakyRelu: rel L2 %.3g vs float64\n", what.c_str(), describe(c).c_str(), d.rel_l2);
  setenv("LOCKSTEP_CUDA_CONV_TC_FUSE", "0", 1);
  const Tensor separate = cuda::backend().compile(g, Options{})->run(inputs)[0];
  unsetenv("LOCKSTEP_CUDA_CONV_TC_FUSE");
  EXPECT_TRUE(same_bits(fused, separate)) << what << ": the fused epilogue changed the bits";
  if (!::testing::Test::HasFailure()) expect_cuda_matches_reference(g, inputs, int64_t{c.cin} * c.k, what + " + residual + LeakyRelu");
}

TEST(CudaConvTc, RoutesOnlyTheMeasuredShapes) {
  std::vector<In> in;
  const Case yes{1, 64, 64, 1024, 3, 1, 1, 1, true, nullptr};
  ir::Graph g = conv_graph(yes, 1, in);
  std::string why;
  EXPECT_TRUE(cuda::conv_tc_eligible(g, g.nodes[0], cuda::Precision::kFp32, &why)) << why;
  EXPECT_FALSE(cuda::conv_tc_eligible(g, g.nodes[0], cuda::Precision::kTf32));  // 64 channels: cuDNN's TF32
  EXPECT_FALSE(cuda::conv_tc_eligible(g, g.nodes[0], cuda::Precision::kFp16));
  // Any length: rows not 16-byte aligned load 4 bytes at a time.
  for (const Case& c : {Case{1, 64, 64, 1026, 3, 1, 1, 1, true, nullptr}, Case{1, 8, 16, 1023, 3, 1, 1, 1, true, nullptr}}) {
    ir::Graph h = conv_graph(c, 2, in);
    EXPECT_TRUE(cuda::conv_tc_eligible(h, h.nodes[0], cuda::Precision::kFp32, &why)) << describe(c) << ": " << why;
  }
  const Case no[] = {
      {1, 60, 64, 1024, 3, 1, 1, 1, true, nullptr},   // C_in % 8
      {1, 64, 64, 1024, 4, 1, 1, 2, true, nullptr},   // kernel 4
      {1, 64, 64, 1024, 1, 1, 0, 0, true, nullptr},   // kernel 1: opt-in only (mixed at model level)
  };
  for (const Case& c : no) {
    ir::Graph h = conv_graph(c, 2, in);
    EXPECT_FALSE(cuda::conv_tc_eligible(h, h.nodes[0], cuda::Precision::kFp32)) << describe(c);
  }
  // C < 32 is routed by default; LOCKSTEP_CUDA_CONV_TC_SMALL=0 restores the 32-channel floor.
  ir::Graph small = conv_graph({1, 8, 16, 1024, 3, 1, 1, 1, true, nullptr}, 5, in);
  EXPECT_TRUE(cuda::conv_tc_eligible(small, small.nodes[0], cuda::Precision::kFp32, &why)) << why;
  setenv("LOCKSTEP_CUDA_CONV_TC_SMALL", "0", 1);
  EXPECT_FALSE(cuda::conv_tc_eligible(small, small.nodes[0], cuda::Precision::kFp32));
  unsetenv("LOCKSTEP_CUDA_CONV_TC_SMALL");
  // Strides, groups and runtime weights stay on cuDNN.
  ir::Graph s = conv_graph(yes, 3, in);
  s.nodes[0].attrs.set("strides", std::vector<int64_t>{2});
  EXPECT_FALSE(cuda::conv_tc_eligible(s, s.nodes[0], cuda::Precision::kFp32));
  ir::Graph r = conv_graph(yes, 4, in);
  r.value(r.nodes[0].inputs[1]).constant = Tensor();
  EXPECT_FALSE(cuda::conv_tc_eligible(r, r.nodes[0], cuda::Precision::kFp32));
}

TEST(CudaConvTc, MatchesFloat64Reference) {
  LOCKSTEP_REQUIRE_GPU();
  const Case cases[] = {
      {1, 512, 64, 1024, 7, 1, 3, 3, true, nullptr},     // K = 3584: the accumulation-bias guard
      {2, 64, 96, 516, 3, 1, 1, 1, false, nullptr},      // batch 2, partial tiles in C_out and T
      {1, 32, 32, 2048, 11, 5, 25, 25, true, nullptr},   // HiFi-GAN k11 d5
      {1, 128, 40, 1200, 5, 2, 5, 1, true, nullptr},     // asymmetric pads: T_out != T_in
      {1, 48, 64, 1024, 7, 3, 0, 0, true, "SAME_UPPER"},
      {1, 192, 192, 1024, 5, 1, 2, 2, true, nullptr},    // flow WN layer
      {1, 32, 192, 16384, 3, 1, 1, 1, true, nullptr},    // a grid for the 64x128 tile
      {1, 32, 64, 16384, 5, 1, 2, 2, true, nullptr},     // 32x256 tile with C_out > 32
      {2, 64, 24, 2048, 3, 1, 1, 0, true, nullptr},      // odd T_out (2047): the epilogue's unpaired stores
      {1, 192, 192, 345, 5, 1, 2, 2, true, nullptr},     // T_in % 4 = 1 (a voice's flow at 345 frames): 4-byte loads
      {2, 64, 96, 518, 3, 1, 1, 1, false, nullptr},      // T_in % 4 = 2, batch 2: unaligned batch rows too
      {1, 8, 16, 1023, 7, 3, 9, 9, true, nullptr},       // T_in % 4 = 3, 8 channels, dilation 3
      // Short inputs (no step floor since 2026-12-04): a 1 s sentence's encoder and flows, a word, one step.
      {1, 192, 768, 87, 3, 1, 1, 1, true, nullptr},      // encoder FFN at 87 phonemes
      {1, 192, 384, 87, 5, 1, 2, 2, true, nullptr},      // flow WN layer at 87 frames
      {1, 768, 192, 5, 3, 1, 1, 1, true, nullptr},       // 5 phonemes
      {1, 192, 192, 1, 5, 1, 2, 2, true, nullptr},       // one step: every tap but the centre is padding
      {2, 64, 96, 3, 3, 1, 1, 1, false, nullptr},        // batch 2, 3 steps
  };
  // The block tiles these cases take on an H200 (132 SMs): all three kinds are covered.
  using cuda::tc::TileKind;
  EXPECT_EQ(cuda::tc::choose_tile(1, 64, 1024, 7, 132), TileKind::k64x64);
  EXPECT_EQ(cuda::tc::choose_tile(1, 32, 2048, 11, 132), TileKind::k32x256);
  EXPECT_EQ(cuda::tc::choose_tile(1, 192, 16384, 3, 132), TileKind::k64x128);
  EXPECT_EQ(cuda::tc::choose_tile(1, 64, 16384, 5, 132), TileKind::k32x256);
  uint32_t seed = 10;
  for (const Case& c : cases) {
    const cpu_test::Diff d = run_tc_case(c, seed += 10, Options{}, true);
    EXPECT_LE(d.rel_l2, kTcRelL2) << describe(c);
    std::printf("[conv_tc] %s: rel L2 %.3g vs float64\n", describe(c).c_str(), d.rel_l2);
  }
}

// HiFi-GAN's residual pattern: Conv + bias, then "+ x" and LeakyRelu fused as the node's epilogue.
// The kernel applies both in its store; that must give the bits of the separate epilogue kernel.
TEST(CudaConvTc, FusedResidualAndLeakyReluSameBitsAsEpilogueKernel) {
  LOCKSTEP_REQUIRE_GPU();
  expect_fused_epilogue_same_bits({1, 64, 64, 2048, 7, 3, 9, 9, true, nullptr}, 77, "mma.sync");
  // Odd T_out on an unsplit tile: the residual read and the stores one step at a time.
  expect_fused_epilogue_same_bits({1, 32, 32, 4096, 7, 3, 9, 8, true, nullptr}, 79, "mma.sync, odd T_out");
  // Every tile inside the output (the store without bounds tests), one and two row tiles; the
  // second with a partial last tile too (T_out 16380), where both stores run in one launch.
  expect_fused_epilogue_same_bits({1, 32, 32, 16384, 7, 3, 9, 9, true, nullptr}, 81, "mma.sync, whole 32x256 tiles");
  expect_fused_epilogue_same_bits({1, 64, 64, 32768, 5, 1, 2, 2, true, nullptr}, 83, "mma.sync, whole 32x256 tiles, two rows");
  expect_fused_epilogue_same_bits({1, 32, 32, 16380, 3, 1, 1, 1, true, nullptr}, 85, "mma.sync, whole tiles and a partial one");
}

// An infinite activation: the float64 reference gives +-inf (sign of the tap's weight) at every
// output it reaches and NaN where a NaN input reaches; the small products (lo = inf - inf, al*inf
// of either sign) must not turn that inf into NaN. Other outputs stay at the accuracy bar.
TEST(CudaConvTc, InfiniteAndNanActivationsMatchFloat64Reference) {
  LOCKSTEP_REQUIRE_GPU();
  const Case c{1, 64, 64, 1024, 7, 1, 3, 3, true, nullptr};
  std::vector<In> in;
  ir::Graph g = conv_graph(c, 91, in);
  auto exe = cuda::backend().compile(g, Options{});
  std::vector<Tensor> inputs = runtime_inputs(in);
  Tensor x = inputs[0].clone();
  float* xp = x.data<float>();
  // Far apart (> k taps) so no output sees two of them: +inf, -inf, NaN.
  xp[3 * 1024 + 100] = std::numeric_limits<float>::infinity();
  xp[40 * 1024 + 500] = -std::numeric_limits<float>::infinity();
  xp[9 * 1024 + 900] = std::numeric_limits<float>::quiet_NaN();
  inputs[0] = x;
  const Tensor got = exe->run(inputs)[0];
  const Tensor want = reference::evaluate(g, inputs)[0];
  int64_t infs = 0, nans = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.element_as_double(i), v = got.element_as_double(i);
    if (std::isinf(w)) {
      ++infs;
      EXPECT_EQ(v, w) << "output " << i << ": float64 gives " << w;
    } else if (std::isnan(w)) {
      ++nans;
      EXPECT_TRUE(std::isnan(v)) << "output " << i << ": float64 gives NaN, got " << v;
    }
  }
  EXPECT_EQ(infs, 2 * 64 * c.k);  // every output channel, k outputs per infinite input
  EXPECT_EQ(nans, 64 * c.k);
  const cpu_test::Diff d = cpu_test::diff(got, want);
  EXPECT_TRUE(d.finite);
  EXPECT_LE(d.rel_l2, kTcRelL2);
  std::printf("[conv_tc] %s with +inf, -inf, NaN inputs: %lld inf and %lld NaN outputs as float64, rel L2 %.3g elsewhere\n",
              describe(c).c_str(), static_cast<long long>(infs), static_cast<long long>(nans), d.rel_l2);
}

// Activations past fp16's range (the small products' fp16 halves overflow): the block runs again
// with TF32 small products and matches float64 at the usual bar — one unsplit and one split conv,
// each with a few inputs scaled to 1e5..1e7 (finite in float32), twice with the same bits.
TEST(CudaConvTc, ActivationsPastFp16RangeMatchFloat64Reference) {
  LOCKSTEP_REQUIRE_GPU();
  const Case cases[] = {{1, 64, 64, 1024, 7, 1, 3, 3, true, nullptr}, {1, 192, 384, 1024, 5, 1, 2, 2, true, nullptr}};
  for (const Case& c : cases) {
    std::vector<In> in;
    ir::Graph g = conv_graph(c, 97, in);
    auto exe = cuda::backend().compile(g, Options{});
    std::vector<Tensor> inputs = runtime_inputs(in);
    Tensor x = inputs[0].clone();
    float* xp = x.data<float>();
    for (int i = 0; i < 12; ++i) xp[(i * 5 % c.cin) * c.t + 37 + 83 * i] *= i % 2 ? -1e7f : 1e5f;
    inputs[0] = x;
    const Tensor got = exe->run(inputs)[0];
    const cpu_test::Diff d = cpu_test::diff(got, reference::evaluate(g, inputs)[0]);
    EXPECT_TRUE(d.finite) << describe(c);
    EXPECT_LE(d.rel_l2, kTcRelL2) << describe(c);
    EXPECT_TRUE(same_bits(got, exe->run(inputs)[0])) << describe(c) << ": a second run changed the bits";
    std::printf("[conv_tc] %s with inputs up to 1e7: rel L2 %.3g vs float64\n", describe(c).c_str(), d.rel_l2);
  }
}

// Weights of 2^15 and more would overflow the fp16 halves of the small products: cuDNN takes them.
TEST(CudaConvTc, WeightsPastFp16RangeStayOnCudnn) {
  std::vector<In> in;
  ir::Graph g = conv_graph({1, 64, 64, 1024, 3, 1, 1, 1, true, nullptr}, 95, in);
  Tensor w = g.value(g.nodes[0].inputs[1]).constant.clone();
  w.data<float>()[5] = -32768.0f;
  g.value(g.nodes[0].inputs[1]).constant = w;
  std::string why;
  EXPECT_FALSE(cuda::conv_tc_eligible(g, g.nodes[0], cuda::Precision::kFp32, &why));
  EXPECT_EQ(why, "a weight of magnitude 2^15 or more");
  // New storage: the check is remembered per constant's storage (constants are never written in place).
  Tensor w2 = w.clone();
  w2.data<float>()[5] = 32767.0f;
  g.value(g.nodes[0].inputs[1]).constant = w2;
  EXPECT_TRUE(cuda::conv_tc_eligible(g, g.nodes[0], cuda::Precision::kFp32, &why)) << why;
  // Asked again about the same storages: the same answers.
  g.value(g.nodes[0].inputs[1]).constant = w;
  EXPECT_FALSE(cuda::conv_tc_eligible(g, g.nodes[0], cuda::Precision::kFp32));
  g.value(g.nodes[0].inputs[1]).constant = w2;
  EXPECT_TRUE(cuda::conv_tc_eligible(g, g.nodes[0], cuda::Precision::kFp32));
}

TEST(CudaConvTc, NonFiniteWeightsStayOnCudnn) {
  std::vector<In> in;
  ir::Graph g = conv_graph({1, 64, 64, 1024, 3, 1, 1, 1, true, nullptr}, 93, in);
  Tensor w = g.value(g.nodes[0].inputs[1]).constant.clone();
  w.data<float>()[17] = std::numeric_limits<float>::infinity();
  g.value(g.nodes[0].inputs[1]).constant = w;
  std::string why;
  EXPECT_FALSE(cuda::conv_tc_eligible(g, g.nodes[0], cuda::Precision::kFp32, &why));
  EXPECT_EQ(why, "non-finite weights");
}

// Kernel size 1 (opt-in: the flow's 1x1 convs) and C < 32 (the decoder's last stages and
// conv_post), same accuracy bar and same bits on a second run. conv_post-style convs (C_out <= 4)
// take the direct kernel by default (ops_test's NarrowOutputConvsRunDirect); switched off here.
TEST(CudaConvTc, Kernel1AndSmallChannelsMatchFloat64Reference) {
  LOCKSTEP_REQUIRE_GPU();
  const Case cases[] = {
      {1, 96, 192, 1024, 1, 1, 0, 0, true, nullptr},      // flow pre 1x1
      {1, 192, 96, 1024, 1, 1, 0, 0, false, nullptr},     // flow post 1x1
      {1, 8, 8, 65536, 7, 3, 9, 9, true, nullptr},        // seed decoder's 8-channel resblock
      {1, 16, 16, 32768, 11, 5, 25, 25, true, nullptr},   // 16-channel, k11 d5
      {2, 8, 1, 8192, 7, 1, 3, 3, true, nullptr},         // conv_post 8 -> 1, batch 2
  };
  setenv("LOCKSTEP_CUDA_CONV_TC_K1", "1", 1);
  setenv("LOCKSTEP_CUDA_CONV_NARROW", "0", 1);
  uint32_t seed = 300;
  for (const Case& c : cases) {
    const cpu_test::Diff d = run_tc_case(c, seed += 10);
    EXPECT_LE(d.rel_l2, kTcRelL2) << describe(c);
    std::printf("[conv_tc] k1/small %s -> %d: rel L2 %.3g vs float64\n", describe(c).c_str(), c.cout, d.rel_l2);
  }
  unsetenv("LOCKSTEP_CUDA_CONV_NARROW");
  unsetenv("LOCKSTEP_CUDA_CONV_TC_K1");
}

// Split reductions (grids that would leave SMs idle: the flows' convs, short inputs): each chunk
// range's sums merge in split order in a second kernel. Same bar, same bits run to run, bias and
// fused epilogue steps applied once, after the merge.
TEST(CudaConvTc, SplitReductionsMatchFloat64Reference) {
  LOCKSTEP_REQUIRE_GPU();
  struct SplitCase {
    Case c;
    int splits;  // what choose_splits gives (a function of the shape alone)
  };
  using cuda::tc::TileKind;
  const SplitCase cases[] = {
      {{1, 192, 384, 1024, 5, 1, 2, 2, true, nullptr}, 4},   // flow in_layer at 1024 frames
      {{1, 192, 384, 128, 5, 1, 2, 2, true, nullptr}, 8},    // the same at 128 frames
      {{2, 96, 192, 132, 3, 2, 2, 2, false, nullptr}, 2},    // batch 2, partial tiles, dilation 2
      {{1, 192, 384, 128, 1, 1, 0, 0, true, nullptr}, 2},    // flow res_skip 1x1 (kernel 1 opt-in)
      {{1, 512, 64, 256, 7, 1, 3, 3, true, nullptr}, 8},     // K = 3584 over eight ranges
      {{1, 192, 384, 131, 5, 1, 2, 2, true, nullptr}, 8},    // flow in_layer at 131 frames (T_in % 4 = 3)
  };
  setenv("LOCKSTEP_CUDA_CONV_TC_K1", "1", 1);
  uint32_t seed = 500;
  for (const SplitCase& sc : cases) {
    const Case& c = sc.c;
    const TileKind tile = cuda::tc::choose_tile(c.n, c.cout, c.t, c.k, 132);
    EXPECT_EQ(cuda::tc::choose_splits(c.n, c.cin, c.cout, c.t, c.k, tile), sc.splits) << describe(c);
    const cpu_test::Diff d = run_tc_case(c, seed += 10);
    EXPECT_LE(d.rel_l2, kTcRelL2) << describe(c);
    setenv("LOCKSTEP_CUDA_CONV_TC_SPLIT", "0", 1);
    const cpu_test::Diff du = run_tc_case(c, seed);  // the same data in one range
    unsetenv("LOCKSTEP_CUDA_CONV_TC_SPLIT");
    EXPECT_LE(du.rel_l2, kTcRelL2) << describe(c) << " unsplit";
    std::printf("[conv_tc] %s in %d ranges: rel L2 %.3g vs float64 (unsplit %.3g)\n", describe(c).c_str(), sc.splits,
                d.rel_l2, du.rel_l2);
  }
  unsetenv("LOCKSTEP_CUDA_CONV_TC_K1");
  // Bias, the residual Add and LeakyRelu once after the merge: the bits of the separate epilogue.
  const Case c{1, 128, 128, 512, 7, 3, 9, 9, true, nullptr};
  ASSERT_GT(cuda::tc::choose_splits(c.n, c.cin, c.cout, c.t, c.k, cuda::tc::choose_tile(c.n, c.cout, c.t, c.k, 132)), 1);
  expect_fused_epilogue_same_bits(c, 601, "split");
}

// The Hopper variant (wgmma, conv_wgmma.h), forced on every case (splitting off, so the small
// grids take it too): same bar as the mma.sync kernel, same bits on a second run, the fused
// residual + LeakyRelu store gives the separate epilogue's bits.
TEST(CudaConvTc, WgmmaMatchesFloat64Reference) {
  LOCKSTEP_REQUIRE_GPU();
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  if (!cuda::wg::compiled_for_sm90a() || major != 9 || minor != 0)
    GTEST_SKIP() << "the wgmma kernel needs an sm_90a build and a compute capability 9.0 device";
  setenv("LOCKSTEP_CUDA_CONV_WGMMA", "1", 1);
  setenv("LOCKSTEP_CUDA_CONV_TC_SPLIT", "0", 1);
  const Case cases[] = {
      {1, 512, 64, 1024, 7, 1, 3, 3, true, nullptr},     // K = 3584
      {2, 64, 96, 516, 3, 1, 1, 1, false, nullptr},      // batch 2, partial tiles in C_out and T
      {1, 32, 32, 2048, 11, 5, 25, 25, true, nullptr},   // HiFi-GAN k11 d5
      {1, 128, 40, 1200, 5, 2, 5, 1, true, nullptr},     // asymmetric pads: T_out != T_in
      {1, 48, 64, 1024, 7, 3, 0, 0, true, "SAME_UPPER"},
      {1, 192, 384, 1024, 5, 1, 2, 2, true, nullptr},    // flow WN layer
      {1, 128, 128, 8192, 3, 1, 1, 1, true, nullptr},    // decoder stage
      {1, 8, 8, 4096, 7, 3, 9, 9, true, nullptr},        // 8 channels
      {1, 192, 384, 1023, 5, 1, 2, 2, true, nullptr},    // T_in % 4 = 3: 4-byte loads
      {2, 64, 96, 517, 3, 1, 1, 1, false, nullptr},      // T_in % 4 = 1, batch 2
  };
  uint32_t seed = 700;
  for (const Case& c : cases) {
    const cpu_test::Diff d = run_tc_case(c, seed += 10);
    EXPECT_LE(d.rel_l2, kTcRelL2) << describe(c);
    std::printf("[conv_tc] wgmma %s: rel L2 %.3g vs float64\n", describe(c).c_str(), d.rel_l2);
  }
  expect_fused_epilogue_same_bits({1, 64, 64, 2048, 7, 3, 9, 9, true, nullptr}, 801, "wgmma");
  unsetenv("LOCKSTEP_CUDA_CONV_TC_SPLIT");
  unsetenv("LOCKSTEP_CUDA_CONV_WGMMA");
}

// --precision tf32 takes the same kernel with the weights rounded to TF32: about TF32's error
// (plain TF32 measured 2.9e-4 at K = 3584), visibly not strict fp32, same bits run to run.
TEST(CudaConvTc, Tf32ModeRoundsTheWeightsToTf32) {
  LOCKSTEP_REQUIRE_GPU();
  constexpr double kPlainTf32RelL2 = 2e-3, kNotStrict = 1e-5;
  const Case cases[] = {
      {1, 512, 64, 1024, 7, 1, 3, 3, true, nullptr},
      {1, 192, 384, 1024, 5, 1, 2, 2, true, nullptr},   // split reduction
      {1, 32, 32, 16384, 11, 5, 25, 25, true, nullptr},
  };
  Options tf32;
  tf32.precision = "tf32";
  setenv("LOCKSTEP_CUDA_CONV_TC_TF32", "1", 1);  // every shape here (by default only <= 16 channels)
  uint32_t seed = 900;
  for (const Case& c : cases) {
    const cpu_test::Diff d = run_tc_case(c, seed += 10, tf32);
    EXPECT_LE(d.rel_l2, kPlainTf32RelL2) << describe(c);
    EXPECT_GE(d.rel_l2, kNotStrict) << describe(c) << ": tf32 mode was not in effect";
    std::printf("[conv_tc] tf32 mode %s: rel L2 %.3g vs float64\n", describe(c).c_str(), d.rel_l2);
  }
  unsetenv("LOCKSTEP_CUDA_CONV_TC_TF32");
  std::vector<In> in;
  const ir::Graph small = conv_graph({1, 16, 8, 8192, 7, 3, 9, 9, true, nullptr}, 950, in);
  EXPECT_TRUE(cuda::conv_tc_eligible(small, small.nodes[0], cuda::Precision::kTf32)) << "16 channels: this kernel by default";
}

// ConvTranspose (the HiFi-GAN upsamplers) as one conv of its stride phases (opt-in): rows
// co*s + phase, taps reversed every s, stored interleaved and cropped by the pads. Same bar.
TEST(CudaConvTc, ConvTransposeAsPhasesMatchesFloat64Reference) {
  LOCKSTEP_REQUIRE_GPU();
  struct TCase {
    int n, cin, cout, t, k, s, pb, pe;
    bool bias;
  };
  const TCase cases[] = {
      {1, 64, 32, 256, 16, 8, 4, 4, true},     // ups 0/1: k16 s8
      {1, 32, 16, 1024, 4, 2, 1, 1, true},     // ups 2/3: k4 s2
      {2, 128, 64, 512, 8, 4, 2, 2, false},    // low's ups 2: k8 s4, batch 2
      {1, 16, 8, 132, 6, 2, 0, 3, true},       // three taps per phase, asymmetric crop
      {1, 64, 32, 8192, 8, 4, 2, 2, true},     // 128 phase rows on a grid past the SMs: the 32x256 tile
      {1, 64, 32, 131, 16, 8, 4, 4, true},     // ups 0 at 131 frames: T_in % 4 = 3
  };
  std::vector<In> in0 = {{random_tensor({1, 64, 256}, 999), true}, {random_tensor({64, 32, 16}, 998), false}};
  ir::Attributes a0;
  a0.set("strides", std::vector<int64_t>{8});
  a0.set("pads", std::vector<int64_t>{4, 4});
  const ir::Graph g0 = node_graph(Op::ConvTranspose, in0, a0);
  EXPECT_FALSE(cuda::conv_tc_eligible(g0, g0.nodes[0], cuda::Precision::kFp32)) << "2048 output steps: the GEMM path";
  // From 65536 output steps by default (the upsamplers at 1024 frames); LOCKSTEP_CUDA_CONVT_TC=0 turns it off.
  std::vector<In> in_long = {{random_tensor({1, 64, 8192}, 997), true}, {random_tensor({64, 32, 16}, 998), false}};
  const ir::Graph g_long = node_graph(Op::ConvTranspose, in_long, a0);
  std::string why_long;
  EXPECT_TRUE(cuda::conv_tc_eligible(g_long, g_long.nodes[0], cuda::Precision::kFp32, &why_long)) << why_long;
  EXPECT_FALSE(cuda::conv_tc_eligible(g_long, g_long.nodes[0], cuda::Precision::kTf32)) << "tf32 keeps the TF32 GEMM";
  setenv("LOCKSTEP_CUDA_CONVT_TC", "0", 1);
  EXPECT_FALSE(cuda::conv_tc_eligible(g_long, g_long.nodes[0], cuda::Precision::kFp32));
  setenv("LOCKSTEP_CUDA_CONVT_TC", "1", 1);  // every size, for the cases below
  uint32_t seed = 1000;
  for (const TCase& c : cases) {
    std::vector<In> in = {{random_tensor({c.n, c.cin, c.t}, seed += 10), true},
                          {random_tensor({c.cin, c.cout, c.k}, seed + 1, DType::Float32, -0.2f, 0.2f), false}};
    if (c.bias) in.push_back({random_tensor({c.cout}, seed + 2), false});
    ir::Attributes a;
    a.set("strides", std::vector<int64_t>{c.s});
    a.set("pads", std::vector<int64_t>{c.pb, c.pe});
    ir::Graph g = node_graph(Op::ConvTranspose, in, a);
    const std::string what = "conv_transpose n" + std::to_string(c.n) + " c" + std::to_string(c.cin) + "->" + std::to_string(c.cout) +
                             " T" + std::to_string(c.t) + " k" + std::to_string(c.k) + " s" + std::to_string(c.s);
    std::string why;
    ASSERT_TRUE(cuda::conv_tc_eligible(g, g.nodes[0], cuda::Precision::kFp32, &why)) << what << ": " << why;
    const int before = cuda::conv_tc_recorded_count();
    auto exe = cuda::backend().compile(g, Options{});
    EXPECT_EQ(cuda::conv_tc_recorded_count(), before + 1) << what;
    const std::vector<Tensor> inputs = runtime_inputs(in);
    const Tensor got = exe->run(inputs)[0];
    const cpu_test::Diff d = cpu_test::diff(got, reference::evaluate(g, inputs)[0]);
    EXPECT_TRUE(d.finite) << what;
    EXPECT_LE(d.rel_l2, kTcRelL2) << what;
    EXPECT_TRUE(same_bits(got, exe->run(inputs)[0])) << what;
    std::printf("[conv_tc] %s: rel L2 %.3g vs float64\n", what.c_str(), d.rel_l2);
    expect_cuda_matches_reference(g, inputs, int64_t{c.cin} * c.k / c.s, what);
  }
  // A kernel that is no multiple of the stride: the GEMM path.
  std::vector<In> in = {{random_tensor({1, 16, 64}, 1100), true}, {random_tensor({16, 8, 5}, 1101), false}};
  ir::Attributes a;
  a.set("strides", std::vector<int64_t>{2});
  const ir::Graph g5 = node_graph(Op::ConvTranspose, in, a);
  EXPECT_FALSE(cuda::conv_tc_eligible(g5, g5.nodes[0], cuda::Precision::kFp32));
  unsetenv("LOCKSTEP_CUDA_CONVT_TC");
}

// The split's rounding (host weights; the device's cvt.rn.tf32 on sm_90, whose edge cases the
// probe prints) against an independent oracle: the float rounded to 11 significant bits in double
// arithmetic with ties to even. Host-only: runs without a GPU.
TEST(CudaConvTcHost, Tf32RoundingIsNearestEven) {
  auto oracle = [](float v) {
    const int e = std::max(std::ilogb(v), -126);     // TF32 keeps float32's exponent range
    const double q = std::ldexp(1.0, e - 10);        // the spacing of 11-bit significands there
    return static_cast<float>(std::nearbyint(static_cast<double>(v) / q) * q);  // FE_TONEAREST: ties to even
  };
  auto bits = [](float v) { uint32_t b; std::memcpy(&b, &v, 4); return b; };
  auto from = [](uint32_t b) { float v; std::memcpy(&v, &b, 4); return v; };
  std::vector<uint32_t> cases = {0x3f801000u, 0x3f803000u, 0xbf801000u, 0xbf803000u, 0x3f800fffu, 0x3f801001u,
                                 0x00001000u, 0x00003000u, 0x00800000u, 0x7f7fefffu, 0x7f7ff000u, 0x80000000u, 0u};
  uint32_t state = 12345u;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    cases.push_back((state & 0x7f7fffffu) | ((i & 1) ? 0x80000000u : 0u));  // finite, both signs
    cases.push_back((state & 0xffffe000u & 0x7f7fffffu) | 0x1000u);          // exact ties
  }
  for (uint32_t b : cases) {
    if ((b & 0x7f800000u) == 0x7f800000u) continue;
    const float v = from(b);
    ASSERT_EQ(cuda::tc::tf32_rn_bits(b), bits(oracle(v))) << std::hex << "bits 0x" << b;
  }
  EXPECT_EQ(cuda::tc::tf32_rn_bits(0x7f800000u), 0x7f800000u);
  EXPECT_EQ(cuda::tc::tf32_rn_bits(0xff800000u), 0xff800000u);
  EXPECT_TRUE(std::isnan(from(cuda::tc::tf32_rn_bits(0x7fffffffu))));
  EXPECT_TRUE(std::isnan(from(cuda::tc::tf32_rn_bits(0x7f800001u))));
  float h, l;
  cuda::tc::split_tf32_host(1.0f + 0x1p-11f, h, l);  // a tie: hi to even (1.0), lo the rest exactly
  EXPECT_EQ(h, 1.0f);
  EXPECT_EQ(l, 0x1p-11f);
}

// The host weight split's layout, no GPU needed: per (co, ci, k) the TF32 hi at split_index, and in
// its lane's pair slots the fp16 of hi (rows g / g+8: slots 0 / 1) and of lo*2^11 (slots 2 / 3),
// channel q in the low half and q + 4 in the high half. fp16 and TF32 both keep 11 significant
// bits, so (for normal fp16 values) the packed lo is exactly split_tf32_host's lo times 2^11.
TEST(CudaConvTcHost, WeightSplitPacksHiAndScaledLoAsFp16Pairs) {
  const int cout = 20, cin = 16, ks = 3;
  std::vector<float> w(static_cast<size_t>(cout) * cin * ks);
  uint32_t state = 777u;
  for (float& v : w) {  // magnitudes 2^-6 .. 2^6, both signs, all 23 mantissa bits in play
    state = state * 1664525u + 1013904223u;
    v = std::ldexp(1.0f + static_cast<float>(state >> 9) * 0x1p-23f, static_cast<int>(state % 13) - 6) * ((state >> 8) & 1 ? -1.0f : 1.0f);
  }
  std::vector<float> out(cuda::tc::split_weight_floats(cin, cout, ks), 0.0f);
  cuda::tc::split_weights_host(w.data(), cout, cin, ks, out.data());
  auto fp16_at = [&](size_t slot, bool high) {
    uint32_t bits;
    std::memcpy(&bits, &out[slot], 4);
    __half_raw raw;
    raw.x = static_cast<unsigned short>(high ? bits >> 16 : bits & 0xffffu);
    return __half2float(__half(raw));
  };
  const size_t half = static_cast<size_t>(ks) * 128;
  for (int co = 0; co < 32; ++co)  // rows 20..31: the zero padding of the second 16-row block
    for (int ci = 0; ci < cin; ++ci)
      for (int k = 0; k < ks; ++k) {
        const size_t i = cuda::tc::split_index(co, ci, k, cin, ks), lane0 = i - i % 4;
        const bool lower_row = co % 16 >= 8, high = ci % 8 >= 4;
        float h = 0.0f, l = 0.0f;
        if (co < cout) cuda::tc::split_tf32_host(w[(static_cast<size_t>(co) * cin + ci) * ks + k], h, l);
        ASSERT_EQ(out[i], h) << "hi of co " << co << " ci " << ci << " k " << k;
        ASSERT_EQ(fp16_at(lane0 + half + (lower_row ? 1 : 0), high), h) << "fp16 hi of co " << co << " ci " << ci << " k " << k;
        ASSERT_EQ(fp16_at(lane0 + half + (lower_row ? 3 : 2), high), l * 2048.0f) << "fp16 lo of co " << co << " ci " << ci << " k " << k;
      }
}

// The device split (conv_tc_split.cu, what record_conv_tc uses) gives the host split's bytes in
// both layouts: random weights over 2^-30..2^14, ties, subnormals, -0, rows past a 16/64 block.
TEST(CudaConvTc, DeviceWeightSplitGivesTheHostSplitsBytes) {
  LOCKSTEP_REQUIRE_GPU();
  struct Shape3 { int cout, cin, ks; };
  for (const Shape3 sh : {Shape3{20, 16, 3}, Shape3{192, 192, 5}, Shape3{72, 24, 7}, Shape3{8, 8, 11}})
    for (const bool hopper : {false, true}) {
      const int cout = sh.cout, cin = sh.cin, ks = sh.ks;
      std::vector<float> w(static_cast<size_t>(cout) * cin * ks);
      uint32_t state = 4242u + static_cast<uint32_t>(cout);
      for (float& v : w) {
        state = state * 1664525u + 1013904223u;
        v = std::ldexp(1.0f + static_cast<float>(state >> 9) * 0x1p-23f, static_cast<int>(state % 45) - 30) * ((state >> 8) & 1 ? -1.0f : 1.0f);
      }
      w[0] = 1.0f + 0x1p-11f;  // a tie: hi rounds to even
      w[1] = -0.0f;
      w[2] = 0x1p-140f;  // subnormal
      w[3] = 32767.0f;   // the largest magnitude the kernel takes
      const size_t floats = hopper ? cuda::wg::weight_floats(cin, cout, ks) : cuda::tc::split_weight_floats(cin, cout, ks);
      std::vector<float> host(floats, 0.0f), device(floats, 1.0f);
      if (hopper) cuda::wg::split_weights_host(w.data(), cout, cin, ks, host.data());
      else cuda::tc::split_weights_host(w.data(), cout, cin, ks, host.data());
      const auto split = cuda::split_weights_on_device(w, cout, cin, ks, hopper, "test");
      ASSERT_EQ(cudaMemcpy(device.data(), split->ptr, floats * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t i = 0; i < floats; ++i) {
        uint32_t a, b;
        std::memcpy(&a, &host[i], 4);
        std::memcpy(&b, &device[i], 4);
        ASSERT_EQ(a, b) << (hopper ? "wgmma" : "mma.sync") << " layout, " << cout << "x" << cin << "x" << ks << ", word " << i;
      }
    }
}

// The tile rule for the ConvTranspose phases (kernel 2): the 32x256 tile on grids past the SMs,
// where kernel 3 keeps 64x128. Host-only: the rule is a function of the shape and the SM count.
TEST(CudaConvTcHost, ConvTransposePhasesTakeThe32x256Tile) {
  EXPECT_EQ(cuda::tc::choose_tile(1, 128, 8193, 2, 132), cuda::tc::TileKind::k32x256) << "phases of 128 rows";
  EXPECT_EQ(cuda::tc::choose_tile(1, 128, 8193, 3, 132), cuda::tc::TileKind::k64x128) << "kernel 3 keeps 64x128";
}

// The cluster kernel's weight rows (conv_tc_gate.h): each 64-row tile holds gate channels
// 32j..32j+31 of both halves, the a half in rows 0..31 and the b half in rows 32..63 at the same
// offset; every real row appears once; rows past the gate's channels are zero.
TEST(CudaConvTcHost, GateClusterWeightsPairBothHalvesInOneTile) {
  constexpr int cin = 8, ks = 3;
  for (const int len : {64, 72, 192})
    for (const bool a_first : {true, false}) {
      cuda::GateParams gp;
      gp.len = len;
      gp.a = a_first ? 0 : len;
      gp.b = a_first ? len : 0;
      std::vector<float> w(static_cast<size_t>(2 * len) * cin * ks);
      for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i / (cin * ks) + 1);  // 1 + the real row
      const std::vector<float> out = cuda::gate_cluster_weights(w, gp, cin, ks);
      const int rows = cuda::gate_cluster_cout(len);
      ASSERT_EQ(out.size(), static_cast<size_t>(rows) * cin * ks);
      EXPECT_EQ(rows % 64, 0);
      std::vector<int> seen(static_cast<size_t>(2 * len), 0);
      for (int r = 0; r < rows; ++r) {
        const int tile = r / 64, i = r % 64, channel = 32 * tile + i % 32;
        const float first = out[static_cast<size_t>(r) * cin * ks];
        for (int k = 0; k < cin * ks; ++k) ASSERT_EQ(out[static_cast<size_t>(r) * cin * ks + k], first) << "row " << r << " mixes rows";
        if (channel >= len) {
          EXPECT_EQ(first, 0.0f) << "len " << len << " padding row " << r;
          continue;
        }
        const int real = static_cast<int>(first) - 1;
        EXPECT_EQ(real, (i < 32 ? gp.a : gp.b) + channel) << "len " << len << " row " << r;
        if (real >= 0 && real < 2 * len) ++seen[static_cast<size_t>(real)];
      }
      for (int r = 0; r < 2 * len; ++r) EXPECT_EQ(seen[static_cast<size_t>(r)], 1) << "len " << len << " real row " << r;
    }
}

}  // namespace
}  // namespace lockstep::gpu_test

#endif  // LOCKSTEP_HAVE_CUDA
