// The cpu reduction, CumSum, indexing and random kernels against the float64 reference: values
// within the named bounds (cpu_test_util.h), integer and index results exact, random bits equal,
// bad indices an error naming the node, reductions independent of the thread count.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/cpu/cpu_test_util.h"
#include "core/random.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

Tensor ints(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }

// Sums accumulate in double and round once: float32 rounding of the result, whatever the length.
constexpr double kReduceRelL2 = kCpuRelL2;
constexpr double kReduceAbsPerTerm = 1e-7;

TEST(CpuReduce, EveryOpAxesAndKeepdimsMatchTheReference) {
  const Shape x{3, 5, 7};
  const std::vector<std::vector<int64_t>> axes_cases = {{-1}, {0}, {1}, {0, 2}, {2, 0, 1}, {}};
  uint32_t seed = 0;
  for (Op op : {Op::ReduceMean, Op::ReduceSum, Op::ReduceMax, Op::ReduceMin})
    for (const auto& axes : axes_cases)
      for (int64_t keep : {0, 1}) {
        std::vector<In> in{{random_tensor(x, ++seed, DType::Float32, -3, 3), true}, {ints(axes), false}};
        ir::Graph g = node_graph(op, in, attrs({{"keepdims", keep}}));
        expect_matches_reference(g, runtime_inputs(in), 1,
                                 std::string(ir::op_name(op)) + " axes " + shape_str(axes) + " keep " +
                                     std::to_string(keep));
      }
  // Integer data (exact), no axes input (all dims), noop_with_empty_axes.
  for (Op op : {Op::ReduceSum, Op::ReduceMax, Op::ReduceMean}) {
    std::vector<In> in{{random_tensor({4, 6}, 7, DType::Int64), true}, {ints({1}), false}};
    expect_matches_reference(node_graph(op, in), runtime_inputs(in), 1, "int64");
    std::vector<In> all{{random_tensor({4, 6}, 8), true}};
    expect_matches_reference(node_graph(op, all, attrs({{"keepdims", int64_t{0}}})), runtime_inputs(all), 1, "all");
    std::vector<In> noop{{random_tensor({4, 6}, 9), true}, {ints({}), false}};
    expect_matches_reference(node_graph(op, noop, attrs({{"noop_with_empty_axes", int64_t{1}}})), runtime_inputs(noop),
                             1, "noop");
  }
}

// A long reduction (several fixed blocks) is as accurate as one rounding and has the same bits
// on one thread and on two.
TEST(CpuReduce, LongSumsAreAccurateAndThreadCountIndependent) {
  std::vector<In> in{{random_tensor({3, 70001}, 11, DType::Float32, 0, 1), true}};
  for (Op op : {Op::ReduceSum, Op::ReduceMean, Op::ReduceMax}) {
    for (bool all : {false, true}) {
      std::vector<In> args = in;
      if (!all) args.push_back({ints({-1}), false});
      ir::Graph g = node_graph(op, args, attrs({{"keepdims", int64_t{0}}}));
      const auto inputs = runtime_inputs(args);
      auto want = reference::evaluate(g, inputs);
      Options one, two;
      one.threads = 1;
      two.threads = 2;
      auto a = cpu::backend().compile(g, one)->run(inputs);
      auto b = cpu::backend().compile(g, two)->run(inputs);
      expect_outputs_match(a, want, 1, ir::op_name(op), kReduceRelL2, kReduceAbsPerTerm);
      ASSERT_EQ(a[0].nbytes(), b[0].nbytes());
      EXPECT_EQ(std::memcmp(a[0].raw(), b[0].raw(), a[0].nbytes()), 0) << ir::op_name(op) << " bits differ by threads";
    }
  }
}

