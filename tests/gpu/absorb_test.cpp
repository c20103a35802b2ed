// Consumer absorption on the CUDA backend (Absorption, device.h): in graph replay the flows' split
// in-layer conv computes the WN gate in its merge, and the 1x1 res/skip conv stores the residual
// and skip sums straight from its registers; the absorbed nodes run only in eager runs. Checked
// against the float64 reference, against LOCKSTEP_CUDA_ABSORB=0's bits and the eager run's bits,
// with taps of the absorbed values, for the layouts that must not absorb, and on the shared flow.
#include <gtest/gtest.h>

#ifdef LOCKSTEP_HAVE_CUDA

#include <cstdlib>
#include <map>
#include <string>

#include "backends/cuda/conv_tc.h"
#include "backends/cuda/testing.h"
#include "core/npy.h"
#include "gpu/gpu_test_util.h"
#include "lockstep/lockstep.h"
#include "passes/pipeline.h"
#include "support/wavenet.h"

namespace lockstep::gpu_test {
namespace {

ir::Graph planned(const test::WnLayerOptions& o) {
  ir::Graph g = test::wn_layer(o);
  passes::run_pipeline(g, {});
  return g;
}

std::vector<Tensor> layer_inputs(const test::WnLayerOptions& o) {
  Tensor mask = random_tensor({1, 1, o.t}, 92, DType::Float32, 0.0f, 1.0f);
  for (int64_t i = o.t - o.t / 8; i < o.t; ++i) mask.data<float>()[i] = 0.0f;  // padded frames, as VITS masks them
  return {random_tensor({o.n, o.h, o.t}, 91), mask, random_tensor({o.n, o.h, o.t}, 93)};
}

// Absorbed (graph run) against the reference, against ABSORB=0 and against the eager (tapped)
// run, whose taps of every absorbed node match the reference's values.
void expect_absorbed_layer(const test::WnLayerOptions& o, int absorbed, const std::string& what) {
  const ir::Graph g = planned(o);
  const std::vector<Tensor> inputs = layer_inputs(o);
  auto exe = cuda::backend().compile(g, Options{});
  EXPECT_EQ(cuda::consumers_absorbed(*exe), absorbed) << what;
  const std::vector<Tensor> got = exe->run(inputs);
  std::map<std::string, Tensor> want;
  const std::vector<Tensor> ref = reference::evaluate(g, inputs, [&](const ir::Node& n, int, const Tensor& v) { want[n.name] = v; });
  cpu_test::expect_outputs_match(got, ref, o.h * o.k, what, kGpuRelL2, kGpuAbsPerTerm);
  {
    EnvVar off("LOCKSTEP_CUDA_ABSORB", "0");
    auto plain = cuda::backend().compile(g, Options{});
    EXPECT_EQ(cuda::consumers_absorbed(*plain), 0) << what;
    const std::vector<Tensor> unfused = plain->run(inputs);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], unfused[i])) << what << ": output " << i << " moved with ABSORB=0";
  }
  {  // the split ranges merged by a second kernel instead of inside a cluster: the same bits
    EnvVar off("LOCKSTEP_CUDA_CONV_TC_GATE_CLUSTER", "0");
    const std::vector<Tensor> merged = cuda::backend().compile(g, Options{})->run(inputs);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], merged[i])) << what << ": output " << i << " moved with GATE_CLUSTER=0";
  }
  std::map<std::string, Tensor> taps;
  RunOptions ro;
  ro.tap = [&](const ir::Node& n, int, const Tensor& v) { taps[n.name] = v.clone(); };
  const std::vector<Tensor> eager = exe->run(inputs, ro);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], eager[i])) << what << ": eager and graph runs differ, output " << i;
  for (const char* name : {"tanh", "sigmoid", "add_res", "add_skip", "slice_res"}) {
    if (!taps.count(name) || !want.count(name)) continue;  // absent when fused away by the pipeline
    cpu_test::expect_outputs_match({taps[name]}, {want[name]}, o.h * o.k, what + " tap " + name, kGpuRelL2, kGpuAbsPerTerm);
  }
  // A second graph run: same bits (no state left in the partial sums or the absorbed values).
  const std::vector<Tensor> again = exe->run(inputs);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], again[i])) << what << ": run to run, output " << i;
}

TEST(CudaAbsorb, WaveNetLayerGateAndResidualsMatchReferenceAndUnfusedBits) {
  LOCKSTEP_REQUIRE_GPU();
  test::WnLayerOptions o;  // 64 -> 128 k5 over 1024 steps: the split tensor-core conv
  expect_absorbed_layer(o, 2, "wn layer h64 T1024");
  o.n = 2;
  o.t = 512;
  expect_absorbed_layer(o, 2, "wn layer batch 2 T512");
  o.n = 1;
  o.h = 192;  // the ljs/low flows' width
  o.t = 1000;  // t_out not a multiple of the tiles
  expect_absorbed_layer(o, 2, "wn layer h192 T1000");
  // Short inputs split in 4 or 8 ranges: the gate conv merges them in a thread-block cluster (in
  // the default compiles; the ABSORB=0 and GATE_CLUSTER=0 compiles do not), with the same bits.
  const int clusters = cuda::gate_cluster_recorded_count();
  o.t = 128;
  expect_absorbed_layer(o, 2, "wn layer h192 T128 (8 ranges, cluster)");
  o.n = 2;
  o.h = 128;
  o.t = 260;  // a partial time tile
  expect_absorbed_layer(o, 2, "wn layer h128 batch 2 T260 (4 ranges, cluster)");
  EXPECT_EQ(cuda::gate_cluster_recorded_count() - clusters, 2);
}

