// Every vulkan kernel against the float64 reference on small random graphs (the cpu and cuda tests'
// cases), with the named bars of vulkan_test_util.h; each also run twice for the same bits.
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <random>

#include "vulkan/vulkan_test_util.h"

namespace lockstep::vulkan_test {
namespace {

using ir::Op;

Tensor ints(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor rnd(Shape s, uint32_t seed) { return random_tensor(std::move(s), seed); }

struct EnvVar {
  EnvVar(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvVar() { unsetenv(name_); }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;
  const char* name_;
};

void random_convs(uint32_t seed, int cases, const std::string& tag) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int c = 0; c < cases; ++c) {
    const bool two_d = c % 4 == 3;
    const int group = c % 5 == 0 ? pick(2, 3) : 1;
    const int ci = group * pick(1, 9), co = group * (c % 3 == 0 ? 4 * pick(1, 3) : pick(1, 9));
    const int k = pick(1, 5), d = pick(1, 3), s = pick(1, 3);
    const int t = pick(k * d, k * d + 300);
    Shape x{pick(1, 2), ci, t}, w{co, ci / group, k};
    std::vector<int64_t> pads{pick(0, 3), pick(0, 3)}, strides{s}, dil{d};
    if (two_d) {
      x[2] = pick(k * d, k * d + 40);
      x.insert(x.begin() + 2, pick(k * d, k * d + 7));
      w.insert(w.begin() + 2, k);
      pads = {pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)};
      strides = {s, pick(1, 2)};
      dil = {d, 1};
    }
    const bool bias = c % 2 == 0;
    std::vector<In> in{{rnd(x, c), true}, {rnd(w, 100 + c), c % 6 == 1}};
    if (bias) in.push_back({rnd({co}, 200 + c), false});
    ir::Attributes a = attrs({{"pads", pads}, {"strides", strides}, {"dilations", dil}, {"group", int64_t{group}}});
    if (c % 7 == 6) {
      a.erase("pads");
      a.set("auto_pad", std::string(c % 2 ? "SAME_UPPER" : "SAME_LOWER"));
      a.set("strides", std::vector<int64_t>(strides.size(), 1));
    }
    ir::Graph g = node_graph(Op::Conv, in, a);
    expect_vulkan_matches_reference(g, runtime_inputs(in), ci / group * k * (two_d ? k : 1),
                                    tag + " conv case " + std::to_string(c) + " x" + shape_str(x) + " w" + shape_str(w));
  }
}

TEST(VulkanConv, RandomConv1dAnd2d) {
  LOCKSTEP_REQUIRE_VULKAN();
  random_convs(1234, 40, "direct");
}

TEST(VulkanConv, SharedMemoryTiledConv1d) {
  LOCKSTEP_REQUIRE_VULKAN();
  EnvVar tiled("LOCKSTEP_VULKAN_CONV_TILED", "1");  // conv1d_tiled.comp for the 1-D cases
  random_convs(4321, 24, "tiled");
}

TEST(VulkanConv, HifiGanShapes) {
  LOCKSTEP_REQUIRE_VULKAN();
  struct Case { int ci, co, k, d, t; };
  for (const Case& c : {Case{32, 32, 11, 5, 700}, Case{16, 16, 7, 3, 1500}, Case{72, 144, 5, 1, 300}, Case{8, 1, 7, 1, 900}}) {
    std::vector<In> in{{rnd({1, c.ci, c.t}, 1), true}, {rnd({c.co, c.ci, c.k}, 2), false}, {rnd({c.co}, 3), false}};
    const int64_t pad = (c.k - 1) * c.d / 2;
    ir::Graph g = node_graph(Op::Conv, in, attrs({{"pads", std::vector<int64_t>{pad, pad}}, {"dilations", std::vector<int64_t>{c.d}}}));
    expect_vulkan_matches_reference(g, runtime_inputs(in), c.ci * c.k, "hifigan conv k" + std::to_string(c.k));
  }
}

TEST(VulkanConvTranspose, RandomHifiGanStyleAndOutputPadding) {
  LOCKSTEP_REQUIRE_VULKAN();
  std::mt19937 rng(99);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int c = 0; c < 30; ++c) {
    const bool two_d = c % 5 == 4;
    const int group = c % 6 == 0 ? 2 : 1;
    const int ci = group * pick(1, 6), co = group * (c % 3 == 0 ? 4 : pick(1, 6)), s = pick(1, 8), k = pick(1, 2 * s + 1);
    const int d = c % 4 == 1 ? 2 : 1;
    Shape x{1, ci, pick(1, 40)}, w{ci, co / group, k};
    int pad = pick(0, k / 2), op = c % 3 == 2 ? pick(0, s - 1) : 0;
    std::vector<int64_t> pads{pad, pick(0, k / 2)}, strides{s}, dil{d}, opad{op};
    if (two_d) {
      x.insert(x.begin() + 2, pick(1, 6));
      w.insert(w.begin() + 2, k);
      pads = {pad, 0, pads[1], pad};
      strides = {s, 1};
      dil = {d, 1};
      opad = {op, 0};
    }
    std::vector<In> in{{rnd(x, c), true}, {rnd(w, 50 + c), c % 4 == 3}, {rnd({co}, 70 + c), false}};
    ir::Graph g = node_graph(Op::ConvTranspose, in,
                             attrs({{"pads", pads}, {"strides", strides}, {"dilations", dil},
                                    {"output_padding", opad}, {"group", int64_t{group}}}));
    expect_vulkan_matches_reference(g, runtime_inputs(in), ci * k, "convtranspose case " + std::to_string(c));
  }
  // HiFi-GAN's upsampling: 128 -> 64, kernel 16, stride 8, pad 4.
  std::vector<In> in{{rnd({1, 128, 64}, 1), true}, {rnd({128, 64, 16}, 2), false}, {rnd({64}, 3), false}};
  ir::Graph g = node_graph(Op::ConvTranspose, in, attrs({{"pads", std::vector<int64_t>{4, 4}}, {"strides", std::vector<int64_t>{8}}}));
  expect_vulkan_matches_reference(g, runtime_inputs(in), 128 * 2, "hifigan upsampling");
}