TEST(CpuCumSum, FloatAndIntegerExclusiveReverse) {
  for (int64_t axis : {0, 1, -1})
    for (int64_t excl : {0, 1})
      for (int64_t rev : {0, 1}) {
        ir::Attributes a = attrs({{"exclusive", excl}, {"reverse", rev}});
        std::vector<In> in{{random_tensor({4, 9, 300}, 3), true}, {ints({axis}), false}};
        expect_matches_reference(node_graph(Op::CumSum, in, a), runtime_inputs(in), 1, "cumsum");
        std::vector<In> iin{{random_tensor({5, 6}, 4, DType::Int64), true}, {ints({axis == -1 ? 1 : axis}), false}};
        expect_matches_reference(node_graph(Op::CumSum, iin, a), runtime_inputs(iin), 1, "cumsum int64");
        std::vector<In> i32{{random_tensor({5, 6}, 5, DType::Int32), true},
                            {Tensor::from_vector<int32_t>({}, {0}), false}};
        expect_matches_reference(node_graph(Op::CumSum, i32, a), runtime_inputs(i32), 1, "cumsum int32");
      }
}

TEST(CpuIndexing, GatherNdScatterNdGatherElementsMatchTheReference) {
  for (DType dt : {DType::Float32, DType::Int64, DType::Bool}) {
    const std::string what = dtype_name(dt);
    Tensor data = random_tensor({2, 3, 4}, 21, dt);
    // GatherND: plain, partial tuples, batch_dims 1, negative indices.
    std::vector<In> g1{{data, true}, {i64({2, 3}, {0, 2, 3, -1, -3, 0}), true}};
    expect_matches_reference(node_graph(Op::GatherND, g1), runtime_inputs(g1), 1, "GatherND " + what);
    std::vector<In> g2{{data, true}, {i64({3, 1}, {1, 0, -1}), true}};
    expect_matches_reference(node_graph(Op::GatherND, g2), runtime_inputs(g2), 1, "GatherND slices " + what);
    std::vector<In> g3{{data, true}, {i64({2, 2, 1}, {2, 0, 1, 1}), true}};
    expect_matches_reference(node_graph(Op::GatherND, g3, attrs({{"batch_dims", int64_t{1}}})), runtime_inputs(g3), 1,
                             "GatherND batch_dims " + what);
    // ScatterND: rows, elements, a repeated index.
    std::vector<In> s1{{data, true}, {i64({2, 2}, {1, 2, 0, -1}), true}, {random_tensor({2, 4}, 22, dt), true}};
    expect_matches_reference(node_graph(Op::ScatterND, s1), runtime_inputs(s1), 1, "ScatterND " + what);
    std::vector<In> s2{{data, true}, {i64({3, 3}, {0, 0, 0, 1, 2, 3, 0, 0, 0}), true}, {random_tensor({3}, 23, dt), true}};
    expect_matches_reference(node_graph(Op::ScatterND, s2), runtime_inputs(s2), 1, "ScatterND repeated " + what);
    if (dt != DType::Bool)
      for (const char* how : {"add", "mul", "max", "min"})
        expect_matches_reference(node_graph(Op::ScatterND, s2, attrs({{"reduction", std::string(how)}})),
                                 runtime_inputs(s2), 2, std::string("ScatterND ") + how + " " + what);
    // GatherElements on each axis, negative indices, int32 indices.
    for (int64_t axis : {0, 1, -1}) {
      std::vector<int64_t> idx(2 * 2 * 3);
      const int64_t dim = data.shape()[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i * 7 % (2 * dim)) - dim;
      std::vector<In> e{{data, true}, {i64({2, 2, 3}, idx), true}};
      expect_matches_reference(node_graph(Op::GatherElements, e, attrs({{"axis", axis}})), runtime_inputs(e), 1,
                               "GatherElements " + what);
    }
    std::vector<In> e32{{data, true}, {Tensor::from_vector<int32_t>({1, 3, 2}, {0, 1, 2, 3, -1, -4}), true}};
    expect_matches_reference(node_graph(Op::GatherElements, e32, attrs({{"axis", int64_t{2}}})), runtime_inputs(e32), 1,
                             "GatherElements int32 " + what);
  }
}

