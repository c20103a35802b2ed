// The suite's executables capture their graph at the first run (LOCKSTEP_CUDA_CAPTURE_FIRST=1,
// set before any test compiles): most tests run an executable once and compare bits between
// configurations, and under the default (a first run streams the graph's launches uncaptured)
// they would never exercise the captured graph. The default itself is tested below, on whole
// models, against node-by-node runs too (LOCKSTEP_CUDA_EAGER_NODES=1: every node's own kernels).
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/npy.h"
#include "gpu/gpu_test_util.h"

namespace lockstep::gpu_test {
namespace {

const bool kCaptureFirst = [] {
  setenv("LOCKSTEP_CUDA_CAPTURE_FIRST", "1", 0);
  return true;
}();

// The shared models under the default: the first (eager) run, the second (captured) and a
// replay give the same bits, and those of an executable that captured at its first run.
TEST(CudaFirstRun, EagerFirstRunThenGraphGiveTheSameBitsOnTheSharedModels) {
  LOCKSTEP_REQUIRE_GPU();
  ASSERT_TRUE(kCaptureFirst);
  const std::string dir = models_dir();
  if (dir.empty()) GTEST_SKIP() << "no shared models: set LOCKSTEP_MODELS_DIR";
  int ran = 0;
  for (const char* name : {"vits_seed_174", "vits_seed_flow_T1024", "vits_seed_dec_T256"}) {
    const std::string stem = dir + "/" + name;
    if (!std::filesystem::exists(stem + ".onnx")) continue;
    Model model = Model::load(stem + ".onnx");
    setenv("LOCKSTEP_CUDA_CAPTURE_FIRST", "0", 1);
    std::unique_ptr<Executable> lazy = compile(model, "cuda");
    setenv("LOCKSTEP_CUDA_CAPTURE_FIRST", "1", 1);  // back to the suite's setting
    std::vector<Tensor> inputs;
    for (ir::ValueId v : lazy->graph().inputs) inputs.push_back(read_npy(stem + "." + lazy->graph().value(v).name + ".npy"));
    const Tensor eager = lazy->run(inputs).at(0).clone();
    const Tensor captured = lazy->run(inputs).at(0).clone();
    const Tensor replayed = lazy->run(inputs).at(0).clone();
    const Tensor graph_first = compile(model, "cuda")->run(inputs).at(0).clone();
    setenv("LOCKSTEP_CUDA_CAPTURE_FIRST", "0", 1);
    setenv("LOCKSTEP_CUDA_EAGER_NODES", "1", 1);
    const Tensor node_by_node = compile(model, "cuda")->run(inputs).at(0).clone();
    unsetenv("LOCKSTEP_CUDA_EAGER_NODES");
    setenv("LOCKSTEP_CUDA_CAPTURE_FIRST", "1", 1);
    EXPECT_TRUE(same_bits(eager, captured)) << name << ": the eager first run and the captured graph differ";
    EXPECT_TRUE(same_bits(captured, replayed)) << name;
    EXPECT_TRUE(same_bits(eager, graph_first)) << name << ": differs from an executable that captured at once";
    EXPECT_TRUE(same_bits(eager, node_by_node)) << name << ": differs from a run of every node's own kernels";
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "none of the shared models is in " << dir;
}

}  // namespace
}  // namespace lockstep::gpu_test
