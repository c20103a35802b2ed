// The cuda kernels the Piper voices brought (issue 22) against the float64 reference, with the
// cpu tests' cases (tests/backends/cpu/logical_math_test.cpp, reduce_indexing_test.cpp): the
// comparisons and logical ops, the unary float math (also as epilogue steps), Clip, integer
// programs, reductions, CumSum, the indexing ops (bad indices an error naming the node), and
// the random ops bit for bit equal to the cpu's and the reference's. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/random.h"
#include "gpu/gpu_test_util.h"
#include "passes/graph_builder.h"

namespace lockstep::gpu_test {
namespace {

using cpu_test::expect_outputs_match;
using ir::Op;

// The cpu tests' named bounds: CUDA's erff is within 2 ulp, below fast_erf's bound.
constexpr double kErfMaxAbs = 5e-7;
constexpr double kSoftplusRel = cpu_test::kCpuRelL2;  // per element, relative
constexpr double kExact = 0;

Tensor floats(std::vector<float> v) { return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v); }
Tensor ints(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }

Tensor quarters(Shape s, uint32_t seed) {
  Tensor t = random_tensor(std::move(s), seed, DType::Float32, -2, 2);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i] * 4) / 4;
  return t;
}

std::vector<Tensor> run_cuda(const ir::Graph& g, const std::vector<Tensor>& inputs, uint64_t seed = 0, bool safe = false) {
  Options o;
  o.safe = safe;
  RunOptions r;
  r.seed = seed;
  return cuda::backend().compile(g, o)->run(inputs, r);
}

// Every element equal to the reference's (NaN where it is NaN); in graph replay and in safe mode.
void expect_same_values(const ir::Graph& g, const std::vector<Tensor>& inputs, const std::string& what, double tol = kExact) {
  const auto want = reference::evaluate(g, inputs);
  for (bool safe : {false, true}) {
    const auto got = run_cuda(g, inputs, 0, safe);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t o = 0; o < got.size(); ++o) {
      ASSERT_EQ(shape_str(got[o].shape()), shape_str(want[o].shape())) << what;
      if (!is_floating(want[o].dtype())) ASSERT_EQ(got[o].dtype(), want[o].dtype()) << what;
      for (int64_t i = 0; i < want[o].numel(); ++i) {
        const double g1 = got[o].element_as_double(i), w = want[o].element_as_double(i);
        if (std::isnan(w)) EXPECT_TRUE(std::isnan(g1)) << what << " [" << i << "]";
        else if (tol == kExact) ASSERT_EQ(g1, w) << what << " [" << i << "]" << (safe ? " (safe)" : "");
        else EXPECT_NEAR(g1, w, tol) << what << " [" << i << "]";
      }
    }
  }
}

const std::vector<std::pair<Shape, Shape>> kBroadcastShapes = {
    {{3, 17}, {3, 17}}, {{2, 3, 17}, {17}}, {{3, 1}, {1, 5}}, {{2, 3, 5}, {}}, {{4, 1, 3}, {1, 6, 1}}, {{1}, {2, 7}}};

TEST(CudaLogical, ComparisonsOnFloatInt32Int64WithBroadcasting) {
  LOCKSTEP_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Int64, DType::Int32})
    for (Op op : {Op::Less, Op::LessOrEqual, Op::Greater, Op::GreaterOrEqual, Op::Equal})
      for (size_t s = 0; s < kBroadcastShapes.size(); ++s) {
        auto [sa, sb] = kBroadcastShapes[s];
        Tensor a = dt == DType::Float32 ? quarters(sa, 1 + s) : random_tensor(sa, 1 + s, dt);
        Tensor b = dt == DType::Float32 ? quarters(sb, 11 + s) : random_tensor(sb, 11 + s, dt);
        std::vector<In> in{{a, true}, {b, s % 2 == 0}};
        expect_same_values(node_graph(op, in), runtime_inputs(in),
                           std::string(ir::op_name(op)) + " " + dtype_name(dt) + " " + shape_str(sa) + shape_str(sb));
      }
}

TEST(CudaLogical, FloatEdgeValuesAndInt64BeyondDoublePrecision) {
  LOCKSTEP_REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<In> in{{floats({nan, 1, -0.0f, -inf, inf, 2.5f, nan}), true}, {floats({1, nan, 0.0f, -inf, 3, 2.5f, nan}), true}};
  for (Op op : {Op::Less, Op::LessOrEqual, Op::Greater, Op::GreaterOrEqual, Op::Equal})
    expect_same_values(node_graph(op, in), runtime_inputs(in), std::string(ir::op_name(op)) + " edge floats");
  const int64_t big = int64_t{1} << 53;
  std::vector<In> ii{{Tensor::from_vector<int64_t>({3}, {big + 1, big, -big - 1}), true},
                     {Tensor::from_vector<int64_t>({3}, {big, big + 1, -big}), true}};
  for (Op op : {Op::Less, Op::Greater, Op::Equal}) {
    auto got = run_cuda(node_graph(op, ii), runtime_inputs(ii));
    const bool want[3][3] = {{false, true, true}, {true, false, false}, {false, false, false}};
    const int k = op == Op::Less ? 0 : op == Op::Greater ? 1 : 2;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(got[0].data<bool>()[i], want[k][i]) << ir::op_name(op) << " " << i;
  }
}

