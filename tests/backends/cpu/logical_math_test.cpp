// The cpu kernels of the comparison, logical, float-math and Clip ops against the float64
// reference, with edge values; and integer graphs computed at run time (masks, durations).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backends/cpu/cpu_test_util.h"
#include "lockstep/lockstep.h"
#include "passes/graph_builder.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

// fast_erf's max error is 4.7e-7 absolute (vector_math.h; CpuVectorMath.ErfMaxError).
constexpr double kErfMaxAbs = 5e-7;
// Ceil, Floor, Abs, comparisons, Clip: exact in float32, so exactly the reference's values.
constexpr double kExact = 0;

// Floats on a quarter grid, so that equal elements (and ties) occur.
Tensor quarters(Shape s, uint32_t seed) {
  Tensor t = random_tensor(std::move(s), seed, DType::Float32, -2, 2);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i] * 4) / 4;
  return t;
}

Tensor floats(std::vector<float> v) { return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v); }

// cpu and reference run `g`; every output element must equal the reference's (NaN where it is NaN).
void expect_same_values(const ir::Graph& g, const std::vector<Tensor>& inputs, const std::string& what,
                        double tol = kExact) {
  auto got = cpu::backend().compile(g, Options{})->run(inputs);
  auto want = reference::evaluate(g, inputs);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(shape_str(got[o].shape()), shape_str(want[o].shape())) << what;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      const double g1 = got[o].element_as_double(i), w = want[o].element_as_double(i);
      if (std::isnan(w)) EXPECT_TRUE(std::isnan(g1)) << what << " [" << i << "]";
      else if (tol == kExact) EXPECT_EQ(g1, w) << what << " [" << i << "]";
      else EXPECT_NEAR(g1, w, tol) << what << " [" << i << "]";
    }
  }
}

const std::vector<std::pair<Shape, Shape>> kBroadcastShapes = {
    {{3, 17}, {3, 17}}, {{2, 3, 17}, {17}}, {{3, 1}, {1, 5}}, {{2, 3, 5}, {}}, {{4, 1, 3}, {1, 6, 1}}, {{1}, {2, 7}}};

TEST(CpuLogical, ComparisonsOnFloatInt32Int64WithBroadcasting) {
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

TEST(CpuLogical, FloatEdgeValuesAndInt64BeyondDoublePrecision) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<In> in{{floats({nan, 1, -0.0f, -inf, inf, 2.5f, nan}), true}, {floats({1, nan, 0.0f, -inf, 3, 2.5f, nan}), true}};
  for (Op op : {Op::Less, Op::LessOrEqual, Op::Greater, Op::GreaterOrEqual, Op::Equal})
    expect_same_values(node_graph(op, in), runtime_inputs(in), std::string(ir::op_name(op)) + " edge floats");
  const int64_t big = int64_t{1} << 53;
  std::vector<In> ii{{Tensor::from_vector<int64_t>({3}, {big + 1, big, -big - 1}), true},
                     {Tensor::from_vector<int64_t>({3}, {big, big + 1, -big}), true}};
  for (Op op : {Op::Less, Op::Greater, Op::Equal}) {
    ir::Graph g = node_graph(op, ii);
    auto got = cpu::backend().compile(g, Options{})->run(runtime_inputs(ii));
    // Hand-known: big+1 > big, big < big+1, -big-1 < -big.
    const bool want[3][3] = {{false, true, true}, {true, false, false}, {false, false, false}};
    const int k = op == Op::Less ? 0 : op == Op::Greater ? 1 : 2;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(got[0].data<bool>()[i], want[k][i]) << ir::op_name(op) << " " << i;
  }
}