TEST(VulkanElementwise, UnaryAndBinaryWithBroadcasting) {
  LOCKSTEP_REQUIRE_VULKAN();
  for (Op op : {Op::Tanh, Op::Sigmoid, Op::Relu, Op::Exp, Op::Neg, Op::Abs, Op::Floor, Op::Ceil, Op::Erf, Op::Softplus}) {
    std::vector<In> in{{random_tensor({3, 5, 37}, 7, DType::Float32, -6, 6), true}};
    // Erf's bound is kErfAbs (math_test.cpp), three terms of the per-element bar.
    expect_vulkan_matches_reference(node_graph(op, in), runtime_inputs(in), op == Op::Erf ? 3 : 1, ir::op_name(op));
  }
  {
    std::vector<In> in{{random_tensor({2, 9}, 8, DType::Float32, 0, 4), true}};
    expect_vulkan_matches_reference(node_graph(Op::Sqrt, in), runtime_inputs(in), 1, "Sqrt");
    std::vector<In> r{{random_tensor({2, 9}, 8, DType::Float32, 0.25, 4), true}};
    expect_vulkan_matches_reference(node_graph(Op::Reciprocal, r), runtime_inputs(r), 1, "Reciprocal");
    std::vector<In> lr{{rnd({4, 33}, 9), true}};
    expect_vulkan_matches_reference(node_graph(Op::LeakyRelu, lr, attrs({{"alpha", 0.1f}})), runtime_inputs(lr), 1, "LeakyRelu");
    expect_vulkan_matches_reference(node_graph(Op::LeakyRelu, lr), runtime_inputs(lr), 1, "LeakyRelu default alpha");
  }
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{1, 72, 64}, {1, 72, 64}}, {{1, 72, 64}, {72, 1}}, {{1, 72, 64}, {1, 1, 64}}, {{2, 3, 5}, {}},
      {{3, 1, 5}, {1, 4, 1}},     {{5}, {2, 3, 5}},       {{2, 1, 3, 1}, {4, 1, 2}}, {{2, 1, 2, 1, 3, 2}, {3, 1, 2, 1, 2}}};
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div}) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      std::vector<In> in{{random_tensor(shapes[i].first, 10 + i, DType::Float32, -1, 2), true},
                         {random_tensor(shapes[i].second, 20 + i, DType::Float32, 0.5f, 2), i % 2 == 0}};
      expect_vulkan_matches_reference(node_graph(op, in), runtime_inputs(in), 1,
                                      std::string(ir::op_name(op)) + " " + shape_str(shapes[i].first) + " " +
                                          shape_str(shapes[i].second));
    }
  }
}