TEST(CudaLogical, AndOrXorNotEqualOnBool) {
  LOCKSTEP_REQUIRE_GPU();
  for (Op op : {Op::And, Op::Or, Op::Xor, Op::Equal})
    for (size_t s = 0; s < kBroadcastShapes.size(); ++s) {
      auto [sa, sb] = kBroadcastShapes[s];
      std::vector<In> in{{random_tensor(sa, 21 + s, DType::Bool), true}, {random_tensor(sb, 31 + s, DType::Bool), s % 3 != 1}};
      expect_same_values(node_graph(op, in), runtime_inputs(in), std::string(ir::op_name(op)) + " " + shape_str(sa) + shape_str(sb));
    }
  std::vector<In> in{{random_tensor({3, 5, 7}, 41, DType::Bool), true}};
  expect_same_values(node_graph(Op::Not, in), runtime_inputs(in), "Not");
}

TEST(CudaMath, ErfAgainstTheReferenceWithEdgeValues) {
  LOCKSTEP_REQUIRE_GPU();
  for (auto [lo, hi, seed] : {std::tuple{-6.0f, 6.0f, 3u}, std::tuple{-1e-3f, 1e-3f, 4u}}) {
    std::vector<In> in{{random_tensor({4, 1000}, seed, DType::Float32, lo, hi), true}};
    ir::Graph g = node_graph(Op::Erf, in);
    expect_outputs_match(run_cuda(g, runtime_inputs(in)), reference::evaluate(g, runtime_inputs(in)), 1, "Erf",
                         kGpuRelL2, kErfMaxAbs);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<In> edge{{floats({0.0f, -0.0f, 10, -10, 1e30f, -1e30f, inf, -inf, nan}), true}};
  const Tensor y = run_cuda(node_graph(Op::Erf, edge), runtime_inputs(edge))[0];
  const float* v = y.data<float>();
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_TRUE(std::signbit(v[1]) && v[1] == 0.0f);
  EXPECT_EQ(v[2], 1.0f);
  EXPECT_EQ(v[3], -1.0f);
  EXPECT_EQ(v[4], 1.0f);
  EXPECT_EQ(v[5], -1.0f);
  EXPECT_EQ(v[6], 1.0f);
  EXPECT_EQ(v[7], -1.0f);
  EXPECT_TRUE(std::isnan(v[8]));
}

TEST(CudaMath, SoftplusIsStableForLargeMagnitudes) {
  LOCKSTEP_REQUIRE_GPU();
  std::vector<In> in{{random_tensor({3, 777}, 5, DType::Float32, -30, 30), true}};
  expect_cuda_matches_reference(node_graph(Op::Softplus, in), runtime_inputs(in), 1, "Softplus [-30, 30]");
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<In> edge{{floats({100, -100, 88, -88, 87, -87, 20, -20, 0, 1e30f, -1e30f, inf, -inf}), true}};
  ir::Graph g = node_graph(Op::Softplus, edge);
  const Tensor got = run_cuda(g, runtime_inputs(edge))[0];
  const Tensor want = reference::evaluate(g, runtime_inputs(edge))[0];
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.element_as_double(i), y = got.element_as_double(i);
    if (std::isinf(w)) EXPECT_EQ(y, w) << i;
    else if (w < std::numeric_limits<float>::min()) EXPECT_NEAR(y, w, 1e-44) << i;  // float32 subnormals
    else EXPECT_NEAR(y, w, kSoftplusRel * w) << i;
  }
  std::vector<In> n{{floats({std::numeric_limits<float>::quiet_NaN()}), true}};
  EXPECT_TRUE(std::isnan(run_cuda(node_graph(Op::Softplus, n), runtime_inputs(n))[0].data<float>()[0]));
}

TEST(CudaMath, CeilFloorAbsExactReciprocalWithinRounding) {
  LOCKSTEP_REQUIRE_GPU();
  std::vector<float> v = {-3, 0, -0.0f, 2, 1e7f, 16777216.0f, 0.5f, -0.5f, 4194304.5f, 1e20f, -1.5f};
  for (float k : {1.0f, 2.0f, -2.0f, 100.0f, 1024.0f, -7.0f}) {
    v.push_back(std::nextafter(k, std::numeric_limits<float>::infinity()));
    v.push_back(std::nextafter(k, -std::numeric_limits<float>::infinity()));
  }
  v.push_back(std::numeric_limits<float>::quiet_NaN());
  v.push_back(std::numeric_limits<float>::infinity());
  std::vector<In> in{{floats(v), true}};
  for (Op op : {Op::Ceil, Op::Floor, Op::Abs}) expect_same_values(node_graph(op, in), runtime_inputs(in), ir::op_name(op));
  const Tensor got = run_cuda(node_graph(Op::Ceil, in), runtime_inputs(in))[0];
  EXPECT_EQ(got.data<float>()[11], 2.0f);
  EXPECT_EQ(got.data<float>()[13], 3.0f);  // a float32 ulp above 2 rounds up (Piper's durations)
  std::vector<In> r{{random_tensor({5, 61}, 6, DType::Float32, -8, 8), true}};
  for (Op op : {Op::Ceil, Op::Floor, Op::Abs}) expect_same_values(node_graph(op, r), runtime_inputs(r), ir::op_name(op));
  expect_cuda_matches_reference(node_graph(Op::Reciprocal, r), runtime_inputs(r), 1, "Reciprocal");
}

