// The run-time shape stage (src/dynamic): symbolic input dims bound per call, a size read from a
// value at run time, the segment cache, and the errors. Oracle: the reference interpreter run
// directly on the unspecialised graph (its evaluators take every shape from the tensors).
#include <gtest/gtest.h>

#include <cmath>

#include "dynamic/executable.h"
#include "ir/graph.h"
#include "lockstep/lockstep.h"
#include "reference/evaluate.h"

namespace lockstep {
namespace {

ir::ValueId add(ir::Graph& g, const std::string& name, DType dtype, Shape shape, std::vector<std::string> params = {}) {
  ir::Value v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.dim_params = std::move(params);
  return g.add_value(std::move(v));
}

ir::ValueId add_const(ir::Graph& g, const std::string& name, Tensor t) {
  ir::Value v;
  v.name = name;
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.constant = std::move(t);
  return g.add_value(std::move(v));
}

void add_node(ir::Graph& g, ir::Op op, const std::string& name, std::vector<ir::ValueId> in,
              std::vector<ir::ValueId> out, ir::Attributes attrs = {}) {
  ir::Node n;
  n.op = op;
  n.name = name;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attrs = std::move(attrs);
  g.nodes.push_back(std::move(n));
}

Tensor ramp(Shape shape, float scale) {
  Tensor t(DType::Float32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = std::sin(0.37f * static_cast<float>(i) + scale);
  return t;
}

// x [1, 4, T] (T symbolic) -> Conv k3 pad 1 -> Tanh -> y [1, 8, T];
// n int64 [1] -> Concat([1, 8], n) -> Expand(bias [1, 8, 1] * gain, .) * 2 -> z [1, 8, n]: z's size is
// a value read at run time, so the graph is cut there.
ir::Graph symbolic_and_value_sized() {
  ir::Graph g;
  g.name = "dyn";
  ir::ValueId x = add(g, "x", DType::Float32, {1, 4, -1}, {"", "", "T"});
  ir::ValueId n = add(g, "n", DType::Int64, {1});
  ir::ValueId gain = add(g, "gain", DType::Float32, {1, 1, 1});
  g.inputs = {x, n, gain};
  ir::ValueId w = add_const(g, "w", ramp({8, 4, 3}, 0.5f));
  ir::ValueId c = add(g, "c", DType::Float32, {});
  ir::Attributes conv;
  conv.set("pads", std::vector<int64_t>{1, 1});
  conv.set("kernel_shape", std::vector<int64_t>{3});
  add_node(g, ir::Op::Conv, "conv", {x, w}, {c}, conv);
  ir::ValueId y = add(g, "y", DType::Float32, {});
  add_node(g, ir::Op::Tanh, "tanh", {c}, {y});
  ir::ValueId head = add_const(g, "head", Tensor::from_vector<int64_t>({2}, {1, 8}));
  ir::ValueId shape = add(g, "shape", DType::Int64, {});
  ir::Attributes axis0;
  axis0.set("axis", int64_t{0});
  add_node(g, ir::Op::Concat, "concat", {head, n}, {shape}, axis0);
  ir::ValueId bias = add_const(g, "bias", ramp({1, 8, 1}, 1.5f));
  ir::ValueId scaled = add(g, "scaled", DType::Float32, {});
  add_node(g, ir::Op::Mul, "scale", {bias, gain}, {scaled});
  ir::ValueId e = add(g, "e", DType::Float32, {});
  add_node(g, ir::Op::Expand, "expand", {scaled, shape}, {e});
  ir::ValueId two = add_const(g, "two", Tensor::scalar<float>(2.0f));
  ir::ValueId z = add(g, "z", DType::Float32, {});
  add_node(g, ir::Op::Mul, "mul", {e, two}, {z});
  g.outputs = {y, z};
  return g;
}

std::vector<Tensor> inputs_for(int64_t frames, int64_t n) {
  return {ramp({1, 4, frames}, static_cast<float>(frames)), Tensor::from_vector<int64_t>({1}, {n}),
          Tensor::from_vector<float>({1, 1, 1}, {0.75f})};
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shape_str(a.shape()), shape_str(b.shape()));
  double m = 0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i)
    m = std::max(m, std::abs(a.element_as_double(i) - b.element_as_double(i)));
  return m;
}

TEST(RunTimeShapes, DetectsSymbolicAndValueSizedGraphs) {
  ir::Graph g = symbolic_and_value_sized();
  EXPECT_TRUE(dynamic::needs_run_time_shapes(g, {}));
  Options bound;
  bound.input_shapes["x"] = {1, 4, 10};
  EXPECT_TRUE(dynamic::needs_run_time_shapes(g, bound)) << "z's size is read from input n";
  ir::Graph only_conv = g;
  only_conv.nodes.resize(2);
  only_conv.outputs = {only_conv.find_value("y")};
  EXPECT_FALSE(dynamic::needs_run_time_shapes(only_conv, bound));
  EXPECT_TRUE(dynamic::needs_run_time_shapes(only_conv, {}));
}

// Per backend: lengths A, B, A; the values of every call match the reference, the repeated A hits
// the cache and gives the same bits as the first A.
class RunTimeShapesBackend : public ::testing::TestWithParam<std::string> {};

TEST_P(RunTimeShapesBackend, MatchesReferenceAcrossLengthsAndCaches) {
  Model model = Model::from_graph(symbolic_and_value_sized());
  Options options;
  options.threads = 2;
  std::unique_ptr<Executable> exe = compile(model, GetParam(), options);
  const dynamic::Stats* stats = dynamic::stats(*exe);
  ASSERT_NE(stats, nullptr) << "a graph with a symbolic dim compiles through the run-time shape stage";
  std::vector<Tensor> first_a;
  const std::pair<int64_t, int64_t> calls[] = {{16, 5}, {37, 9}, {16, 5}};
  for (size_t k = 0; k < 3; ++k) {
    auto [frames, n] = calls[k];
    std::vector<Tensor> in = inputs_for(frames, n);
    std::vector<Tensor> got = exe->run(in);
    std::vector<Tensor> want = reference::evaluate(model.graph(), in);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(shape_str(got[0].shape()), shape_str({1, 8, frames}));
    EXPECT_EQ(shape_str(got[1].shape()), shape_str({1, 8, n}));
    EXPECT_LE(max_abs_diff(got[0], want[0]), 1e-6) << "call " << k;
    EXPECT_LE(max_abs_diff(got[1], want[1]), 1e-6) << "call " << k;
    EXPECT_EQ(stats->last_run_segments, 2) << "cut once, at the Expand whose shape is read from n";
    if (k == 0) first_a = {got[0].clone(), got[1].clone()};
    if (k == 2) {
      EXPECT_EQ(stats->last_run_misses, 0) << "the second A is served from the cache";
      EXPECT_EQ(max_abs_diff(got[0], first_a[0]), 0.0);
      EXPECT_EQ(max_abs_diff(got[1], first_a[1]), 0.0);
    }
  }
  EXPECT_EQ(stats->segments_compiled, 4) << "A and B, two segments each";
  EXPECT_EQ(stats->segment_hits, 2);
}

INSTANTIATE_TEST_SUITE_P(Backends, RunTimeShapesBackend, ::testing::Values("reference", "cpu"),
                         [](const auto& info) { return info.param; });

TEST(RunTimeShapes, CacheIsBounded) {
  dynamic::CacheLimits limits;
  limits.max_entries = 3;
  Options options;
  options.threads = 1;
  std::unique_ptr<Executable> exe =
      dynamic::compile_dynamic(symbolic_and_value_sized(), *find_backend("cpu"), options, limits);
  for (int64_t frames : {8, 9, 10, 11}) exe->run(inputs_for(frames, 3));
  const dynamic::Stats* stats = dynamic::stats(*exe);
  EXPECT_EQ(stats->cached_entries, 3);
  EXPECT_EQ(stats->evictions, 5);  // 8 segments compiled, 3 kept
}

// LOCKSTEP_SHAPE_CACHE_SEGMENTS sets the bound through compile() (a measurement knob); a value
// that is not a count is refused, naming it.
TEST(RunTimeShapes, CacheBoundFromTheEnvironment) {
  Options options;
  options.threads = 1;
  const Model model = Model::from_graph(symbolic_and_value_sized());
  setenv("LOCKSTEP_SHAPE_CACHE_SEGMENTS", "3", 1);
  std::unique_ptr<Executable> exe = compile(model, "cpu", options);
  for (int64_t frames : {8, 9, 10, 11}) exe->run(inputs_for(frames, 3));
  EXPECT_EQ(dynamic::stats(*exe)->cached_entries, 3);
  setenv("LOCKSTEP_SHAPE_CACHE_SEGMENTS", "lots", 1);
  try {
    compile(model, "cpu", options);
    ADD_FAILURE() << "a cache size of 'lots' was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'lots'"), std::string::npos) << e.what();
  }
  unsetenv("LOCKSTEP_SHAPE_CACHE_SEGMENTS");
  exe = compile(model, "cpu", options);
  for (int64_t frames : {8, 9, 10, 11}) exe->run(inputs_for(frames, 3));
  EXPECT_EQ(dynamic::stats(*exe)->cached_entries, 8) << "the cpu's default keeps all 8";
}