TEST(VulkanMatMul, MatMulGemmSoftmaxClip) {
  LOCKSTEP_REQUIRE_VULKAN();
  const std::vector<std::pair<Shape, Shape>> mm = {{{5, 7}, {7, 3}},       {{7}, {7, 4}},           {{3, 7}, {7}},
                                                   {{2, 5, 7}, {7, 6}},    {{2, 1, 3, 4}, {3, 4, 5}}, {{7}, {7}},
                                                   {{3, 70, 33}, {33, 90}}};
  for (size_t i = 0; i < mm.size(); ++i) {
    std::vector<In> in{{rnd(mm[i].first, i), true}, {rnd(mm[i].second, 10 + i), i % 2 == 1}};
    expect_vulkan_matches_reference(node_graph(Op::MatMul, in), runtime_inputs(in),
                                    mm[i].second.size() == 1 ? mm[i].second[0] : mm[i].second[mm[i].second.size() - 2],
                                    "MatMul " + shape_str(mm[i].first) + shape_str(mm[i].second));
  }
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Shape& c : {Shape{5}, Shape{4, 1}, Shape{4, 5}}) {
        Shape a = ta ? Shape{6, 4} : Shape{4, 6}, b = tb ? Shape{5, 6} : Shape{6, 5};
        std::vector<In> in{{rnd(a, 1), true}, {rnd(b, 2), false}, {rnd(c, 3), ta == 1}};
        expect_vulkan_matches_reference(
            node_graph(Op::Gemm, in, attrs({{"transA", int64_t{ta}}, {"transB", int64_t{tb}}, {"alpha", 0.5f}, {"beta", 2.0f}})),
            runtime_inputs(in), 6, "Gemm C" + shape_str(c));
      }
  std::vector<In> nobias{{rnd({3, 6}, 1), true}, {rnd({6, 2}, 2), true}};
  expect_vulkan_matches_reference(node_graph(Op::Gemm, nobias), runtime_inputs(nobias), 6, "Gemm without C");
  for (int64_t axis : {-1, 0, 1}) {
    std::vector<In> in{{random_tensor({3, 4, 9}, 4, DType::Float32, -5, 5), true}};
    expect_vulkan_matches_reference(node_graph(Op::Softmax, in, attrs({{"axis", axis}})), runtime_inputs(in), 9, "Softmax");
  }
  const Tensor lo = Tensor::scalar<float>(-0.25f), hi = Tensor::scalar<float>(0.5f);
  std::vector<In> both{{rnd({4, 17}, 5), true}, {lo, false}, {hi, true}};
  expect_vulkan_matches_reference(node_graph(Op::Clip, both), runtime_inputs(both), 1, "Clip");
  std::vector<In> low_only{{rnd({4, 17}, 5), true}, {lo, false}};
  expect_vulkan_matches_reference(node_graph(Op::Clip, low_only), runtime_inputs(low_only), 1, "Clip min only");
  std::vector<In> high_only{{rnd({4, 17}, 5), true}, {Tensor{}, false}, {hi, false}};
  expect_vulkan_matches_reference(node_graph(Op::Clip, high_only), runtime_inputs(high_only), 1, "Clip max only");
}

