// Every cuda kernel against the float64 reference on small random graphs (the cpu tests' cases),
// each also run in safe mode. Skips without a CUDA device.
#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"
#ifdef LOCKSTEP_HAVE_CUDA
#include "backends/cuda/families.h"  // conv1x1_by_gemm: needs the CUDA headers
#endif

namespace lockstep::gpu_test {
namespace {

using ir::Op;

Tensor ints(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor rnd(Shape s, uint32_t seed) { return random_tensor(std::move(s), seed); }

TEST(CudaConv, RandomConv1dAnd2d) {
  LOCKSTEP_REQUIRE_GPU();
  std::mt19937 rng(1234);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int c = 0; c < 40; ++c) {
    const bool two_d = c % 4 == 3;
    const int group = c % 5 == 0 ? pick(2, 3) : 1;
    const int ci = group * pick(1, 9), co = group * pick(1, 9), k = pick(1, 5), d = pick(1, 3), s = pick(1, 3);
    const int t = pick(k * d, k * d + 40);
    Shape x{pick(1, 2), ci, t}, w{co, ci / group, k};
    std::vector<int64_t> pads{pick(0, 3), pick(0, 3)}, strides{s}, dil{d};
    if (two_d) {
      x.insert(x.begin() + 2, pick(k * d, k * d + 7));
      w.insert(w.begin() + 2, k);
      pads = {pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)};
      strides = {s, pick(1, 2)};
      dil = {d, 1};
    }
    const bool bias = c % 2 == 0;
    std::vector<In> in{{rnd(x, c), true}, {rnd(w, 100 + c), false}};
    if (bias) in.push_back({rnd({co}, 200 + c), false});
    ir::Attributes a = attrs({{"pads", pads}, {"strides", strides}, {"dilations", dil}, {"group", int64_t{group}}});
    if (c % 7 == 6) {
      a.erase("pads");
      a.set("auto_pad", std::string(c % 2 ? "SAME_UPPER" : "SAME_LOWER"));
      a.set("strides", std::vector<int64_t>(strides.size(), 1));
    }
    ir::Graph g = node_graph(Op::Conv, in, a);
    expect_cuda_matches_reference(g, runtime_inputs(in), ci / group * k * (two_d ? k : 1),
                             "conv case " + std::to_string(c) + " x" + shape_str(x) + " w" + shape_str(w));
  }
}

TEST(CudaConv, RuntimeWeights) {
  LOCKSTEP_REQUIRE_GPU();
  std::vector<In> in{{rnd({1, 4, 17}, 1), true}, {rnd({6, 2, 3}, 2), true}, {rnd({6}, 3), true}};
  ir::Graph g = node_graph(Op::Conv, in, attrs({{"group", int64_t{2}}, {"pads", std::vector<int64_t>{1, 1}}}));
  expect_cuda_matches_reference(g, runtime_inputs(in), 6);
}

#ifdef LOCKSTEP_HAVE_CUDA
// 1x1 convs that conv_ffma.cu does not take (2-D, runtime weights; all of them with
// LOCKSTEP_CUDA_CONV_FFMA=0) run as one SGEMM per batch item in strict fp32: the routing rule,
// then accuracy, same bits and safe mode through expect_cuda_matches_reference.
TEST(CudaConv, OneByOneConvsRunAsSgemm) {
  auto conv = [](Shape x, Shape w, ir::Attributes a, bool bias, bool runtime_w, uint32_t seed) {
    std::vector<In> in{{rnd(x, seed), true}, {rnd(w, seed + 1), runtime_w}};
    if (bias) in.push_back({rnd({w[0]}, seed + 2), false});
    return std::make_pair(node_graph(Op::Conv, in, a), in);
  };
  const std::vector<int64_t> no_pads{0, 0};
  // Not 1x1, strided, padded, grouped: cuDNN keeps them; tf32 mode too.
  struct Rejected { Shape w; ir::Attributes a; const char* why; };
  const Rejected rejected[] = {{{4, 8, 3}, {}, "kernel 3"},
                               {{4, 8, 1}, attrs({{"strides", std::vector<int64_t>{2}}}), "stride 2"},
                               {{4, 8, 1}, attrs({{"pads", std::vector<int64_t>{1, 1}}}), "padded"},
                               {{4, 4, 1}, attrs({{"group", int64_t{2}}}), "grouped"}};
  for (const Rejected& r : rejected) {
    const ir::Graph g = conv({1, 8, 16}, r.w, r.a, false, false, 1).first;
    EXPECT_FALSE(cuda::conv1x1_by_gemm(g, g.nodes[0], cuda::Precision::kFp32)) << r.why;
  }
  const ir::Graph plain = conv({1, 8, 16}, {4, 8, 1}, {}, false, false, 1).first;
  EXPECT_TRUE(cuda::conv1x1_by_gemm(plain, plain.nodes[0], cuda::Precision::kFp32));
  EXPECT_FALSE(cuda::conv1x1_by_gemm(plain, plain.nodes[0], cuda::Precision::kTf32));
  LOCKSTEP_REQUIRE_GPU();
  setenv("LOCKSTEP_CUDA_CONV_FFMA", "0", 1);  // the rank-3 constant-weight cases would take conv_ffma.cu
  struct Case { Shape x, w; bool bias, runtime_w; };
  const Case cases[] = {{{1, 96, 1024}, {192, 96, 1}, true, false},  {{1, 192, 1024}, {96, 192, 1}, true, false},
                        {{3, 64, 100}, {72, 64, 1}, true, false},    {{2, 5, 7}, {3, 5, 1}, false, false},
                        {{2, 6, 9, 11}, {4, 6, 1, 1}, true, false},  {{1, 16, 33}, {8, 16, 1}, true, true}};
  uint32_t seed = 500;
  for (const Case& c : cases) {
    auto [g, in] = conv(c.x, c.w, attrs({{"pads", c.x.size() == 3 ? no_pads : std::vector<int64_t>{0, 0, 0, 0}}}), c.bias, c.runtime_w,
                        seed += 10);
    ASSERT_TRUE(cuda::conv1x1_by_gemm(g, g.nodes[0], cuda::Precision::kFp32)) << shape_str(c.x);
    expect_cuda_matches_reference(g, runtime_inputs(in), c.w[1], "1x1 conv x" + shape_str(c.x));
  }
  unsetenv("LOCKSTEP_CUDA_CONV_FFMA");
}

// Convs with at most 4 output channels (conv_post) run as a direct FMA kernel: the routing rule,
// then accuracy against float64 (the generic GPU bars and a tighter one), a fused Tanh epilogue,
// the same bits on a second run and in safe mode.
TEST(CudaConv, NarrowOutputConvsRunDirect) {
  struct Case { Shape x, w; std::vector<int64_t> pads; int64_t dil; const char* auto_pad; bool bias, runtime_w, tanh; };
  auto build = [](const Case& c, uint32_t seed, std::vector<In>& in, ir::Attributes a = {}) {
    in = {{rnd(c.x, seed), true}, {rnd(c.w, seed + 1), c.runtime_w}};
    if (c.bias) in.push_back({rnd({c.w[0]}, seed + 2), false});
    a.set("dilations", std::vector<int64_t>(c.x.size() - 2, c.dil));
    if (c.auto_pad) a.set("auto_pad", std::string(c.auto_pad));
    else a.set("pads", c.pads);
    ir::Graph g = node_graph(Op::Conv, in, a);
    if (c.tanh) g.nodes[0].epilogue = {ir::EpilogueStep{Op::Tanh, ir::kNoValue, false, 0.0f, "tanh"}};
    return g;
  };
  std::vector<In> in;
  const Case post{{1, 32, 4096}, {1, 32, 7}, {3, 3}, 1, nullptr, true, false, true};
  const ir::Graph g = build(post, 1, in);
  EXPECT_TRUE(cuda::conv_narrow_eligible(g, g.nodes[0], cuda::Precision::kFp32));
  EXPECT_TRUE(cuda::conv_narrow_eligible(g, g.nodes[0], cuda::Precision::kTf32));  // exact fp32 there too
  EXPECT_FALSE(cuda::conv_narrow_eligible(g, g.nodes[0], cuda::Precision::kFp16));
  setenv("LOCKSTEP_CUDA_CONV_NARROW", "0", 1);
  EXPECT_FALSE(cuda::conv_narrow_eligible(g, g.nodes[0], cuda::Precision::kFp32));
  unsetenv("LOCKSTEP_CUDA_CONV_NARROW");
  struct Rejected { Case c; ir::Attributes extra; const char* why; };
  const Rejected rejected[] = {{{{1, 8, 64}, {5, 8, 3}, {1, 1}, 1, nullptr, true, false, false}, {}, "5 output channels"},
                               {{{1, 8, 64}, {2, 8, 3}, {1, 1}, 1, nullptr, true, false, false}, attrs({{"strides", std::vector<int64_t>{2}}}), "stride 2"},
                               {{{1, 8, 64}, {2, 4, 3}, {1, 1}, 1, nullptr, true, false, false}, attrs({{"group", int64_t{2}}}), "grouped"},
                               {{{1, 8, 6, 64}, {2, 8, 1, 3}, {0, 1, 0, 1}, 1, nullptr, true, false, false}, {}, "2-D"}};
  for (const Rejected& r : rejected) {
    const ir::Graph h = build(r.c, 2, in, r.extra);
    EXPECT_FALSE(cuda::conv_narrow_eligible(h, h.nodes[0], cuda::Precision::kFp32)) << r.why;
  }
  LOCKSTEP_REQUIRE_GPU();
  constexpr double kNarrowRelL2 = 1e-6;  // one FMA chain of C_in*k terms per output
  const Case cases[] = {
      {{1, 32, 8195}, {1, 32, 7}, {3, 3}, 1, nullptr, true, false, true},       // low/ljs conv_post (odd T), + Tanh
      {{2, 8, 1000}, {1, 8, 7}, {3, 3}, 1, nullptr, true, false, false},        // seed conv_post, batch 2
      {{1, 16, 3000}, {4, 16, 11}, {25, 25}, 5, nullptr, false, false, false},  // 4 outputs, k11 d5, no bias
      {{1, 3, 37}, {2, 3, 3}, {0, 2}, 1, nullptr, true, false, false},          // asymmetric pads, C_in 3
      {{1, 64, 700}, {3, 64, 5}, {}, 2, "SAME_UPPER", true, true, false},        // runtime weights, auto_pad
      {{1, 4, 5000}, {1, 4, 3}, {2000, 2000}, 2000, nullptr, true, false, false},  // long reach: one row per pass
      {{1, 512, 600}, {2, 512, 3}, {1, 1}, 1, nullptr, true, false, true},       // K = 1536
  };
  uint32_t seed = 600;
  for (const Case& c : cases) {
    const ir::Graph h = build(c, seed += 10, in);
    const std::string what = "narrow conv x" + shape_str(c.x) + " w" + shape_str(c.w);
    ASSERT_TRUE(cuda::conv_narrow_eligible(h, h.nodes[0], cuda::Precision::kFp32)) << what;
    const std::vector<Tensor> inputs = runtime_inputs(in);
    expect_cuda_matches_reference(h, inputs, c.w[1] * c.w[2], what);
    auto exe = cuda::backend().compile(h, Options{});
    const Tensor got = exe->run(inputs)[0];
    const cpu_test::Diff d = cpu_test::diff(got, reference::evaluate(h, inputs)[0]);
    EXPECT_LE(d.rel_l2, kNarrowRelL2) << what;
    EXPECT_TRUE(same_bits(got, exe->run(inputs)[0])) << what << ": a second run changed the bits";
    std::printf("[cuda] %s: rel L2 %.3g vs float64\n", what.c_str(), d.rel_l2);
  }
}
#endif  // LOCKSTEP_HAVE_CUDA

TEST(CudaConvTranspose, RandomHifiGanStyleAndOutputPadding) {
  LOCKSTEP_REQUIRE_GPU();
  std::mt19937 rng(99);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int c = 0; c < 30; ++c) {
    const bool two_d = c % 5 == 4;
    const int group = c % 6 == 0 ? 2 : 1;
    const int ci = group * pick(1, 6), co = group * pick(1, 6), s = pick(1, 8), k = pick(1, 2 * s + 1);
    const int d = c % 4 == 1 ? 2 : 1;
    Shape x{1, ci, pick(1, 20)}, w{ci, co / group, k};
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
    std::vector<In> in{{rnd(x, c), true}, {rnd(w, 50 + c), false}, {rnd({co}, 70 + c), false}};
    ir::Graph g = node_graph(Op::ConvTranspose, in,
                             attrs({{"pads", pads}, {"strides", strides}, {"dilations", dil},
                                    {"output_padding", opad}, {"group", int64_t{group}}}));
    expect_cuda_matches_reference(g, runtime_inputs(in), ci * k, "convtranspose case " + std::to_string(c));
  }
}