TEST(CudaAbsorb, CasesThatKeepTheirKernels) {
  LOCKSTEP_REQUIRE_GPU();
  test::WnLayerOptions o;
  o.tanh_is_output = true;  // the gate's tanh is needed on its own: only the residuals absorb
  expect_absorbed_layer(o, 1, "tanh as graph output");
  o = {};
  o.skip_is_output = true;  // the skip range stays in the conv's output, the residual absorbs
  expect_absorbed_layer(o, 2, "skip slice as graph output");
  o = {};
  o.late_operand = true;  // relu(s) is made after the res/skip conv: the skip sum runs apart
  expect_absorbed_layer(o, 2, "operand made after the producer");
  o = {};
  o.t = 8192;  // a conv that fills the GPU unsplit: no merge to put the gate in
  expect_absorbed_layer(o, 1, "unsplit in-layer conv");
}

TEST(CudaAbsorb, SafeModeRunsEveryNode) {
  LOCKSTEP_REQUIRE_GPU();
  const test::WnLayerOptions o;
  const ir::Graph g = planned(o);
  Options safe;
  safe.safe = true;
  auto checked = cuda::backend().compile(g, safe);
  EXPECT_EQ(cuda::consumers_absorbed(*checked), 0);
  const std::vector<Tensor> inputs = layer_inputs(o);
  const std::vector<Tensor> a = checked->run(inputs), b = cuda::backend().compile(g, Options{})->run(inputs);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_bits(a[i], b[i])) << "safe mode changed output " << i;
}

// The shared flow: 16 gates and 12 residual/skip stores absorbed, the bits of ABSORB=0, within
// the models' bar against float64.
TEST(CudaAbsorb, SharedFlowAbsorbsItsGatesAndResiduals) {
  LOCKSTEP_REQUIRE_GPU();
  const std::string stem = models_dir() + "/vits_seed_flow_T1024";
  if (models_dir().empty() || !std::filesystem::exists(stem + ".onnx")) GTEST_SKIP() << "no shared models: set LOCKSTEP_MODELS_DIR";
  const ir::Graph g = prepare(Model::load(stem + ".onnx"), Options{});
  std::vector<Tensor> inputs;
  for (ir::ValueId v : g.inputs) inputs.push_back(read_npy(stem + "." + g.value(v).name + ".npy"));
  auto exe = cuda::backend().compile(g, Options{});
  const int absorbed = cuda::consumers_absorbed(*exe);
  std::printf("[cuda] vits_seed_flow_T1024: %d producers absorb their consumers\n", absorbed);
  EXPECT_EQ(absorbed, 28);
  // Views in place and the residual chain written over its input keep the arena near the graph's
  // liveness bound (issue 6's 1.2x), though absorbed values are written early.
  const int64_t arena = cuda::planned_arena_bytes(*exe);
  std::printf("[cuda] vits_seed_flow_T1024: arena %lld bytes, the graph's plan %lld, its lower bound %lld\n",
              static_cast<long long>(arena), static_cast<long long>(g.plan->arena_bytes),
              static_cast<long long>(g.plan->lower_bound_bytes));
  EXPECT_LE(static_cast<double>(arena), 1.2 * static_cast<double>(g.plan->lower_bound_bytes));
  const Tensor got = exe->run(inputs)[0];
  RunOptions eager;  // a tap runs node by node: the absorbed nodes' own kernels, in place
  eager.tap = [](const ir::Node&, int, const Tensor&) {};
  EXPECT_TRUE(same_bits(got, exe->run(inputs, eager)[0])) << "eager and graph runs differ";
  const cpu_test::Diff d = cpu_test::diff(got, read_npy(stem + ".ref64.npy"));
  EXPECT_TRUE(d.finite);
  EXPECT_LE(d.rel_l2, kModelRelL2);
  {
    EnvVar merge("LOCKSTEP_CUDA_CONV_TC_GATE_CLUSTER", "0");
    EXPECT_TRUE(same_bits(got, cuda::backend().compile(g, Options{})->run(inputs)[0])) << "the cluster merge changed the flow's bits";
  }
  EnvVar off("LOCKSTEP_CUDA_ABSORB", "0");
  EXPECT_TRUE(same_bits(got, cuda::backend().compile(g, Options{})->run(inputs)[0])) << "absorption changed the flow's bits";
}

}  // namespace
}  // namespace lockstep::gpu_test

#endif  // LOCKSTEP_HAVE_CUDA