// As fused epilogue steps: of a Conv (the conv paths' own stores) and of a Div (the voice's GELU).
TEST(CudaMath, FloatMathRunsAsEpilogueSteps) {
  LOCKSTEP_REQUIRE_GPU();
  std::vector<In> in{{random_tensor({1, 4, 33}, 10), true}, {random_tensor({6, 4, 3}, 11), false}};
  ir::Graph g = node_graph(Op::Conv, in, attrs({{"pads", std::vector<int64_t>{1, 1}}}));
  g.nodes[0].epilogue = {{Op::Erf, ir::kNoValue, false, 0, "erf"},
                         {Op::Softplus, ir::kNoValue, false, 0, "softplus"},
                         {Op::Reciprocal, ir::kNoValue, false, 0, "reciprocal"},
                         {Op::Abs, ir::kNoValue, false, 0, "abs"}};
  expect_cuda_matches_reference(g, runtime_inputs(in), 12, "Conv + Erf, Softplus, Reciprocal, Abs");
  g.nodes[0].epilogue = {{Op::Floor, ir::kNoValue, false, 0, "floor"}, {Op::Ceil, ir::kNoValue, false, 0, "ceil"}};
  expect_same_values(g, runtime_inputs(in), "Conv + Floor, Ceil");
  std::vector<In> d{{random_tensor({1, 48, 31}, 12, DType::Float32, -4, 4), true}, {Tensor::scalar<float>(1.4142135f), false}};
  ir::Graph gd = node_graph(Op::Div, d);
  gd.nodes[0].epilogue = {{Op::Erf, ir::kNoValue, false, 0, "erf"}};
  expect_outputs_match(run_cuda(gd, runtime_inputs(d)), reference::evaluate(gd, runtime_inputs(d)), 1, "Div + Erf", kGpuRelL2,
                       kErfMaxAbs);
}

TEST(CudaMath, IntegerAbsNegReluAndArithmeticAtRunTime) {
  LOCKSTEP_REQUIRE_GPU();
  for (DType dt : {DType::Int64, DType::Int32}) {
    for (Op op : {Op::Abs, Op::Neg, Op::Relu}) {
      std::vector<In> in{{random_tensor({4, 9}, 7, dt), true}};
      expect_same_values(node_graph(op, in), runtime_inputs(in), std::string(ir::op_name(op)) + " " + dtype_name(dt));
    }
    Tensor divisor = random_tensor({9}, 9, dt);
    for (int64_t i = 0; i < divisor.numel(); ++i)  // integer division by zero is an error of the reference
      if (divisor.element_as_int(i) == 0) dt == DType::Int64 ? void(divisor.data<int64_t>()[i] = 3) : void(divisor.data<int32_t>()[i] = -3);
    for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div}) {
      std::vector<In> in{{random_tensor({4, 9}, 8, dt), true}, {divisor, true}};
      expect_same_values(node_graph(op, in), runtime_inputs(in), std::string(ir::op_name(op)) + " " + dtype_name(dt));
    }
  }
}