TEST(CudaElementwise, UnaryAndBinaryWithBroadcasting) {
  LOCKSTEP_REQUIRE_GPU();
  for (Op op : {Op::Tanh, Op::Sigmoid, Op::Relu, Op::Exp, Op::Neg, Op::Identity}) {
    std::vector<In> in{{random_tensor({3, 5, 37}, 7, DType::Float32, -6, 6), true}};
    expect_cuda_matches_reference(node_graph(op, in), runtime_inputs(in), 1, ir::op_name(op));
  }
  {
    std::vector<In> in{{random_tensor({2, 9}, 8, DType::Float32, 0, 4), true}};
    expect_cuda_matches_reference(node_graph(Op::Sqrt, in), runtime_inputs(in), 1, "Sqrt");
    std::vector<In> lr{{rnd({4, 33}, 9), true}};
    expect_cuda_matches_reference(node_graph(Op::LeakyRelu, lr, attrs({{"alpha", 0.1f}})), runtime_inputs(lr), 1, "LeakyRelu");
  }
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{1, 72, 64}, {1, 72, 64}}, {{1, 72, 64}, {72, 1}}, {{1, 72, 64}, {1, 1, 64}}, {{2, 3, 5}, {}},
      {{3, 1, 5}, {1, 4, 1}},     {{5}, {2, 3, 5}},       {{2, 1, 3, 1}, {4, 1, 2}}};
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow}) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      float lo = op == Op::Pow ? 0.5f : -1.0f;
      std::vector<In> in{{random_tensor(shapes[i].first, 10 + i, DType::Float32, lo, 2), true},
                         {random_tensor(shapes[i].second, 20 + i, DType::Float32, 0.5f, 2), i % 2 == 0}};
      expect_cuda_matches_reference(node_graph(op, in), runtime_inputs(in), 1,
                               std::string(ir::op_name(op)) + " " + shape_str(shapes[i].first) + " " +
                                   shape_str(shapes[i].second));
    }
  }
  {
    std::vector<In> in{{random_tensor({4, 6}, 3, DType::Int64), true}, {random_tensor({6}, 4, DType::Int64), true}};
    expect_cuda_matches_reference(node_graph(Op::Add, in), runtime_inputs(in), 1, "int64 Add");
    expect_cuda_matches_reference(node_graph(Op::Mul, in), runtime_inputs(in), 1, "int64 Mul");
  }
}

