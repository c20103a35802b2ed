// Channel-slice views (backends/channel_views.h) on the CUDA backend: a WaveNet-like layer's gate
// halves and res/skip halves are addressed in place (their Slices keep no launch) and still match
// the float64 reference, give the bits of LOCKSTEP_CUDA_VIEWS=0, and a fault planted on a view
// reaches only its readers. The chooser itself is checked on laid-out plans without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "backends/channel_views.h"
#include "gpu/gpu_test_util.h"
#include "passes/pipeline.h"
#include "support/graph_check.h"

#ifdef LOCKSTEP_HAVE_CUDA
#include "backends/cuda/testing.h"
#include "core/npy.h"
#include "lockstep/lockstep.h"
#endif

namespace lockstep::gpu_test {
namespace {

using ir::Op;

constexpr size_t kArenaAlign = 256;  // the CUDA executor's slot alignment

struct Layer {
  ir::Graph g;
  int64_t n = 1, h = 16, t = 256;
  std::vector<Tensor> inputs() const {
    return {random_tensor({n, h, t}, 71), random_tensor({n, h, t}, 72)};
  }
};

// GraphBuilder leaves every value Float32: the CUDA backend sizes constants by their value's dtype.
void typed_constants(ir::Graph& g) {
  for (auto& v : g.values)
    if (v.constant.defined()) v.dtype = v.constant.dtype();
}

// x -> conv k3 -> y [n,2h,t]; a = y[:, :h], b = y[:, h:]; acts = tanh(a) * sigmoid(b);
// conv 1x1 -> rs [n,2h,t]; res = rs[:, :h], skip = rs[:, h:]; out = x + res, skip_out = skip + s.
// `skip_is_output`: the skip slice itself is a graph output too (so it must be copied).
Layer wavenet_layer(int64_t n, int64_t h, int64_t t, bool skip_is_output = false) {
  Layer l;
  l.n = n, l.h = h, l.t = t;
  ir::Graph& g = l.g;
  test::GraphBuilder b(g);
  const ir::ValueId x = b.value("x", {n, h, t}), s = b.value("s", {n, h, t});
  g.inputs = {x, s};
  const ir::ValueId w_in = b.value("w_in", {2 * h, h, 3}, random_tensor({2 * h, h, 3}, 73, DType::Float32, -0.3f, 0.3f));
  const ir::ValueId b_in = b.value("b_in", {2 * h}, random_tensor({2 * h}, 74));
  const ir::ValueId w_rs = b.value("w_rs", {2 * h, h, 1}, random_tensor({2 * h, h, 1}, 75, DType::Float32, -0.3f, 0.3f));
  const ir::ValueId y = b.value("y", {n, 2 * h, t}), rs = b.value("rs", {n, 2 * h, t});
  const ir::ValueId a = b.value("a", {n, h, t}), bb = b.value("b", {n, h, t}), ta = b.value("ta", {n, h, t}),
                    sb = b.value("sb", {n, h, t}), acts = b.value("acts", {n, h, t}), res = b.value("res", {n, h, t}),
                    skip = b.value("skip", {n, h, t}), out = b.value("out", {n, h, t}),
                    skip_out = b.value("skip_out", {n, h, t});
  auto slice = [&](const std::string& name, ir::ValueId from, int64_t s0, int64_t e0, ir::ValueId to) {
    return b.node(Op::Slice, name, {from, b.ints(name + "_s", {s0}), b.ints(name + "_e", {e0}), b.ints(name + "_a", {1})}, to);
  };
  ir::Node conv_in = b.node(Op::Conv, "conv_in", {x, w_in, b_in}, y);
  conv_in.attrs.set("pads", std::vector<int64_t>{1, 1});
  g.nodes = {conv_in,
             slice("slice_a", y, 0, h, a),
             slice("slice_b", y, h, 2 * h, bb),
             b.node(Op::Tanh, "tanh", {a}, ta),
             b.node(Op::Sigmoid, "sigmoid", {bb}, sb),
             b.node(Op::Mul, "gate", {ta, sb}, acts),
             b.node(Op::Conv, "conv_rs", {acts, w_rs}, rs),
             slice("slice_res", rs, 0, h, res),
             slice("slice_skip", rs, h, 2 * h, skip),
             b.node(Op::Add, "add_res", {x, res}, out),
             b.node(Op::Add, "add_skip", {skip, s}, skip_out)};
  g.outputs = {out, skip_out};
  if (skip_is_output) g.outputs.push_back(skip);
  typed_constants(g);
  return l;
}

ir::Graph planned(ir::Graph g) {
  passes::run_pipeline(g, {});
  return g;
}

// Every used value in its own 256-aligned slot, as the CUDA executor lays out a graph without a
// plan; constants get no pointer here (they are never sliced in place).
struct LaidOut {
  std::vector<std::byte> storage;
  std::vector<const std::byte*> ptr;
  std::vector<size_t> bytes;
};

LaidOut own_slots(const ir::Graph& g) {
  LaidOut l;
  std::vector<size_t> at(g.values.size());
  size_t cursor = 0;
  l.bytes.assign(g.values.size(), 0);
  for (size_t v = 0; v < g.values.size(); ++v) {
    l.bytes[v] = static_cast<size_t>(num_elements(g.values[v].shape)) * 4;  // float32 on the device
    at[v] = cursor;
    cursor += (l.bytes[v] + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
  }
  l.storage.resize(cursor + kArenaAlign);
  const auto addr = reinterpret_cast<uintptr_t>(l.storage.data());
  const std::byte* base = l.storage.data() + (kArenaAlign - addr % kArenaAlign) % kArenaAlign;
  l.ptr.assign(g.values.size(), nullptr);
  for (size_t v = 0; v < g.values.size(); ++v)
    if (!g.values[v].constant.defined()) l.ptr[v] = base + at[v];
  return l;
}

ir::ValueId output_of(const ir::Graph& g, const char* node) {
  const int k = g.find_node(node);
  return k < 0 ? ir::kNoValue : g.nodes[static_cast<size_t>(k)].outputs[0];
}

std::vector<std::string> views_of(const ir::Graph& g, const LaidOut& l) {
  std::vector<std::string> names;
  for (const auto& v : backends::choose_dense_views(g, l.ptr, l.bytes, kArenaAlign)) names.push_back(g.nodes[v.slice].name);
  return names;
}

using Names = std::vector<std::string>;

// Device-free: the chooser's rules on hand-made layouts.
TEST(ChannelViews, LayerInOwnSlotsTakesEveryChannelSlice) {
  const ir::Graph g = wavenet_layer(1, 16, 256).g;
  const LaidOut l = own_slots(g);
  const auto views = backends::choose_dense_views(g, l.ptr, l.bytes, kArenaAlign);
  ASSERT_EQ(views.size(), 4u);
  const Names want = {"slice_a", "slice_b", "slice_res", "slice_skip"};
  for (size_t i = 0; i < views.size(); ++i) {
    EXPECT_EQ(g.nodes[views[i].slice].name, want[i]);
    EXPECT_EQ(views[i].view, g.nodes[views[i].slice].outputs[0]);
    EXPECT_EQ(views[i].input, g.nodes[views[i].slice].inputs[0]);
    // Hand-worked: a second half starts h*t floats = 16*256*4 bytes into its input.
    EXPECT_EQ(views[i].byte_offset, i % 2 ? 16 * 256 * 4 : 0) << want[i];
  }
}

TEST(ChannelViews, RulesThatKeepTheCopy) {
  // Batch 2: a channel block is strided, not dense.
  EXPECT_EQ(views_of(wavenet_layer(2, 16, 256).g, own_slots(wavenet_layer(2, 16, 256).g)), Names{});
  {  // The skip slice is a graph output: it copies; its sibling res reads a disjoint range.
    const ir::Graph g = wavenet_layer(1, 16, 256, true).g;
    EXPECT_EQ(views_of(g, own_slots(g)), (Names{"slice_a", "slice_b", "slice_res"}));
  }
  {  // h*t*4 = 12*20*4 = 960 bytes, no multiple of 256: the second halves copy.
    const ir::Graph g = wavenet_layer(1, 12, 20).g;
    EXPECT_EQ(views_of(g, own_slots(g)), (Names{"slice_a", "slice_res"}));
  }
  {  // A third reader of y that is no Slice (tanh of the whole y): no view of y is alone.
    ir::Graph g = wavenet_layer(1, 16, 256).g;
    test::GraphBuilder b(g);
    const ir::ValueId y = output_of(g, "conv_in"), ty = b.value("ty", g.value(y).shape);
    g.nodes.push_back(b.node(Op::Tanh, "tanh_y", {y}, ty));
    g.outputs.push_back(ty);
    EXPECT_EQ(views_of(g, own_slots(g)), (Names{"slice_res", "slice_skip"}));
  }
  const ir::Graph g = wavenet_layer(1, 16, 256).g;
  const ir::ValueId y = output_of(g, "conv_in"), ta = output_of(g, "tanh");
  {  // tanh, a's last reader, writes over y's first half (in place on a): a copies, b stays.
    LaidOut l = own_slots(g);
    l.ptr[static_cast<size_t>(ta)] = l.ptr[static_cast<size_t>(y)];
    EXPECT_EQ(views_of(g, l), (Names{"slice_b", "slice_res", "slice_skip"}));
  }
  {  // tanh writes over y's second half before sigmoid reads b: b copies, a stays.
    LaidOut l = own_slots(g);
    l.ptr[static_cast<size_t>(ta)] = l.ptr[static_cast<size_t>(y)] + 16 * 256 * 4;
    EXPECT_EQ(views_of(g, l), (Names{"slice_a", "slice_res", "slice_skip"}));
  }
  {  // conv_rs reuses y's bytes after the last readers of a and b ran: every view stays.
    LaidOut l = own_slots(g);
    l.ptr[static_cast<size_t>(output_of(g, "conv_rs"))] = l.ptr[static_cast<size_t>(y)];
    EXPECT_EQ(views_of(g, l), (Names{"slice_a", "slice_b", "slice_res", "slice_skip"}));
  }
}

// A Slice of a view copies: the view's own slot, which it would address, is never written.
TEST(ChannelViews, SliceOfAViewCopies) {
  ir::Graph g;
  test::GraphBuilder b(g);
  const ir::ValueId x = b.value("x", {1, 32, 256}), a = b.value("a", {1, 16, 256}), q = b.value("q", {1, 8, 256}),
                    out = b.value("out", {1, 8, 256});
  g.inputs = {x};
  g.nodes = {b.node(Op::Slice, "slice_a", {x, b.ints("a_s", {0}), b.ints("a_e", {16}), b.ints("a_a", {1})}, a),
             b.node(Op::Slice, "slice_q", {a, b.ints("q_s", {8}), b.ints("q_e", {16}), b.ints("q_a", {1})}, q),
             b.node(Op::Tanh, "tanh", {q}, out)};
  g.outputs = {out};
  typed_constants(g);
  EXPECT_EQ(views_of(g, own_slots(g)), (Names{"slice_a"}));
}

// x [1, 2h, t] split into halves a, b along channels (the flows' coupling); out = tanh(a) * b.
// `x_also_read`: a Relu reads all of x too, so no half is alone.
ir::Graph channel_split_graph(int64_t h, int64_t t, int64_t axis = 1, bool x_also_read = false) {
  ir::Graph g;
  test::GraphBuilder b(g);
  const Shape half = axis == 1 ? Shape{1, h, t} : Shape{1, 2 * h, t / 2};
  const ir::ValueId x = b.value("x", {1, 2 * h, t}), a = b.value("a", half), c = b.value("c", half),
                    ta = b.value("ta", half), out = b.value("out", half);
  g.inputs = {x};
  ir::Node split = b.node(Op::Split, "split", {x, b.ints("sizes", {axis == 1 ? h : t / 2, axis == 1 ? h : t / 2})}, {a, c});
  split.attrs.set("axis", axis);
  g.nodes = {split, b.node(Op::Tanh, "tanh", {a}, ta), b.node(Op::Mul, "mul", {ta, c}, out)};
  g.outputs = {out};
  if (x_also_read) {
    const ir::ValueId r = b.value("r", {1, 2 * h, t});
    g.nodes.push_back(b.node(Op::Relu, "relu_x", {x}, r));
    g.outputs.push_back(r);
  }
  typed_constants(g);
  return g;
}

// A channel Split's outputs are views like channel Slices: each at its channel offset.
TEST(ChannelViews, ChannelSplitOutputsAreViews) {
  const ir::Graph g = channel_split_graph(16, 256);
  const LaidOut l = own_slots(g);
  const auto views = backends::choose_dense_views(g, l.ptr, l.bytes, kArenaAlign);
  ASSERT_EQ(views.size(), 2u);
  for (int o = 0; o < 2; ++o) {
    EXPECT_EQ(g.nodes[views[o].slice].name, "split");
    EXPECT_EQ(views[o].output, o);
    EXPECT_EQ(views[o].view, g.nodes[0].outputs[static_cast<size_t>(o)]);
    EXPECT_EQ(views[o].byte_offset, o * 16 * 256 * 4);
  }
  EXPECT_EQ(views_of(channel_split_graph(16, 256, 2), own_slots(channel_split_graph(16, 256, 2))), Names{});  // along time
  const ir::Graph shared = channel_split_graph(16, 256, 1, true);
  EXPECT_EQ(views_of(shared, own_slots(shared)), Names{});  // x also read whole: no half is alone
  LaidOut reused = own_slots(g);  // tanh writes over x's second half before mul reads c
  reused.ptr[static_cast<size_t>(g.find_value("ta"))] = reused.ptr[static_cast<size_t>(g.find_value("x"))] + 16 * 256 * 4;
  EXPECT_EQ(views_of(g, reused), Names{"split"});  // only a stays a view
}

#ifdef LOCKSTEP_HAVE_CUDA

// Views on vs LOCKSTEP_CUDA_VIEWS=0: the same kernels read the same values, so the same bits.
void expect_views_keep_bits(const ir::Graph& g, const std::vector<Tensor>& inputs, const std::string& what) {
  const std::vector<Tensor> got = cuda::backend().compile(g, Options{})->run(inputs);
  EnvVar off("LOCKSTEP_CUDA_VIEWS", "0");
  auto plain = cuda::backend().compile(g, Options{});
  EXPECT_EQ(cuda::views_taken(*plain), 0) << what;
  const std::vector<Tensor> copied = plain->run(inputs);
  ASSERT_EQ(got.size(), copied.size());
  for (size_t o = 0; o < got.size(); ++o) EXPECT_TRUE(same_bits(got[o], copied[o])) << what << ": output " << o;
}

TEST(CudaViews, WaveNetLayerMatchesReferenceWithoutSliceCopies) {
  LOCKSTEP_REQUIRE_GPU();
  for (int64_t t : {256, 1024}) {  // 1024: the k3 conv takes the tensor-core path too
    const Layer l = wavenet_layer(1, 16, t);
    const std::vector<Tensor> inputs = l.inputs();
    const std::string what = "wavenet layer T" + std::to_string(t);
    auto exe = cuda::backend().compile(l.g, Options{});  // no plan: every value in its own slot
    EXPECT_EQ(cuda::views_taken(*exe), 4) << what;
    // Reference, and safe mode (no views) gives the same bits.
    expect_cuda_matches_reference(l.g, inputs, 16 * 3, what);
    expect_views_keep_bits(l.g, inputs, what);
    const ir::Graph g = planned(l.g);  // the plan reuses y's bytes early: fewer views
    expect_cuda_matches_reference(g, inputs, 16 * 3, what + " planned");
    expect_views_keep_bits(g, inputs, what + " planned");
    // Taps (eager) read the views in place: the tapped run gives the graph run's bits and each
    // view's tap is the reference's slice.
    const std::vector<Tensor> got = exe->run(inputs);
    std::map<std::string, Tensor> taps, want;
    RunOptions ro;
    ro.tap = [&](const ir::Node& n, int, const Tensor& v) { taps[n.name] = v; };
    const std::vector<Tensor> tapped = exe->run(inputs, ro);
    for (size_t o = 0; o < got.size(); ++o) EXPECT_TRUE(same_bits(got[o], tapped[o])) << what << " tapped output " << o;
    reference::evaluate(l.g, inputs, [&](const ir::Node& n, int, const Tensor& v) { want[n.name] = v; });
    for (const char* name : {"slice_a", "slice_b", "slice_res", "slice_skip"}) {
      ASSERT_TRUE(taps.count(name) && want.count(name)) << name;
      cpu_test::expect_outputs_match({taps[name]}, {want[name]}, 16 * 3, what + " tap " + name, kGpuRelL2, kGpuAbsPerTerm);
    }
  }
}

TEST(CudaViews, ChannelSplitViewsMatchReferenceAndKeepBits) {
  LOCKSTEP_REQUIRE_GPU();
  const ir::Graph g = channel_split_graph(16, 256);
  const std::vector<Tensor> inputs = {random_tensor({1, 32, 256}, 77)};
  EXPECT_EQ(cuda::views_taken(*cuda::backend().compile(g, Options{})), 2);
  expect_cuda_matches_reference(g, inputs, 1, "channel split");
  expect_views_keep_bits(g, inputs, "channel split");
  const ir::Graph p = planned(g);
  expect_cuda_matches_reference(p, inputs, 1, "channel split planned");
  expect_views_keep_bits(p, inputs, "channel split planned");
}

TEST(CudaViews, SlicesThatMustCopyStillMatchReference) {
  LOCKSTEP_REQUIRE_GPU();
  struct Case {
    Layer l;
    int views;
    const char* what;
  };
  const Case cases[] = {{wavenet_layer(2, 16, 256), 0, "batch 2"},
                        {wavenet_layer(1, 16, 256, true), 3, "skip slice as graph output"},
                        {wavenet_layer(1, 12, 20), 2, "second halves off the 256-byte grid"}};
  for (const Case& c : cases) {
    EXPECT_EQ(cuda::views_taken(*cuda::backend().compile(c.l.g, Options{})), c.views) << c.what;
    expect_cuda_matches_reference(c.l.g, c.l.inputs(), c.l.h * 3, c.what);
    expect_views_keep_bits(c.l.g, c.l.inputs(), c.what);
  }
}

TEST(CudaViews, SharedModelsTakeViewsAndKeepBits) {
  LOCKSTEP_REQUIRE_GPU();
  int ran = 0;
  for (const char* name : {"vits_low_dec_T128", "vits_seed_dec_T256", "vits_seed_174", "vits_seed_flow_T1024"}) {
    const std::string stem = models_dir() + "/" + name;
    if (models_dir().empty() || !std::filesystem::exists(stem + ".onnx")) continue;
    const ir::Graph g = prepare(Model::load(stem + ".onnx"), Options{});
    std::vector<Tensor> inputs;
    for (ir::ValueId v : g.inputs) inputs.push_back(read_npy(stem + "." + g.value(v).name + ".npy"));
    const int views = cuda::views_taken(*cuda::backend().compile(g, Options{}));
    EXPECT_GT(views, 0) << name;
    std::printf("[cuda] %s: %d channel-slice views\n", name, views);
    expect_views_keep_bits(g, inputs, name);
    ++ran;
  }
  if (!ran) GTEST_SKIP() << "no shared models: set LOCKSTEP_MODELS_DIR";
}

// A fault planted on a view is written into its input's bytes: it must reach the view's readers
// exactly as on a copied slice, and nothing else. Oracle: the reference with an explicit Add.
TEST(CudaViews, FaultOnAViewReachesOnlyItsReaders) {
  LOCKSTEP_REQUIRE_GPU();
  const Layer l = wavenet_layer(1, 16, 256);
  const std::vector<Tensor> inputs = l.inputs();
  auto exe = cuda::backend().compile(l.g, Options{});
  ASSERT_EQ(cuda::views_taken(*exe), 4);
  const std::vector<std::string> faulted = {"slice_b", "slice_res"};
  RunOptions ro;
  ro.fault_for_testing = [&](const ir::Node& n, int, Tensor& v) {
    if (std::find(faulted.begin(), faulted.end(), n.name) == faulted.end()) return;
    for (int64_t i = 0; i < v.numel(); i += 3) v.data<float>()[i] += 0.25f;
  };
  const std::vector<Tensor> got = exe->run(inputs, ro);
  ir::Graph r = l.g;  // unplanned: inserting nodes is free
  test::GraphBuilder rb(r);
  for (const std::string& name : faulted) {
    const int at = r.find_node(name);
    ASSERT_GE(at, 0);
    const ir::ValueId id = r.nodes[static_cast<size_t>(at)].outputs[0];
    Tensor d(DType::Float32, r.value(id).shape);
    std::memset(d.raw(), 0, d.nbytes());
    for (int64_t i = 0; i < d.numel(); i += 3) d.data<float>()[i] = 0.25f;
    const ir::ValueId shifted = rb.value(name + "_shifted", d.shape());
    for (auto& n : r.nodes)
      for (auto& in : n.inputs)
        if (in == id) in = shifted;
    r.nodes.insert(r.nodes.begin() + at + 1, rb.node(Op::Add, name + "_fault", {id, rb.value(name + "_delta", d.shape(), d)}, shifted));
  }
  cpu_test::expect_outputs_match(got, reference::evaluate(r, inputs), 16 * 3, "faulted views", kGpuRelL2, kGpuAbsPerTerm);
  // The fault stays in that run: the next run is clean again.
  cpu_test::expect_outputs_match(exe->run(inputs), reference::evaluate(l.g, inputs), 16 * 3, "after the faulted run", kGpuRelL2,
                                 kGpuAbsPerTerm);
}

#endif  // LOCKSTEP_HAVE_CUDA

}  // namespace
}  // namespace lockstep::gpu_test