// A chain the pipeline fuses into a Conv's epilogue, and one longer than a dispatch's steps.
TEST(VulkanElementwise, FusedEpiloguesMatchUnfused) {
  LOCKSTEP_REQUIRE_VULKAN();
  ir::Graph g;
  auto value = [&](const std::string& name, Shape shape, Tensor constant = {}) {
    ir::Value v;
    v.name = name;
    v.shape = std::move(shape);
    v.constant = std::move(constant);
    return g.add_value(std::move(v));
  };
  auto node = [&](Op op, const std::string& name, std::vector<ir::ValueId> in, ir::ValueId out, ir::Attributes a = {}) {
    ir::Node n;
    n.op = op;
    n.name = name;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.attrs = std::move(a);
    g.nodes.push_back(std::move(n));
  };
  const Shape y{1, 8, 40};
  const ir::ValueId x = value("x", {1, 4, 40}), mask = value("mask", {1, 1, 40});
  g.inputs = {x, mask};
  ir::ValueId acc = value("conv", y);
  node(Op::Conv, "conv", {x, value("w", {8, 4, 3}, rnd({8, 4, 3}, 1)), value("b", {8}, rnd({8}, 2))}, acc,
       attrs({{"pads", std::vector<int64_t>{1, 1}}}));
  const Op ops[] = {Op::Add, Op::LeakyRelu, Op::Mul, Op::Tanh, Op::Sub, Op::Sigmoid, Op::Div, Op::Exp, Op::Mul, Op::Neg, Op::Add};
  for (size_t i = 0; i < std::size(ops); ++i) {
    const ir::ValueId out = value("s" + std::to_string(i), y);
    const std::string name = "step" + std::to_string(i);
    if (ops[i] == Op::Add) node(ops[i], name, {acc, value("c" + std::to_string(i), {8, 1}, rnd({8, 1}, 10 + i))}, out);
    else if (ops[i] == Op::Mul) node(ops[i], name, {mask, acc}, out);
    else if (ops[i] == Op::Sub || ops[i] == Op::Div) node(ops[i], name, {value("k" + std::to_string(i), {}, Tensor::scalar<float>(1.5f)), acc}, out);
    else if (ops[i] == Op::LeakyRelu) node(ops[i], name, {acc}, out, attrs({{"alpha", 0.2f}}));
    else node(ops[i], name, {acc}, out);
    acc = out;
  }
  g.outputs = {acc};
  const std::vector<Tensor> inputs{rnd({1, 4, 40}, 3), random_tensor({1, 1, 40}, 4, DType::Float32, 0.5f, 1)};
  const Tensor want = reference::evaluate(g, inputs).at(0);
  Options fused, unfused;
  unfused.fuse = false;
  const ir::Graph fg = prepare(Model::from_graph(g), fused), ug = prepare(Model::from_graph(g), unfused);
  ASSERT_EQ(fg.nodes.size(), 1u) << "the pipeline fuses the whole chain into the Conv";
  EXPECT_EQ(fg.nodes[0].epilogue.size(), std::size(ops));
  const Tensor a = vulkan::backend().compile(fg, fused)->run(inputs).at(0);
  const Tensor b = vulkan::backend().compile(ug, unfused)->run(inputs).at(0);
  cpu_test::expect_outputs_match({a}, {want}, 12, "fused", kVulkanRelL2, kVulkanAbsPerTerm);
  EXPECT_TRUE(same_bits(a, b)) << "a fused epilogue computes what the separate kernels compute";
}