TEST(CudaClip, ConstantRuntimeAndOmittedBounds) {
  LOCKSTEP_REQUIRE_GPU();
  std::vector<float> xs = {-3, -1, -0.5f, 0, 0.5f, 1, 3, std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  Tensor x = floats(xs), lo = Tensor::scalar<float>(-1), hi = Tensor::scalar<float>(0.75f);
  for (bool runtime : {false, true}) {
    std::vector<In> both{{x, true}, {lo, runtime}, {hi, runtime}};
    expect_same_values(node_graph(Op::Clip, both), runtime_inputs(both), "Clip min max");
    std::vector<In> only_max{{x, true}, {Tensor{}, false}, {hi, runtime}};
    expect_same_values(node_graph(Op::Clip, only_max), runtime_inputs(only_max), "Clip max");
    std::vector<In> only_min{{x, true}, {lo, runtime}};
    expect_same_values(node_graph(Op::Clip, only_min), runtime_inputs(only_min), "Clip min");
    std::vector<In> crossed{{x, true}, {hi, runtime}, {lo, runtime}};
    expect_same_values(node_graph(Op::Clip, crossed), runtime_inputs(crossed), "Clip min > max");
  }
  std::vector<In> none{{x, true}};
  expect_same_values(node_graph(Op::Clip, none), runtime_inputs(none), "Clip no bounds");
  for (DType dt : {DType::Int64, DType::Int32}) {
    std::vector<In> in{{random_tensor({3, 11}, 8, dt), true}, {Tensor::scalar<int64_t>(-2).to(dt), true},
                       {Tensor::scalar<int64_t>(1).to(dt), false}};
    expect_same_values(node_graph(Op::Clip, in), runtime_inputs(in), std::string("Clip ") + dtype_name(dt));
  }
  std::vector<In> big{{random_tensor({2, 70000}, 9, DType::Float32, -3, 3), true}, {lo, false}, {hi, true}};
  expect_same_values(node_graph(Op::Clip, big), runtime_inputs(big), "Clip large");
}

// The cpu test's masks and durations from run-time int64 inputs, through the compile pipeline.
TEST(CudaRuntimeIntegers, MasksAndDurationsFromRuntimeInt64Inputs) {
  LOCKSTEP_REQUIRE_GPU();
  testing::GraphBuilder b;
  auto lengths = b.input("lengths", {2, 1}, DType::Int64);
  auto t = b.input("t", {1, 7}, DType::Int64);
  auto w = b.input("w", {2, 7}, DType::Float32);
  auto one = b.constant("one", Tensor::scalar<int64_t>(1));
  auto two = b.constant("two", Tensor::scalar<int64_t>(2));
  auto less = b.node(Op::Less, "less", {t, lengths}, {2, 7}, DType::Bool);
  auto eq = b.node(Op::Equal, "eq", {t, b.node(Op::Sub, "last", {lengths, one}, {2, 1}, DType::Int64)}, {2, 7}, DType::Bool);
  auto inner = b.node(Op::And, "inner", {less, b.node(Op::Not, "not_last", {eq}, {2, 7}, DType::Bool)}, {2, 7}, DType::Bool);
  auto idx = b.node(Op::Where, "idx", {less, b.node(Op::Mul, "t2", {t, two}, {1, 7}, DType::Int64),
                                       b.node(Op::Add, "neg1", {b.node(Op::Neg, "mone", {one}, {}, DType::Int64),
                                                                b.constant("zero", Tensor::scalar<int64_t>(0))}, {}, DType::Int64)},
                    {2, 7}, DType::Int64);
  auto half = b.node(Op::Div, "half", {idx, two}, {2, 7}, DType::Int64);
  auto mask = b.node(Op::Cast, "mask", {less}, {2, 7}, DType::Float32, attrs({{"to", int64_t{1}}}));
  auto dur = b.node(Op::Ceil, "ceil", {b.node(Op::Mul, "wm", {w, mask}, {2, 7})}, {2, 7});
  auto clipped = b.node(Op::Clip, "clip", {dur, b.constant("min1", Tensor::scalar<float>(1.0f))}, {2, 7});
  auto dur_i = b.node(Op::Cast, "dur_i", {clipped}, {2, 7}, DType::Int64, attrs({{"to", int64_t{7}}}));
  auto total = b.node(Op::ReduceSum, "total", {dur_i, b.constant("ax", ints({1}))}, {2}, DType::Int64, attrs({{"keepdims", int64_t{0}}}));
  auto ends = b.node(Op::CumSum, "ends", {dur_i, b.constant("ax1", Tensor::scalar<int64_t>(1))}, {2, 7}, DType::Int64);
  for (auto v : {less, eq, inner, idx, half, mask, dur_i, total, ends}) b.output(v);
  ir::Graph g = b.graph();
  Tensor len = Tensor::from_vector<int64_t>({2, 1}, {5, 3});
  Tensor ts = Tensor::from_vector<int64_t>({1, 7}, {0, 1, 2, 3, 4, 5, 6});
  Tensor ws = random_tensor({2, 7}, 12, DType::Float32, -1, 4);
  ws.data<float>()[0] = std::nextafter(2.0f, 3.0f);  // a float32 ulp above 2: ceil 3
  std::vector<Tensor> inputs{len, ts, ws};
  expect_same_values(g, inputs, "runtime int64 masks");
  auto got = lockstep::compile(Model::from_graph(g), "cuda")->run(inputs);
  expect_outputs_match(got, reference::evaluate(g, inputs), 1, "pipeline runtime int64", kGpuRelL2, kGpuAbsPerTerm);
  EXPECT_EQ(got[6].data<int64_t>()[0], 3);
}

TEST(CudaReduce, EveryOpAxesAndKeepdimsMatchTheReference) {
  LOCKSTEP_REQUIRE_GPU();
  const Shape x{3, 5, 7};
  const std::vector<std::vector<int64_t>> axes_cases = {{-1}, {0}, {1}, {0, 2}, {2, 0, 1}, {}};
  uint32_t seed = 0;
  for (Op op : {Op::ReduceMean, Op::ReduceSum, Op::ReduceMax, Op::ReduceMin})
    for (const auto& axes : axes_cases)
      for (int64_t keep : {0, 1}) {
        std::vector<In> in{{random_tensor(x, ++seed, DType::Float32, -3, 3), true}, {ints(axes), false}};
        expect_cuda_matches_reference(node_graph(op, in, attrs({{"keepdims", keep}})), runtime_inputs(in), 1,
                                      std::string(ir::op_name(op)) + " axes " + shape_str(axes) + " keep " + std::to_string(keep));
      }
  for (Op op : {Op::ReduceSum, Op::ReduceMax, Op::ReduceMean, Op::ReduceMin})
    for (DType dt : {DType::Int64, DType::Int32}) {
      std::vector<In> in{{random_tensor({4, 6}, 7, dt), true}, {ints({1}), false}};
      expect_same_values(node_graph(op, in), runtime_inputs(in), std::string(ir::op_name(op)) + " " + dtype_name(dt));
    }
  for (Op op : {Op::ReduceSum, Op::ReduceMax, Op::ReduceMean}) {
    std::vector<In> all{{random_tensor({4, 6}, 8), true}};
    expect_cuda_matches_reference(node_graph(op, all, attrs({{"keepdims", int64_t{0}}})), runtime_inputs(all), 1, "all");
    std::vector<In> noop{{random_tensor({4, 6}, 9), true}, {ints({}), false}};
    expect_cuda_matches_reference(node_graph(op, noop, attrs({{"noop_with_empty_axes", int64_t{1}}})), runtime_inputs(noop), 1, "noop");
  }
  // NaN wins Max/Min, as on the cpu.
  std::vector<In> nan{{floats({1, std::numeric_limits<float>::quiet_NaN(), 3}), true}};
  for (Op op : {Op::ReduceMax, Op::ReduceMin}) expect_same_values(node_graph(op, nan), runtime_inputs(nan), "NaN");
}

// Long reductions (the block-tree path): one rounding's accuracy, the same bits run after run and
// compile after compile.
TEST(CudaReduce, LongSumsAreAccurateAndDeterministic) {
  LOCKSTEP_REQUIRE_GPU();
  std::vector<In> in{{random_tensor({3, 70001}, 11, DType::Float32, 0, 1), true}};
  for (Op op : {Op::ReduceSum, Op::ReduceMean, Op::ReduceMax, Op::ReduceMin})
    for (bool all : {false, true}) {
      std::vector<In> args = in;
      if (!all) args.push_back({ints({-1}), false});
      ir::Graph g = node_graph(op, args, attrs({{"keepdims", int64_t{0}}}));
      const auto inputs = runtime_inputs(args);
      auto exe = cuda::backend().compile(g, Options{});
      const auto a = exe->run(inputs);
      const auto b = exe->run(inputs);
      const auto c = run_cuda(g, inputs);
      expect_outputs_match(a, reference::evaluate(g, inputs), 1, ir::op_name(op), kGpuRelL2, 1e-7);
      EXPECT_TRUE(same_bits(a[0], b[0]) && same_bits(a[0], c[0])) << ir::op_name(op) << ": bits differ between runs";
    }
}

// Short reductions over contiguous rows (a layer norm's means) on the tiled kernel (the default;
// set to 1 here explicitly) give the serial kernel's bits (LOCKSTEP_CUDA_REDUCE_ROWS=0): row
// counts above and below a tile, the longest short row (4096), one row, integers.
TEST(CudaReduce, ContiguousRowsGiveTheSerialKernelsBits) {
  LOCKSTEP_REQUIRE_GPU();
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
    DType dtype;
  };
  const Case cases[] = {{{129, 192}, {-1}, DType::Float32},  {{1, 129, 192}, {2}, DType::Float32},
                        {{3, 4096}, {1}, DType::Float32},    {{1000, 7}, {-1}, DType::Float32},
                        {{77}, {0}, DType::Float32},         {{2, 3, 33}, {2}, DType::Float32},
                        {{40, 6}, {1}, DType::Int64},        {{40, 6}, {1}, DType::Int32}};
  uint32_t seed = 40;
  for (const Case& c : cases)
    for (Op op : {Op::ReduceMean, Op::ReduceSum, Op::ReduceMax, Op::ReduceMin}) {
      const std::string what = std::string(ir::op_name(op)) + " " + shape_str(c.shape) + " " + dtype_name(c.dtype);
      std::vector<In> in{{random_tensor(c.shape, ++seed, c.dtype, -3, 3), true}, {ints(c.axes), false}};
      const ir::Graph g = node_graph(op, in, attrs({{"keepdims", int64_t{0}}}));
      const auto inputs = runtime_inputs(in);
      setenv("LOCKSTEP_CUDA_REDUCE_ROWS", "1", 1);
      const auto tiled = run_cuda(g, inputs);
      setenv("LOCKSTEP_CUDA_REDUCE_ROWS", "0", 1);
      const auto serial = run_cuda(g, inputs);
      unsetenv("LOCKSTEP_CUDA_REDUCE_ROWS");
      EXPECT_TRUE(same_bits(tiled[0], serial[0])) << what;
      expect_outputs_match(tiled, reference::evaluate(g, inputs), 1, what, kGpuRelL2, 1e-6);
    }
}