// The cached cpu segments take turns in one host scratch: resident arena memory is the largest
// segment's, not the sum over the cache, and every call still matches the reference.
TEST(RunTimeShapes, CpuSegmentsShareOneScratch) {
  Options options;
  options.threads = 1;
  Model model = Model::from_graph(symbolic_and_value_sized());
  std::unique_ptr<Executable> exe = compile(model, "cpu", options);
  const dynamic::Stats* stats = dynamic::stats(*exe);
  ASSERT_NE(stats, nullptr);
  for (int64_t frames : {4096, 64, 2048, 4096}) {
    std::vector<Tensor> in = inputs_for(frames, 3);
    std::vector<Tensor> got = exe->run(in);
    std::vector<Tensor> want = reference::evaluate(model.graph(), in);
    EXPECT_LE(max_abs_diff(got[0], want[0]), 1e-6) << frames << " frames";
  }
  EXPECT_EQ(stats->cached_entries, 6) << "three lengths, two segments each";
  // The conv segment's arena at 4096 frames: x [1,4,4096] and y [1,8,4096] float32 (plus padding).
  const int64_t largest = (4 + 8) * 4096 * 4;
  EXPECT_GE(stats->scratch_arena_bytes, largest);
  EXPECT_LT(stats->scratch_arena_bytes, stats->cached_bytes)
      << "the largest segment's arena, not the sum of the cached entries' planned arenas";
}