// A bad index at run time: InvalidArgument naming the node, the op and the index; no crash.
TEST(CpuIndexing, OutOfRangeIndexIsAnErrorNamingTheNode) {
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
  for (const auto& c : cases) {
    ir::Graph g = node_graph(c.op, c.in, c.a);
    auto exe = cpu::backend().compile(g, Options{});
    const std::string name = std::string(ir::op_name(c.op)) + "_0";
    try {
      exe->run(runtime_inputs(c.in));
      ADD_FAILURE() << name << ": no error for index " << c.index;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
      EXPECT_EQ(e.node(), name);
      EXPECT_EQ(e.op(), ir::op_name(c.op));
      EXPECT_NE(std::string(e.what()).find("index " + c.index + " "), std::string::npos) << e.what();
    }
    // A second run fails the same way (nothing half-done in between).
    EXPECT_THROW(exe->run(runtime_inputs(c.in)), Error);
  }
}

TEST(CpuIndexing, NonZeroHasADataDependentShape) {
  std::vector<In> in{{random_tensor({3, 4}, 5), true}};
  ir::Graph g = node_graph(Op::NonZero, in);
  auto reason = cpu::backend().unsupported_reason(g, g.nodes[0]);
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(*reason, "data-dependent output shape: runs in the run-time shape stage");
  // On a constant it folds at compile time, and the cpu runs what is left.
  ir::Graph c = node_graph(Op::NonZero, {{Tensor::from_vector<float>({2, 2}, {0, 1, 2, 0}), false}});
  auto out = compile(Model::from_graph(c), "cpu")->run({});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(shape_str(out[0].shape()), "[2,2]");
  const std::vector<int64_t> want{0, 1, 1, 0};  // np.nonzero([[0, 1], [2, 0]]) = ([0, 1], [1, 0])
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out[0].element_as_int(i), want[static_cast<size_t>(i)]);
}

// Random values: the cpu fills exactly the float32 values the reference widens to double.
std::vector<Tensor> run_random(const ir::Graph& g, const std::vector<Tensor>& in, uint64_t seed, int threads = 0) {
  Options o;
  o.threads = threads;
  RunOptions r;
  r.seed = seed;
  return cpu::backend().compile(g, o)->run(in, r);
}

void expect_same_bits(const Tensor& cpu, const Tensor& ref) {
  ASSERT_EQ(cpu.numel(), ref.numel());
  for (int64_t i = 0; i < cpu.numel(); ++i)
    ASSERT_EQ(static_cast<double>(cpu.data<float>()[i]), ref.data<double>()[i]) << "element " << i;
}

TEST(CpuRandom, SameSeedSameBitsOnCpuAndReference) {
  std::vector<In> like{{random_tensor({3, 40001}, 1), true}};
  for (Op op : {Op::RandomNormalLike, Op::RandomUniformLike}) {
    ir::Attributes a = op == Op::RandomNormalLike ? attrs({{"mean", 0.5f}, {"scale", 0.667f}})
                                                   : attrs({{"low", -2.0f}, {"high", 3.0f}});
    ir::Graph g = node_graph(op, like, a);
    const auto inputs = runtime_inputs(like);
    auto c1 = run_random(g, inputs, 1234, 1), c2 = run_random(g, inputs, 1234, 2);
    auto ref = reference::evaluate(g, inputs, {}, 1234);
    expect_same_bits(c1[0], ref[0]);
    ASSERT_EQ(std::memcmp(c1[0].raw(), c2[0].raw(), c1[0].nbytes()), 0) << "threads change the bits";
    auto other = run_random(g, inputs, 1235);
    int64_t equal = 0;
    for (int64_t i = 0; i < other[0].numel(); ++i) equal += other[0].data<float>()[i] == c1[0].data<float>()[i];
    EXPECT_LT(equal, 10) << "seed 1235 repeats seed 1234";
  }
  for (Op op : {Op::RandomNormal, Op::RandomUniform}) {
    ir::Graph g = node_graph(op, {}, attrs({{"shape", std::vector<int64_t>{2, 5, 7}}}));
    auto cpu = run_random(g, {}, 9);
    expect_same_bits(cpu[0], reference::evaluate(g, {}, {}, 9)[0]);
    EXPECT_EQ(shape_str(cpu[0].shape()), "[2,5,7]");
    // The values are the generator's, keyed by the node name.
    std::vector<float> want(70);
    const uint64_t key = random::stream_key(9, "Random" + std::string(op == Op::RandomNormal ? "Normal" : "Uniform") + "_0");
    if (op == Op::RandomNormal) random::fill_normal(want.data(), 0, 70, key, 0.0, 1.0);
    else random::fill_uniform(want.data(), 0, 70, key, 0.0, 1.0);
    EXPECT_EQ(std::memcmp(want.data(), cpu[0].raw(), 70 * sizeof(float)), 0);
  }
}