TEST(CudaCumSum, FloatAndIntegerExclusiveReverse) {
  LOCKSTEP_REQUIRE_GPU();
  for (int64_t axis : {0, 1, -1})
    for (int64_t excl : {0, 1})
      for (int64_t rev : {0, 1}) {
        ir::Attributes a = attrs({{"exclusive", excl}, {"reverse", rev}});
        std::vector<In> in{{random_tensor({4, 9, 300}, 3), true}, {ints({axis}), false}};
        ir::Graph g = node_graph(Op::CumSum, in, a);
        expect_cuda_matches_reference(g, runtime_inputs(in), 1, "cumsum");
        // In order in double, as the cpu: the same bits.
        EXPECT_TRUE(same_bits(run_cuda(g, runtime_inputs(in))[0], cpu::backend().compile(g, Options{})->run(runtime_inputs(in))[0]));
        std::vector<In> iin{{random_tensor({5, 6}, 4, DType::Int64), true}, {ints({axis == -1 ? 1 : axis}), false}};
        expect_same_values(node_graph(Op::CumSum, iin, a), runtime_inputs(iin), "cumsum int64");
        std::vector<In> i32{{random_tensor({5, 6}, 5, DType::Int32), true}, {Tensor::from_vector<int32_t>({}, {0}), false}};
        expect_same_values(node_graph(Op::CumSum, i32, a), runtime_inputs(i32), "cumsum int32");
      }
}