TEST(CpuLogical, AndOrXorNotEqualOnBool) {
  for (Op op : {Op::And, Op::Or, Op::Xor, Op::Equal})
    for (size_t s = 0; s < kBroadcastShapes.size(); ++s) {
      auto [sa, sb] = kBroadcastShapes[s];
      std::vector<In> in{{random_tensor(sa, 21 + s, DType::Bool), true}, {random_tensor(sb, 31 + s, DType::Bool), s % 3 != 1}};
      expect_same_values(node_graph(op, in), runtime_inputs(in),
                         std::string(ir::op_name(op)) + " " + shape_str(sa) + shape_str(sb));
    }
  std::vector<In> in{{random_tensor({3, 5, 7}, 41, DType::Bool), true}};
  expect_same_values(node_graph(Op::Not, in), runtime_inputs(in), "Not");
}

TEST(CpuMath, ErfAgainstTheReferenceWithEdgeValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<In> wide{{random_tensor({4, 1000}, 3, DType::Float32, -6, 6), true}};
  ir::Graph g = node_graph(Op::Erf, wide);
  auto exe = cpu::backend().compile(g, Options{});
  expect_outputs_match(exe->run(runtime_inputs(wide)), reference::evaluate(g, runtime_inputs(wide)), 1, "Erf [-6, 6]",
                       kCpuRelL2, kErfMaxAbs);
  std::vector<In> small{{random_tensor({1000}, 4, DType::Float32, -1e-3f, 1e-3f), true}};
  ir::Graph gs = node_graph(Op::Erf, small);
  expect_outputs_match(cpu::backend().compile(gs, Options{})->run(runtime_inputs(small)),
                       reference::evaluate(gs, runtime_inputs(small)), 1, "Erf near 0", kCpuRelL2, kErfMaxAbs);
  std::vector<In> edge{{floats({0.0f, -0.0f, 10, -10, 1e30f, -1e30f, inf, -inf, nan}), true}};
  auto got = cpu::backend().compile(node_graph(Op::Erf, edge), Options{})->run(runtime_inputs(edge))[0];
  const float* y = got.data<float>();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_TRUE(std::signbit(y[1]) && y[1] == 0.0f);
  EXPECT_EQ(y[2], 1.0f);
  EXPECT_EQ(y[3], -1.0f);
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_EQ(y[5], -1.0f);
  EXPECT_EQ(y[6], 1.0f);
  EXPECT_EQ(y[7], -1.0f);
  EXPECT_TRUE(std::isnan(y[8]));
}

TEST(CpuMath, SoftplusIsStableForLargeMagnitudes) {
  std::vector<In> in{{random_tensor({3, 777}, 5, DType::Float32, -30, 30), true}};
  expect_matches_reference(node_graph(Op::Softplus, in), runtime_inputs(in), 1, "Softplus [-30, 30]");
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<In> edge{{floats({100, -100, 88, -88, 87, -87, 20, -20, 0, 1e30f, -1e30f, inf, -inf}), true}};
  ir::Graph g = node_graph(Op::Softplus, edge);
  auto got = cpu::backend().compile(g, Options{})->run(runtime_inputs(edge))[0];
  auto want = reference::evaluate(g, runtime_inputs(edge))[0];
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.element_as_double(i), y = got.element_as_double(i);
    if (std::isinf(w)) EXPECT_EQ(y, w) << i;
    else if (w < std::numeric_limits<float>::min()) EXPECT_NEAR(y, w, 1e-44) << i;  // float32 subnormals
    else EXPECT_NEAR(y, w, kCpuRelL2 * w) << i;
  }
  std::vector<In> n{{floats({std::numeric_limits<float>::quiet_NaN()}), true}};
  EXPECT_TRUE(std::isnan(cpu::backend().compile(node_graph(Op::Softplus, n), Options{})->run(runtime_inputs(n))[0].data<float>()[0]));
}