TEST(CpuRandom, SeedAttributeOverridesTheRunSeed) {
  ir::Graph g = node_graph(Op::RandomNormal, {}, attrs({{"shape", std::vector<int64_t>{64}}, {"seed", 3.0f}}));
  auto a = run_random(g, {}, 1), b = run_random(g, {}, 2);
  EXPECT_EQ(std::memcmp(a[0].raw(), b[0].raw(), a[0].nbytes()), 0);
  expect_same_bits(a[0], reference::evaluate(g, {}, {}, 77)[0]);
  ir::Graph plain = node_graph(Op::RandomNormal, {}, attrs({{"shape", std::vector<int64_t>{64}}}));
  auto p3 = run_random(plain, {}, 3);
  EXPECT_EQ(std::memcmp(a[0].raw(), p3[0].raw(), a[0].nbytes()), 0) << "seed attribute 3 = run seed 3";
}

// Through the whole pipeline: a RandomNormalLike of a constant is not folded away (its noise
// depends on the run's seed), and compile + run with a seed agrees with the reference.
TEST(CpuRandom, NotFoldedAndSeededThroughCompile) {
  ir::Graph g = node_graph(Op::RandomNormalLike, {{random_tensor({4, 8}, 3), false}});
  Model model = Model::from_graph(g);
  RunOptions r;
  r.seed = 5;
  auto cpu = compile(model, "cpu")->run({}, r);
  auto ref = compile(model, "reference")->run({}, r);
  expect_same_bits(cpu[0], ref[0]);
  r.seed = 6;
  auto cpu6 = compile(model, "cpu")->run({}, r);
  EXPECT_NE(std::memcmp(cpu[0].raw(), cpu6[0].raw(), cpu[0].nbytes()), 0);
}

// Attention shapes: [b,h,t,d] x [b,h,d,t] and Softmax over the last axis of rank 4.
TEST(CpuMatMul, AttentionRank4MatMulAndSoftmax) {
  std::vector<In> qk{{random_tensor({2, 3, 17, 8}, 1), true}, {random_tensor({2, 3, 8, 17}, 2), true}};
  expect_matches_reference(node_graph(Op::MatMul, qk), runtime_inputs(qk), 8, "QK^T");
  std::vector<In> av{{random_tensor({2, 3, 17, 17}, 3), true}, {random_tensor({2, 3, 17, 8}, 4), true}};
  expect_matches_reference(node_graph(Op::MatMul, av), runtime_inputs(av), 17, "AV");
  std::vector<In> b3{{random_tensor({6, 17, 8}, 5), true}, {random_tensor({6, 8, 17}, 6), false}};
  expect_matches_reference(node_graph(Op::MatMul, b3), runtime_inputs(b3), 8, "rank 3");
  std::vector<In> sm{{random_tensor({2, 3, 17, 17}, 7, DType::Float32, -8, 8), true}};
  expect_matches_reference(node_graph(Op::Softmax, sm, attrs({{"axis", int64_t{-1}}})), runtime_inputs(sm), 17, "softmax");
}

}  // namespace
}  // namespace lockstep::cpu_test