TEST(CudaElementwise, EqualWhereCast) {
  LOCKSTEP_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Int64, DType::Int32, DType::Bool}) {
    std::vector<In> in{{random_tensor({3, 8}, 1, dt, -1, 1), true}, {random_tensor({8}, 1, dt, -1, 1), true}};
    expect_cuda_matches_reference(node_graph(Op::Equal, in), runtime_inputs(in), 1, std::string("Equal ") + dtype_name(dt));
  }
  for (DType dt : {DType::Float32, DType::Int64}) {
    std::vector<In> in{{random_tensor({2, 1, 7}, 5, DType::Bool), true},
                       {random_tensor({3, 7}, 6, dt), true},
                       {random_tensor({2, 3, 1}, 7, dt), true}};
    expect_cuda_matches_reference(node_graph(Op::Where, in), runtime_inputs(in), 1, std::string("Where ") + dtype_name(dt));
  }
  const std::vector<std::pair<DType, int64_t>> targets = {
      {DType::Float32, 1}, {DType::Int32, 6}, {DType::Int64, 7}, {DType::Bool, 9}};
  for (DType from : {DType::Float32, DType::Int64, DType::Int32, DType::Bool})
    for (auto [to, code] : targets) {
      std::vector<In> in{{random_tensor({2, 9}, 11, from, -3, 3), true}};
      expect_cuda_matches_reference(node_graph(Op::Cast, in, attrs({{"to", code}})), runtime_inputs(in), 1,
                               std::string("Cast ") + dtype_name(from) + "->" + dtype_name(to));
    }
}