TEST(VulkanDataMovement, SliceSplitConcatAndFriends) {
  LOCKSTEP_REQUIRE_VULKAN();
  const int64_t big = std::numeric_limits<int64_t>::max();
  struct SliceCase { std::vector<int64_t> starts, ends, axes, steps; };
  for (const auto& s : std::vector<SliceCase>{{{0, 1}, {3, big}, {0, 2}, {1, 2}},
                                              {{-1}, {-big}, {2}, {-1}},
                                              {{5, 2}, {0, 0}, {2, 1}, {-2, -1}},
                                              {{1}, {100}, {-1}, {3}}}) {
    std::vector<In> in{{rnd({3, 4, 11}, 1), true}, {ints(s.starts), false}, {ints(s.ends), false},
                       {ints(s.axes), false},    {ints(s.steps), false}};
    expect_vulkan_matches_reference(node_graph(Op::Slice, in), runtime_inputs(in), 1, "Slice");
  }
  {
    std::vector<In> in{{rnd({2, 144, 5}, 2), true}, {ints({72, 72}), false}};
    expect_vulkan_matches_reference(node_graph(Op::Split, in, attrs({{"axis", int64_t{1}}}), 2), runtime_inputs(in), 1, "Split");
    std::vector<In> in2{{rnd({7, 3}, 3), true}};
    expect_vulkan_matches_reference(node_graph(Op::Split, in2, attrs({{"axis", int64_t{0}}, {"num_outputs", int64_t{3}}}), 3),
                                    runtime_inputs(in2), 1, "Split num_outputs");
  }
  {
    std::vector<In> in{{rnd({2, 3, 4}, 1), true}, {rnd({2, 5, 4}, 2), false}, {rnd({2, 1, 4}, 3), true}};
    expect_vulkan_matches_reference(node_graph(Op::Concat, in, attrs({{"axis", int64_t{-2}}})), runtime_inputs(in), 1, "Concat");
  }
  {
    std::vector<In> in{{rnd({2, 3, 4}, 1), true}, {ints({4, -1}), false}};
    expect_vulkan_matches_reference(node_graph(Op::Reshape, in), runtime_inputs(in), 1, "Reshape");
    std::vector<In> f{{rnd({2, 3, 4}, 1), true}};
    expect_vulkan_matches_reference(node_graph(Op::Flatten, f, attrs({{"axis", int64_t{2}}})), runtime_inputs(f), 1, "Flatten");
    expect_vulkan_matches_reference(node_graph(Op::Identity, f), runtime_inputs(f), 1, "Identity");
    expect_vulkan_matches_reference(node_graph(Op::Transpose, f, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}})),
                                    runtime_inputs(f), 1, "Transpose");
    expect_vulkan_matches_reference(node_graph(Op::Transpose, f), runtime_inputs(f), 1, "Transpose default");
    std::vector<In> u{{rnd({2, 3}, 1), true}, {ints({0, 3}), false}};
    expect_vulkan_matches_reference(node_graph(Op::Unsqueeze, u), runtime_inputs(u), 1, "Unsqueeze");
    std::vector<In> q{{rnd({1, 3, 1, 2}, 1), true}, {ints({0, -2}), false}};
    expect_vulkan_matches_reference(node_graph(Op::Squeeze, q), runtime_inputs(q), 1, "Squeeze");
    std::vector<In> e{{rnd({3, 1}, 1), true}, {ints({2, 1, 4}), false}};
    expect_vulkan_matches_reference(node_graph(Op::Expand, e), runtime_inputs(e), 1, "Expand");
  }
  {  // 8-byte elements move as word pairs
    std::vector<In> in{{random_tensor({3, 4, 5}, 1, DType::Int64), true}, {ints({2, 0}), false}, {ints({0, big}), false},
                       {ints({2, 0}), false}, {ints({-1, 2}), false}};
    expect_vulkan_matches_reference(node_graph(Op::Slice, in), runtime_inputs(in), 1, "int64 Slice");
    std::vector<In> t{{random_tensor({3, 4}, 2, DType::Int32), true}};
    expect_vulkan_matches_reference(node_graph(Op::Transpose, t), runtime_inputs(t), 1, "int32 Transpose");
  }
  for (std::string mode : {"constant", "reflect", "edge"}) {
    std::vector<In> in{{rnd({1, 3, 6}, 5), true}, {ints({0, 1, 2, 0, 0, 3}), false}, {Tensor::scalar<float>(1.5f), false}};
    expect_vulkan_matches_reference(node_graph(Op::Pad, in, attrs({{"mode", mode}})), runtime_inputs(in), 1, "Pad " + mode);
    std::vector<In> wide{{rnd({2, 4}, 6), true}, {ints({3, 9, 2, 7}), false}};
    expect_vulkan_matches_reference(node_graph(Op::Pad, wide, attrs({{"mode", mode}})), runtime_inputs(wide), 1, "Pad wide " + mode);
    std::vector<In> crop{{rnd({1, 3, 9}, 7), true}, {ints({0, -1, 2, 0, 0, -3}), false}};
    expect_vulkan_matches_reference(node_graph(Op::Pad, crop, attrs({{"mode", mode}})), runtime_inputs(crop), 1, "Pad crop " + mode);
    std::vector<In> i64{{random_tensor({2, 5}, 8, DType::Int64, -1000, 1000), true}, {ints({1, 3, 2, -1}), false},
                        {Tensor::from_vector<int64_t>({}, {-(int64_t{1} << 40)}), false}};
    expect_vulkan_matches_reference(node_graph(Op::Pad, i64, attrs({{"mode", mode}})), runtime_inputs(i64), 1, "int64 Pad " + mode);
    std::vector<In> b{{random_tensor({3, 4}, 9, DType::Bool), true}, {ints({1, 0, 0, 2}), false}};
    expect_vulkan_matches_reference(node_graph(Op::Pad, b, attrs({{"mode", mode}})), runtime_inputs(b), 1, "bool Pad " + mode);
  }
}