TEST(CpuMath, CeilFloorExactAtAndNearIntegers) {
  std::vector<float> v = {-3, 0, -0.0f, 2, 1e7f, 16777216.0f, 0.5f, -0.5f, 4194304.5f, 1e20f, -1.5f};
  for (float k : {1.0f, 2.0f, -2.0f, 100.0f, 1024.0f, -7.0f}) {
    v.push_back(std::nextafter(k, std::numeric_limits<float>::infinity()));   // a float32 ulp above
    v.push_back(std::nextafter(k, -std::numeric_limits<float>::infinity()));  // and below
  }
  v.push_back(std::numeric_limits<float>::quiet_NaN());
  v.push_back(std::numeric_limits<float>::infinity());
  std::vector<In> in{{floats(v), true}};
  for (Op op : {Op::Ceil, Op::Floor, Op::Abs}) expect_same_values(node_graph(op, in), runtime_inputs(in), ir::op_name(op));
  // A float32 ulp above 2 rounds up, not to 2 (Piper's durations: Ceil then Cast).
  auto got = cpu::backend().compile(node_graph(Op::Ceil, in), Options{})->run(runtime_inputs(in))[0];
  EXPECT_EQ(got.data<float>()[11], 2.0f);
  EXPECT_EQ(got.data<float>()[13], 3.0f);
  std::vector<In> r{{random_tensor({5, 61}, 6, DType::Float32, -8, 8), true}};
  for (Op op : {Op::Ceil, Op::Floor, Op::Abs}) expect_same_values(node_graph(op, r), runtime_inputs(r), ir::op_name(op));
  expect_matches_reference(node_graph(Op::Reciprocal, r), runtime_inputs(r), 1, "Reciprocal");
}

TEST(CpuMath, IntegerAbsNegReluAtRunTime) {
  for (DType dt : {DType::Int64, DType::Int32})
    for (Op op : {Op::Abs, Op::Neg, Op::Relu}) {
      std::vector<In> in{{random_tensor({4, 9}, 7, dt), true}};
      expect_same_values(node_graph(op, in), runtime_inputs(in), std::string(ir::op_name(op)) + " " + dtype_name(dt));
    }
}

TEST(CpuClip, ConstantRuntimeAndOmittedBounds) {
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
    std::vector<In> crossed{{x, true}, {hi, runtime}, {lo, runtime}};  // min > max: all max
    expect_same_values(node_graph(Op::Clip, crossed), runtime_inputs(crossed), "Clip min > max");
  }
  std::vector<In> none{{x, true}};
  expect_same_values(node_graph(Op::Clip, none), runtime_inputs(none), "Clip no bounds");
  for (DType dt : {DType::Int64, DType::Int32}) {
    std::vector<In> in{{random_tensor({3, 11}, 8, dt), true},
                       {Tensor::scalar<int64_t>(-2).to(dt), true},
                       {Tensor::scalar<int64_t>(1).to(dt), false}};
    expect_same_values(node_graph(Op::Clip, in), runtime_inputs(in), std::string("Clip ") + dtype_name(dt));
  }
  std::vector<In> big{{random_tensor({2, 70000}, 9, DType::Float32, -3, 3), true}, {lo, false}, {hi, true}};
  expect_same_values(node_graph(Op::Clip, big), runtime_inputs(big), "Clip large");
}

// Unary float math as fused epilogue steps of a Conv: same values as the reference's epilogue.
TEST(CpuMath, FloatMathRunsAsConvEpilogueSteps) {
  std::vector<In> in{{random_tensor({1, 4, 33}, 10), true}, {random_tensor({6, 4, 3}, 11), false}};
  ir::Graph g = node_graph(Op::Conv, in, attrs({{"pads", std::vector<int64_t>{1, 1}}}));
  g.nodes[0].epilogue = {{Op::Erf, ir::kNoValue, false, 0, "erf"},
                         {Op::Softplus, ir::kNoValue, false, 0, "softplus"},
                         {Op::Reciprocal, ir::kNoValue, false, 0, "reciprocal"},
                         {Op::Abs, ir::kNoValue, false, 0, "abs"}};
  expect_matches_reference(g, runtime_inputs(in), 12, "Conv + Erf, Softplus, Reciprocal, Abs");
  g.nodes[0].epilogue = {{Op::Floor, ir::kNoValue, false, 0, "floor"}, {Op::Ceil, ir::kNoValue, false, 0, "ceil"}};
  // Exact: no conv value of this seed lies within float32 rounding of an integer.
  expect_same_values(g, runtime_inputs(in), "Conv + Floor, Ceil");
}