TEST(CudaMatMul, MatMulGemmSoftmax) {
  LOCKSTEP_REQUIRE_GPU();
  const std::vector<std::pair<Shape, Shape>> mm = {
      {{5, 7}, {7, 3}}, {{7}, {7, 4}}, {{3, 7}, {7}}, {{2, 5, 7}, {7, 6}}, {{2, 1, 3, 4}, {3, 4, 5}}};
  for (size_t i = 0; i < mm.size(); ++i) {
    std::vector<In> in{{rnd(mm[i].first, i), true}, {rnd(mm[i].second, 10 + i), i % 2 == 1}};
    expect_cuda_matches_reference(node_graph(Op::MatMul, in), runtime_inputs(in), mm[i].second.size() == 1 ? mm[i].second[0] : mm[i].second[mm[i].second.size() - 2],
                             "MatMul " + shape_str(mm[i].first) + shape_str(mm[i].second));
  }
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      Shape a = ta ? Shape{6, 4} : Shape{4, 6}, b = tb ? Shape{5, 6} : Shape{6, 5};
      std::vector<In> in{{rnd(a, 1), true}, {rnd(b, 2), false}, {rnd({5}, 3), false}};
      expect_cuda_matches_reference(
          node_graph(Op::Gemm, in, attrs({{"transA", int64_t{ta}}, {"transB", int64_t{tb}}, {"alpha", 0.5f}, {"beta", 2.0f}})),
          runtime_inputs(in), 6, "Gemm");
    }
  for (int64_t axis : {-1, 0, 1}) {
    std::vector<In> in{{random_tensor({3, 4, 9}, 4, DType::Float32, -5, 5), true}};
    expect_cuda_matches_reference(node_graph(Op::Softmax, in, attrs({{"axis", axis}})), runtime_inputs(in), 9, "Softmax");
  }
}