// What vulkan does not run is refused by unsupported_reason (and compile), never half-run.
TEST(VulkanBackend, RefusesWhatItCannotRunWithAReason) {
  LOCKSTEP_REQUIRE_VULKAN();
  struct Case { ir::Graph g; const char* says; };
  std::vector<In> rank7{{rnd({1, 2, 1, 2, 1, 2, 2}, 1), true}};
  std::vector<In> d64{{random_tensor({4}, 1, DType::Float64), true}};
  std::vector<In> c3{{rnd({1, 2, 3, 3, 3}, 1), true}, {rnd({2, 2, 1, 1, 1}, 2), false}};
  std::vector<In> long_row{{rnd({2, 20000}, 1), true}};
  Case cases[] = {{node_graph(Op::Softmax, long_row), "llvmpipe's loop limit"},
                  {node_graph(Op::Relu, rank7), "rank > 6"},
                  {node_graph(Op::Tanh, d64), "float64"},
                  {node_graph(Op::Conv, c3), "3-D convolutions"}};
  for (const Case& c : cases) {
    const auto reason = vulkan::backend().unsupported_reason(c.g, c.g.nodes[0]);
    ASSERT_TRUE(reason.has_value()) << c.says;
    EXPECT_NE(reason->find(c.says), std::string::npos) << *reason;
    try {
      vulkan::backend().compile(c.g, Options{});
      ADD_FAILURE() << "compiled: " << c.says;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::UnsupportedOp) << e.what();
      EXPECT_EQ(e.node(), c.g.nodes[0].name);
    }
  }
}

TEST(VulkanBackend, ChecksInputsAndReportsTheDevice) {
  LOCKSTEP_REQUIRE_VULKAN();
  std::vector<In> in{{rnd({2, 3}, 1), true}};
  auto exe = vulkan::backend().compile(node_graph(Op::Tanh, in), Options{});
  EXPECT_EQ(exe->backend_name(), "vulkan");
  EXPECT_EQ(exe->kernel_implementations(), std::vector<std::string>{"vulkan:ew_program"});
  try {
    exe->run({rnd({3, 2}, 1)});
    ADD_FAILURE() << "ran with a wrong shape";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ShapeMismatch);
  }
  try {
    exe->run({});
    ADD_FAILURE() << "ran without inputs";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::MissingInput);
  }
  Options capped;
  capped.max_memory_bytes = 64;
  EXPECT_THROW(vulkan::backend().compile(node_graph(Op::Tanh, in), capped), Error);
  const std::string device = vulkan::device_description();
  EXPECT_NE(device.find('['), std::string::npos) << device;  // "name [driver]"
  std::printf("[ vulkan   ] device: %s\n", device.c_str());
}

// Taps see each node's output after its kernels; a test fault changes what later nodes read.
TEST(VulkanBackend, TapsAndFaultsRunTheSameKernels) {
  LOCKSTEP_REQUIRE_VULKAN();
  ir::Graph g = node_graph(Op::Tanh, {{rnd({64}, 1), true}});
  auto exe = vulkan::backend().compile(g, Options{});
  const std::vector<Tensor> inputs{rnd({64}, 1)};
  const Tensor plain = exe->run(inputs).at(0);
  Tensor tapped;
  RunOptions taps;
  taps.tap = [&](const ir::Node&, int, const Tensor& t) { tapped = t.clone(); };
  EXPECT_TRUE(same_bits(plain, exe->run(inputs, taps).at(0)));
  EXPECT_TRUE(same_bits(plain, tapped));
  RunOptions fault;
  fault.fault_for_testing = [](const ir::Node&, int, Tensor& t) { t.data<float>()[3] = 42.0f; };
  const Tensor faulted = exe->run(inputs, fault).at(0);
  EXPECT_EQ(faulted.data<float>()[3], 42.0f);
  EXPECT_TRUE(same_bits(plain, exe->run(inputs).at(0))) << "the next plain run is unaffected";
}

}  // namespace
}  // namespace lockstep::vulkan_test