TEST(CudaIndexing, GatherNdScatterNdGatherElementsMatchTheReference) {
  LOCKSTEP_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Int64, DType::Int32, DType::Bool}) {
    const std::string what = dtype_name(dt);
    Tensor data = random_tensor({2, 3, 4}, 21, dt);
    std::vector<In> g1{{data, true}, {i64({2, 3}, {0, 2, 3, -1, -3, 0}), true}};
    expect_same_values(node_graph(Op::GatherND, g1), runtime_inputs(g1), "GatherND " + what);
    std::vector<In> g2{{data, true}, {i64({3, 1}, {1, 0, -1}), true}};
    expect_same_values(node_graph(Op::GatherND, g2), runtime_inputs(g2), "GatherND slices " + what);
    std::vector<In> g3{{data, true}, {i64({2, 2, 1}, {2, 0, 1, 1}), true}};
    expect_same_values(node_graph(Op::GatherND, g3, attrs({{"batch_dims", int64_t{1}}})), runtime_inputs(g3),
                       "GatherND batch_dims " + what);
    std::vector<In> s1{{data, true}, {i64({2, 2}, {1, 2, 0, -1}), true}, {random_tensor({2, 4}, 22, dt), true}};
    expect_same_values(node_graph(Op::ScatterND, s1), runtime_inputs(s1), "ScatterND " + what);
    // A repeated index: the later update wins, as the reference.
    std::vector<In> s2{{data, true}, {i64({3, 3}, {0, 0, 0, 1, 2, 3, 0, 0, 0}), true}, {random_tensor({3}, 23, dt), true}};
    expect_same_values(node_graph(Op::ScatterND, s2), runtime_inputs(s2), "ScatterND repeated " + what);
    if (dt != DType::Bool)
      for (const char* how : {"add", "mul", "max", "min"}) {
        // The reference combines a repeated index in double, cuda and cpu in float32 in index order.
        ir::Graph gs = node_graph(Op::ScatterND, s2, attrs({{"reduction", std::string(how)}}));
        expect_same_values(gs, runtime_inputs(s2), std::string("ScatterND ") + how + " " + what, dt == DType::Float32 ? 1e-6 : kExact);
        EXPECT_TRUE(same_bits(run_cuda(gs, runtime_inputs(s2))[0], cpu::backend().compile(gs, Options{})->run(runtime_inputs(s2))[0]))
            << "ScatterND " << how << " " << what << ": cuda and cpu bits";
      }
    for (int64_t axis : {0, 1, -1}) {
      std::vector<int64_t> idx(2 * 2 * 3);
      const int64_t dim = data.shape()[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i * 7 % (2 * dim)) - dim;
      std::vector<In> e{{data, true}, {i64({2, 2, 3}, idx), true}};
      expect_same_values(node_graph(Op::GatherElements, e, attrs({{"axis", axis}})), runtime_inputs(e), "GatherElements " + what);
    }
    std::vector<In> e32{{data, true}, {Tensor::from_vector<int32_t>({1, 3, 2}, {0, 1, 2, 3, -1, -4}), true}};
    expect_same_values(node_graph(Op::GatherElements, e32, attrs({{"axis", int64_t{2}}})), runtime_inputs(e32),
                       "GatherElements int32 " + what);
  }
  // Many tuples with repeats into few rows (the slice-lane kernel walks them in order).
  Tensor data = random_tensor({5, 64}, 31);
  std::vector<int64_t> rows(3000);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>((i * 37) % 5);
  std::vector<In> many{{data, true}, {i64({3000, 1}, rows), true}, {random_tensor({3000, 64}, 32), true}};
  expect_same_values(node_graph(Op::ScatterND, many), runtime_inputs(many), "ScatterND 3000 tuples");
  ir::Graph add = node_graph(Op::ScatterND, many, attrs({{"reduction", std::string("add")}}));
  expect_same_values(add, runtime_inputs(many), "ScatterND add 3000 tuples", 1e-4);
  // float32 sums in index order, as the cpu: the same bits.
  EXPECT_TRUE(same_bits(run_cuda(add, runtime_inputs(many))[0], cpu::backend().compile(add, Options{})->run(runtime_inputs(many))[0]));
  // The spline flows' shape: element tuples [k, 2] into [600, 11], negative indices, 9000 tuples over
  // 6600 cells so that many repeat (no reduction: the parallel claim path, the last tuple wins).
  Tensor cells = random_tensor({600, 11}, 41);
  std::vector<int64_t> at(2 * 9000);
  for (size_t i = 0; i < 9000; ++i) {
    at[2 * i] = static_cast<int64_t>((i * 7919) % 600) - (i % 3 == 0 ? 600 : 0);
    at[2 * i + 1] = static_cast<int64_t>((i * 31) % 11);
  }
  std::vector<In> flow{{cells, true}, {i64({9000, 2}, at), true}, {random_tensor({9000}, 42), true}};
  expect_same_values(node_graph(Op::ScatterND, flow), runtime_inputs(flow), "ScatterND 9000 element tuples, repeated");
  ir::Graph fg = node_graph(Op::ScatterND, flow);
  EXPECT_TRUE(same_bits(run_cuda(fg, runtime_inputs(flow))[0], cpu::backend().compile(fg, Options{})->run(runtime_inputs(flow))[0]));
}