TEST(CudaDataMovement, SliceSplitConcatAndFriends) {
  LOCKSTEP_REQUIRE_GPU();
  const int64_t big = std::numeric_limits<int64_t>::max();
  struct SliceCase { std::vector<int64_t> starts, ends, axes, steps; };
  for (const auto& s : std::vector<SliceCase>{{{0, 1}, {3, big}, {0, 2}, {1, 2}},
                                              {{-1}, {-big}, {2}, {-1}},
                                              {{5, 2}, {0, 0}, {2, 1}, {-2, -1}},
                                              {{1}, {100}, {-1}, {3}}}) {
    std::vector<In> in{{rnd({3, 4, 11}, 1), true}, {ints(s.starts), false}, {ints(s.ends), false},
                       {ints(s.axes), false},    {ints(s.steps), false}};
    expect_cuda_matches_reference(node_graph(Op::Slice, in), runtime_inputs(in), 1, "Slice");
  }
  {
    std::vector<In> in{{rnd({2, 144, 5}, 2), true}, {ints({72, 72}), false}};
    expect_cuda_matches_reference(node_graph(Op::Split, in, attrs({{"axis", int64_t{1}}}), 2), runtime_inputs(in), 1, "Split");
    std::vector<In> in2{{rnd({7, 3}, 3), true}};
    expect_cuda_matches_reference(node_graph(Op::Split, in2, attrs({{"axis", int64_t{0}}, {"num_outputs", int64_t{3}}}), 3),
                             runtime_inputs(in2), 1, "Split num_outputs");
  }
  {
    std::vector<In> in{{rnd({2, 3, 4}, 1), true}, {rnd({2, 5, 4}, 2), false}, {rnd({2, 1, 4}, 3), true}};
    expect_cuda_matches_reference(node_graph(Op::Concat, in, attrs({{"axis", int64_t{-2}}})), runtime_inputs(in), 1, "Concat");
  }
  {
    std::vector<In> in{{rnd({2, 3, 4}, 1), true}, {ints({4, -1}), false}};
    expect_cuda_matches_reference(node_graph(Op::Reshape, in), runtime_inputs(in), 1, "Reshape");
    std::vector<In> f{{rnd({2, 3, 4}, 1), true}};
    expect_cuda_matches_reference(node_graph(Op::Flatten, f, attrs({{"axis", int64_t{2}}})), runtime_inputs(f), 1, "Flatten");
    expect_cuda_matches_reference(node_graph(Op::Transpose, f, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}})),
                             runtime_inputs(f), 1, "Transpose");
    expect_cuda_matches_reference(node_graph(Op::Transpose, f), runtime_inputs(f), 1, "Transpose default");
    std::vector<In> u{{rnd({2, 3}, 1), true}, {ints({0, 3}), false}};
    expect_cuda_matches_reference(node_graph(Op::Unsqueeze, u), runtime_inputs(u), 1, "Unsqueeze");
    std::vector<In> q{{rnd({1, 3, 1, 2}, 1), true}, {ints({0, -2}), false}};
    expect_cuda_matches_reference(node_graph(Op::Squeeze, q), runtime_inputs(q), 1, "Squeeze");
    std::vector<In> e{{rnd({3, 1}, 1), true}, {ints({2, 1, 4}), false}};
    expect_cuda_matches_reference(node_graph(Op::Expand, e), runtime_inputs(e), 1, "Expand");
  }
  for (std::string mode : {"constant", "reflect", "edge"}) {
    std::vector<In> in{{rnd({1, 3, 6}, 5), true}, {ints({0, 1, 2, 0, 0, 3}), false},
                       {Tensor::scalar<float>(1.5f), false}};
    expect_cuda_matches_reference(node_graph(Op::Pad, in, attrs({{"mode", mode}})), runtime_inputs(in), 1, "Pad " + mode);
  }
  for (int64_t axis : {0, 1, -1}) {
    Tensor idx = Tensor::from_vector<int64_t>({2, 2}, {0, -1, 1, 0});
    std::vector<In> in{{rnd({3, 4, 2}, 6), true}, {idx, true}};
    expect_cuda_matches_reference(node_graph(Op::Gather, in, attrs({{"axis", axis}})), runtime_inputs(in), 1, "Gather");
  }
}