TEST(RunTimeShapes, BadInputsAreClearErrors) {
  std::unique_ptr<Executable> exe = compile(Model::from_graph(symbolic_and_value_sized()), "cpu", {});
  auto message = [&](std::vector<Tensor> in) -> std::string {
    try {
      exe->run(in);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message({ramp({4, 16}, 0), Tensor::from_vector<int64_t>({1}, {3}), ramp({1, 1, 1}, 0)}).find("input 'x' has rank 3"),
            std::string::npos);
  EXPECT_NE(message({ramp({1, 5, 16}, 0), Tensor::from_vector<int64_t>({1}, {3}), ramp({1, 1, 1}, 0)}).find("expects shape [1,4,-1]"),
            std::string::npos);
  EXPECT_NE(message({Tensor::from_vector<int64_t>({1, 4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                     Tensor::from_vector<int64_t>({1}, {3}), ramp({1, 1, 1}, 0)})
                .find("expects float32"),
            std::string::npos);
  // A size read from a value that would exhaust memory: refused before anything is allocated.
  std::string huge = message(inputs_for(16, int64_t{1} << 40));
  EXPECT_NE(huge.find("expand"), std::string::npos) << huge;
  EXPECT_NE(huge.find("run-time memory cap"), std::string::npos) << huge;
  // The executable is still usable afterwards.
  EXPECT_EQ(exe->run(inputs_for(16, 3))[1].shape(), (Shape{1, 8, 3}));
}

TEST(RunTimeShapes, SymbolicDimsMustAgreeAcrossInputs) {
  ir::Graph g;
  ir::ValueId a = add(g, "a", DType::Float32, {-1, 3}, {"batch", ""});
  ir::ValueId b = add(g, "b", DType::Float32, {-1, 3}, {"batch", ""});
  g.inputs = {a, b};
  ir::ValueId s = add(g, "s", DType::Float32, {});
  add_node(g, ir::Op::Add, "add", {a, b}, {s});
  g.outputs = {s};
  std::unique_ptr<Executable> exe = compile(Model::from_graph(g), "cpu", {});
  try {
    exe->run({ramp({2, 3}, 0), ramp({1, 3}, 0)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dim 'batch' is 2 in input 'a' but 1 in input 'b'"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(exe->run({ramp({2, 3}, 0), ramp({2, 3}, 1)})[0].shape(), (Shape{2, 3}));
}

}  // namespace
}  // namespace lockstep