// A bad index at run time: the cpu's error (InvalidArgument naming the node, the op and the
// index), in graph replay and in safe mode, and again on the next run; no crash, no wild write.
TEST(CudaIndexing, OutOfRangeIndexIsAnErrorNamingTheNode) {
  LOCKSTEP_REQUIRE_GPU();
  Tensor data = random_tensor({2, 3}, 1);
  struct Case {
    Op op;
    std::vector<In> in;
    ir::Attributes a;
    std::string index;
  };
  std::vector<Case> cases;
  cases.push_back({Op::GatherND, {{data, true}, {i64({2, 2}, {0, 1, 1, 3}), true}}, {}, "3"});
  cases.push_back({Op::GatherND, {{data, true}, {i64({1, 1}, {-3}), true}}, {}, "-3"});
  cases.push_back({Op::ScatterND, {{data, true}, {i64({1, 1}, {2}), true}, {random_tensor({1, 3}, 2), true}}, {}, "2"});
  cases.push_back({Op::GatherElements, {{data, true}, {i64({2, 1}, {0, 9}), true}}, attrs({{"axis", int64_t{1}}}), "9"});
  cases.push_back({Op::GatherElements, {{data, true}, {i64({1, 3}, {0, -1, -3}), true}}, {}, "-3"});
  for (const auto& c : cases)
    for (bool safe : {false, true}) {
      ir::Graph g = node_graph(c.op, c.in, c.a);
      Options o;
      o.safe = safe;
      auto exe = cuda::backend().compile(g, o);
      const std::string name = std::string(ir::op_name(c.op)) + "_0";
      std::string cpu_message;
      try {
        cpu::backend().compile(g, Options{})->run(runtime_inputs(c.in));
      } catch (const Error& e) {
        cpu_message = e.what();
      }
      for (int run = 0; run < 2; ++run) {
        try {
          exe->run(runtime_inputs(c.in));
          ADD_FAILURE() << name << ": no error for index " << c.index;
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
          EXPECT_EQ(e.node(), name);
          EXPECT_EQ(e.op(), ir::op_name(c.op));
          EXPECT_EQ(std::string(e.what()), cpu_message) << "the cpu's message";
          EXPECT_NE(std::string(e.what()).find("index " + c.index + " "), std::string::npos) << e.what();
        }
      }
    }
  // The executable still runs good indices after a failed run.
  std::vector<In> ok{{data, true}, {i64({1, 2}, {1, 2}), true}};
  expect_same_values(node_graph(Op::GatherND, ok), runtime_inputs(ok), "GatherND after errors");
}

// Random values: drawn on the device, the cpu's and the reference's bits.
void expect_bitwise(const Tensor& cuda_out, const Tensor& cpu_out, const std::string& what) {
  ASSERT_EQ(cuda_out.nbytes(), cpu_out.nbytes()) << what;
  int64_t differ = 0, first = -1;
  for (int64_t i = 0; i < cuda_out.numel(); ++i)
    if (std::memcmp(cuda_out.data<float>() + i, cpu_out.data<float>() + i, 4) != 0) {
      if (first < 0) first = i;
      ++differ;
    }
  EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << cuda_out.numel() << " elements differ, first at " << first;
}