// Integer masks and durations computed at run time from int64 graph inputs (not folded): Less,
// Equal, And, Not, Where, Add, Sub, Mul, Div, Cast, Clip and Ceil as a Piper voice uses them.
TEST(CpuRuntimeIntegers, MasksAndDurationsFromRuntimeInt64Inputs) {
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
  auto ge = b.node(Op::GreaterOrEqual, "ge", {dur_i, b.node(Op::Cast, "len32", {lengths}, {2, 1}, DType::Int32, attrs({{"to", int64_t{6}}}))},
                   {2, 7}, DType::Bool);
  for (auto v : {less, eq, inner, idx, half, mask, dur_i}) b.output(v);
  ir::Graph g = b.graph();
  // GreaterOrEqual on int64 vs int32 is a dtype error of shape inference, not a crash.
  EXPECT_THROW(ir::infer_node(g, g.nodes.back()), Error);
  (void)ge;
  g.nodes.pop_back();
  g.nodes.pop_back();
  Tensor len = Tensor::from_vector<int64_t>({2, 1}, {5, 3});
  Tensor ts = Tensor::from_vector<int64_t>({1, 7}, {0, 1, 2, 3, 4, 5, 6});
  Tensor ws = random_tensor({2, 7}, 12, DType::Float32, -1, 4);
  ws.data<float>()[0] = std::nextafter(2.0f, 3.0f);  // a float32 ulp above 2: ceil 3
  std::vector<Tensor> inputs{len, ts, ws};
  expect_same_values(g, inputs, "runtime int64 masks");
  // Through the compile pipeline too (folding must leave the run-time values alone).
  auto exe = lockstep::compile(Model::from_graph(g), "cpu");
  auto got = exe->run(inputs);
  auto want = reference::evaluate(g, inputs);
  expect_outputs_match(got, want, 1, "pipeline runtime int64", kCpuRelL2, kCpuAbsPerTerm);
  // Hand-known: lengths 5 and 3 over t = 0..6.
  const bool want_less[14] = {1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0};
  const int64_t want_half[14] = {0, 1, 2, 3, 4, 0, 0, 0, 1, 2, 0, 0, 0, 0};  // Div truncates -1/2 to 0
  for (int i = 0; i < 14; ++i) {
    EXPECT_EQ(got[0].data<bool>()[i], want_less[i]) << i;
    EXPECT_EQ(got[4].data<int64_t>()[i], want_half[i]) << i;
  }
  EXPECT_EQ(got[6].data<int64_t>()[0], 3);
}

// Pow by a constant 2 (a layer norm's variance) is the correctly rounded square: exactly the
// reference's double pow rounded once, over magnitudes from subnormal squares to overflow.
TEST(CpuMath, PowByTwoIsTheCorrectlyRoundedSquare) {
  Tensor x = random_tensor({1 << 16}, 91, DType::Float32, -1, 1);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::ldexp(x.data<float>()[i], static_cast<int>(i % 150) - 80);
  const std::vector<In> in{{x, true}, {Tensor::from_vector<float>({}, {2.0f}), false}};
  const ir::Graph g = node_graph(Op::Pow, in);
  const Tensor got = cpu::backend().compile(g, Options{})->run(runtime_inputs(in)).at(0);
  const Tensor want = reference::evaluate(g, runtime_inputs(in)).at(0);  // float64
  int wrong = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (got.data<float>()[i] != static_cast<float>(want.element_as_double(i)) && ++wrong <= 5)
      ADD_FAILURE() << "x = " << x.data<float>()[i] << ": " << got.data<float>()[i] << " vs "
                    << static_cast<float>(want.element_as_double(i));
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace lockstep::cpu_test