TEST(CudaShapeOps, ShapeConstantOfShapeRange) {
  LOCKSTEP_REQUIRE_GPU();
  std::vector<In> s{{rnd({2, 3, 5}, 1), true}};
  expect_cuda_matches_reference(node_graph(Op::Shape, s), runtime_inputs(s), 1, "Shape");
  expect_cuda_matches_reference(node_graph(Op::Shape, s, attrs({{"start", int64_t{1}}, {"end", int64_t{-1}}})),
                           runtime_inputs(s), 1, "Shape start/end");
  std::vector<In> c{{ints({2, 3}), false}};
  expect_cuda_matches_reference(node_graph(Op::ConstantOfShape, c, attrs({{"value", Tensor::from_vector<int64_t>({1}, {7})}})),
                           runtime_inputs(c), 1, "ConstantOfShape");
  // The fill kernel in every device element size, past 2^53 in int64 (no trip through double).
  std::vector<In> big{{ints({3, 40000}), false}};
  for (const Tensor& value : {Tensor::from_vector<float>({1}, {-2.5f}), Tensor::from_vector<int64_t>({1}, {(int64_t{1} << 60) + 1}),
                              Tensor::from_vector<int32_t>({1}, {-123456}), Tensor::from_vector<bool>({1}, {true})})
    expect_cuda_matches_reference(node_graph(Op::ConstantOfShape, big, attrs({{"value", value}})), runtime_inputs(big), 1,
                                  std::string("ConstantOfShape ") + dtype_name(value.dtype()));
  expect_cuda_matches_reference(node_graph(Op::ConstantOfShape, big), runtime_inputs(big), 1, "ConstantOfShape, no value");
  std::vector<In> r{{Tensor::scalar<int64_t>(2), false}, {Tensor::scalar<int64_t>(11), false},
                    {Tensor::scalar<int64_t>(3), false}};
  expect_cuda_matches_reference(node_graph(Op::Range, r), runtime_inputs(r), 1, "Range int64");
  std::vector<In> rf{{Tensor::scalar<float>(0.5f), false}, {Tensor::scalar<float>(3.0f), false},
                     {Tensor::scalar<float>(0.25f), false}};
  expect_cuda_matches_reference(node_graph(Op::Range, rf), runtime_inputs(rf), 1, "Range float");
}

}  // namespace
}  // namespace lockstep::gpu_test
