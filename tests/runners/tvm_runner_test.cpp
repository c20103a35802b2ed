// The TVM Relax (LLVM CPU) runner: agrees with the reference on the report's 174-node graph, and
// external bisection through it names a planted fault. SKIPs (with a message) when no Python can
// import tvm — see runners/README.md for the pinned packages.
#include <gtest/gtest.h>

#include "core/npy.h"
#include "diff/external_bisect.h"
#include "runners/python_env.h"
#include "support/fixtures.h"

namespace lockstep::diff {
namespace {

class TvmRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = test::find_python("tvm onnx numpy", "LOCKSTEP_TVM_PYTHON");
    if (python_.empty())
      GTEST_SKIP() << "no python3 that imports tvm (pip install apache-tvm==0.25.0.post1 "
                      "apache-tvm-ffi==0.1.12 "
                      "onnx numpy; or set LOCKSTEP_TVM_PYTHON): the TVM runner is NOT tested";
    model_ = test::shared_model("vits_seed_174");
    std::string base = test::shared_models_dir() + "/vits_seed_174";
    inputs_ = {read_npy(base + ".z_p.npy"), read_npy(base + ".y_mask.npy")};
  }
  std::string command() const { return python_ + " " + test::runners_dir() + "/tvm_runner.py"; }
  std::string python_, model_;
  std::vector<Tensor> inputs_;
};

TEST_F(TvmRunner, AgreesWithTheReferenceOnTheReportGraph) {
  ExternalBisectResult r =
      bisect_external(model_, Runner::backend("reference"), Runner::command(command()), inputs_);
  EXPECT_FALSE(r.diverged) << format_external_bisect(r);
  ASSERT_EQ(r.probes.size(), 1u);
  std::printf("[tvm] vits_seed_174 output rel_l2 %.3g against float64\n", r.probes[0].worst.rel_l2);
}

TEST_F(TvmRunner, BisectionThroughTvmNamesAPlantedNode) {
  const std::string node = "/flows.4/enc/in_layers.1/Conv";
  Runner test = Runner::command(python_ + " " + test::runners_dir() + "/faulty_runner.py --node '" +
                                node + "' --kind scale --amount 1.5 --inner '" + command() + "'");
  ExternalBisectResult r = bisect_external(model_, Runner::backend("reference"), test, inputs_);
  ASSERT_TRUE(r.diverged);
  EXPECT_EQ(r.node_name, node) << format_external_bisect(r);
  EXPECT_EQ(r.verdict, "local");
}

}  // namespace
}  // namespace lockstep::diff