TEST(CudaRandom, MillionsOfElementsBitIdenticalToCpuAndReference) {
  LOCKSTEP_REQUIRE_GPU();
  const Shape shape{4, 1 << 20};  // 4,194,304 elements
  for (Op op : {Op::RandomNormal, Op::RandomUniform}) {
    ir::Attributes a = op == Op::RandomNormal ? attrs({{"mean", 0.5f}, {"scale", 0.667f}}) : attrs({{"low", -2.0f}, {"high", 3.0f}});
    a.set("shape", std::vector<int64_t>(shape.begin(), shape.end()));
    ir::Graph g = node_graph(op, {}, a);
    auto exe = cuda::backend().compile(g, Options{});
    RunOptions r7, r8;
    r7.seed = 7;
    r8.seed = 8;
    const Tensor c7 = exe->run({}, r7)[0].clone();
    const Tensor c8 = exe->run({}, r8)[0].clone();  // the captured graph reads each run's seed
    const Tensor c7b = exe->run({}, r7)[0];
    Options one;
    one.threads = 2;
    const Tensor p7 = cpu::backend().compile(g, one)->run({}, r7)[0];
    expect_bitwise(c7, p7, std::string(ir::op_name(op)) + " seed 7 cuda vs cpu");
    EXPECT_TRUE(same_bits(c7, c7b)) << "seed 7 twice";
    EXPECT_FALSE(same_bits(c7, c8)) << "seed 8 repeated seed 7";
    expect_bitwise(c8, cpu::backend().compile(g, one)->run({}, r8)[0], std::string(ir::op_name(op)) + " seed 8 cuda vs cpu");
    // Statistics: mean within 5 standard errors, std within 0.5 %; uniform inside (low, high).
    const double n = static_cast<double>(c7.numel());
    double sum = 0, sq = 0, lo = 1e9, hi = -1e9;
    int64_t within1 = 0;
    for (int64_t i = 0; i < c7.numel(); ++i) {
      const double v = c7.data<float>()[i];
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const double mean = sum / n;
    for (int64_t i = 0; i < c7.numel(); ++i) {
      const double v = c7.data<float>()[i];
      sq += (v - mean) * (v - mean);
      within1 += std::fabs(v - 0.5) <= 0.667;
    }
    const double sd = std::sqrt(sq / n);
    if (op == Op::RandomNormal) {
      EXPECT_NEAR(mean, 0.5, 5 * 0.667 / std::sqrt(n));
      EXPECT_NEAR(sd, 0.667, 0.005 * 0.667);
      EXPECT_NEAR(within1 / n, 0.6826895, 0.002);  // P(|z| <= 1)
      EXPECT_GT(hi, 0.5 + 4.5 * 0.667);
      EXPECT_LT(lo, 0.5 - 4.5 * 0.667);
    } else {
      EXPECT_NEAR(mean, 0.5, 5 * (5.0 / std::sqrt(12.0)) / std::sqrt(n));
      EXPECT_NEAR(sd, 5.0 / std::sqrt(12.0), 0.005);
      EXPECT_GT(lo, -2.0);
      EXPECT_LT(hi, 3.0);
    }
    std::cout << "[   NOTE   ] " << ir::op_name(op) << " " << c7.numel() << " elements: cuda = cpu bitwise, mean " << mean
              << ", std " << sd << "\n";
  }
  // Like ops, an odd count (not a multiple of the Philox block), the reference's values.
  for (Op op : {Op::RandomNormalLike, Op::RandomUniformLike}) {
    std::vector<In> in{{random_tensor({3, 40001}, 1), true}};
    ir::Graph g = node_graph(op, in);
    const auto inputs = runtime_inputs(in);
    const Tensor got = run_cuda(g, inputs, 1234)[0];
    const Tensor ref = reference::evaluate(g, inputs, {}, 1234)[0];
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_EQ(static_cast<double>(got.data<float>()[i]), ref.data<double>()[i]) << ir::op_name(op) << " element " << i;
    EXPECT_TRUE(same_bits(got, run_cuda(g, inputs, 1234, true)[0])) << "safe mode";
  }
}

TEST(CudaRandom, SeedAttributeOverridesTheRunSeed) {
  LOCKSTEP_REQUIRE_GPU();
  ir::Graph g = node_graph(Op::RandomNormal, {}, attrs({{"shape", std::vector<int64_t>{1001}}, {"seed", 3.0f}}));
  const Tensor a = run_cuda(g, {}, 1)[0], b = run_cuda(g, {}, 2)[0];
  EXPECT_TRUE(same_bits(a, b));
  ir::Graph plain = node_graph(Op::RandomNormal, {}, attrs({{"shape", std::vector<int64_t>{1001}}}));
  EXPECT_TRUE(same_bits(a, run_cuda(plain, {}, 3)[0])) << "seed attribute 3 = run seed 3";
  std::vector<float> want(1001);
  random::fill_normal(want.data(), 0, 1001, random::stream_key(3, "RandomNormal_0"), 0.0, 1.0);
  EXPECT_EQ(std::memcmp(want.data(), a.raw(), a.nbytes()), 0);
}

// Through the pipeline: a RandomNormalLike of a constant is not folded, and a seeded run is the cpu's.
TEST(CudaRandom, NotFoldedAndSeededThroughCompile) {
  LOCKSTEP_REQUIRE_GPU();
  Model model = Model::from_graph(node_graph(Op::RandomNormalLike, {{random_tensor({4, 8}, 3), false}}));
  RunOptions r;
  r.seed = 5;
  auto cuda_exe = compile(model, "cuda");
  const Tensor c5 = cuda_exe->run({}, r)[0].clone();
  EXPECT_TRUE(same_bits(c5, compile(model, "cpu")->run({}, r)[0]));
  r.seed = 6;
  EXPECT_FALSE(same_bits(c5, cuda_exe->run({}, r)[0]));
}

}  // namespace
}  // namespace lockstep::gpu_test
