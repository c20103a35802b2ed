// The shared models on the cuda backend: the float64 oracle (relative L2), the cpu backend
// (cosine), safe mode clean and bit-identical, taps bit-identical.
#include <gtest/gtest.h>

#include "core/npy.h"
#include "diff/metrics.h"
#include "gpu/gpu_test_util.h"

namespace lockstep::gpu_test {
namespace {

class CudaSharedModels : public ::testing::TestWithParam<std::string> {};

std::vector<Tensor> model_inputs(const ir::Graph& graph, const std::string& stem) {
  std::vector<Tensor> inputs;
  for (ir::ValueId v : graph.inputs) inputs.push_back(read_npy(stem + "." + graph.value(v).name + ".npy"));
  return inputs;
}

TEST_P(CudaSharedModels, MatchesOracleAndCpu) {
  LOCKSTEP_REQUIRE_GPU();
  const std::string dir = models_dir();
  if (dir.empty()) GTEST_SKIP() << "no shared models: set LOCKSTEP_MODELS_DIR";
  const std::string stem = dir + "/" + GetParam();
  if (!std::filesystem::exists(stem + ".onnx")) GTEST_SKIP() << "missing " << stem << ".onnx";
  Model model = Model::load(stem + ".onnx");
  auto exe = compile(model, "cuda");
  const std::vector<Tensor> inputs = model_inputs(exe->graph(), stem);
  const Tensor got = exe->run(inputs).at(0);
  const Tensor oracle = read_npy(stem + ".ref64.npy");
  diff::Metrics vs_oracle = diff::compare(got, oracle);
  EXPECT_LE(vs_oracle.rel_l2, kModelRelL2) << GetParam();
  std::printf("[cuda] %s: rel L2 vs float64 oracle %.3g, cosine %.10f\n", GetParam().c_str(), vs_oracle.rel_l2, vs_oracle.cosine);

  auto cpu = compile(model, "cpu");
  diff::Metrics vs_cpu = diff::compare(got, cpu->run(inputs).at(0));
  EXPECT_GE(vs_cpu.cosine, kModelCosine) << GetParam();
  EXPECT_LE(vs_cpu.rel_l2, kModelRelL2) << GetParam();
  std::printf("[cuda] %s: vs cpu cosine %.10f rel L2 %.3g\n", GetParam().c_str(), vs_cpu.cosine, vs_cpu.rel_l2);

  for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bits(got, exe->run(inputs).at(0))) << "replay " << i;
  int taps = 0;
  RunOptions tapped;
  tapped.tap = [&](const ir::Node&, int, const Tensor&) { ++taps; };
  EXPECT_TRUE(same_bits(got, exe->run(inputs, tapped).at(0))) << "taps changed the output";
  EXPECT_GE(taps, static_cast<int>(exe->graph().nodes.size()));

  Options safe;
  safe.safe = true;
  auto checked = compile(model, "cuda", safe);
  EXPECT_TRUE(same_bits(got, checked->run(inputs).at(0))) << "safe mode changed the output";
}

INSTANTIATE_TEST_SUITE_P(Models, CudaSharedModels,
                         ::testing::Values("vits_seed_174", "vits_seed_flow_T1024", "vits_seed_dec_T256", "vits_low_dec_T128"));

}  // namespace
}  // namespace lockstep::gpu_test
