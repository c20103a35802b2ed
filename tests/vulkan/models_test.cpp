// The shared models and the embedded default on vulkan: the float64 oracle (relative L2 <= 1e-5),
// the same bits on every run, across compiles (A, B, A again) and with taps on.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "core/npy.h"
#include "diff/metrics.h"
#include "support/fixtures.h"
#include "vulkan/vulkan_test_util.h"
#include "zoo/seed_flow.h"

namespace lockstep::vulkan_test {
namespace {

std::unique_ptr<Executable> compile_vulkan(const Model& model) {
  Options options;
  return vulkan::backend().compile(prepare(model, options), options);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Oracle, bits on a second run and on a second compile, taps on every kernel boundary.
void check_model(const std::string& what, const Model& model, const std::vector<Tensor>& inputs, const Tensor& oracle) {
  auto t0 = std::chrono::steady_clock::now();
  auto exe = compile_vulkan(model);
  const double compile_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  const Tensor got = exe->run(inputs).at(0);
  const double run_ms = ms_since(t0);
  ASSERT_EQ(shape_str(got.shape()), shape_str(oracle.shape())) << what;
  const diff::Metrics m = diff::compare(got, oracle);
  EXPECT_EQ(m.nan_count_test, 0) << what;
  EXPECT_LE(m.rel_l2, kModelRelL2) << what;
  EXPECT_GE(m.cosine, kModelCosine) << what;
  std::printf("[ vulkan   ] %s on %s: rel L2 vs float64 %.3g, cosine %.10f (compile %.0f ms, run %.0f ms)\n", what.c_str(),
              vulkan::device_description().c_str(), m.rel_l2, m.cosine, compile_ms, run_ms);
  EXPECT_TRUE(same_bits(got, exe->run(inputs).at(0))) << what << ": a replay changed the bits";
  int taps = 0;
  RunOptions tapped;
  tapped.tap = [&](const ir::Node&, int, const Tensor&) { ++taps; };
  EXPECT_TRUE(same_bits(got, exe->run(inputs, tapped).at(0))) << what << ": taps changed the output";
  EXPECT_GE(taps, static_cast<int>(exe->graph().nodes.size()));
  // Another program compiled and run in between, then the first again: the same bits.
  auto other = compile_vulkan(Model::from_graph(zoo::seed_flow_graph(1, 64)));
  other->run(zoo::seed_flow_inputs(64));
  auto again = compile_vulkan(model);
  EXPECT_TRUE(same_bits(got, again->run(inputs).at(0))) << what << ": a second compile changed the bits";
}

TEST(VulkanModels, EmbeddedDefaultMatchesFloat64) {
  LOCKSTEP_REQUIRE_VULKAN();
  const Model model = Model::from_graph(zoo::seed_flow_graph());
  const std::vector<Tensor> inputs = zoo::seed_flow_inputs();
  const Tensor oracle = reference::evaluate(model.graph(), inputs).at(0);
  check_model("embedded default", model, inputs, oracle);
}

class VulkanSharedModels : public ::testing::TestWithParam<std::string> {};

TEST_P(VulkanSharedModels, MatchesFloat64Oracle) {
  LOCKSTEP_REQUIRE_VULKAN();
  const std::string stem = test::shared_models_dir() + "/" + GetParam();
  if (!std::filesystem::exists(stem + ".onnx")) GTEST_SKIP() << "no shared model " << stem << ".onnx";
  const Model model = Model::load(stem + ".onnx");
  std::vector<Tensor> inputs;
  for (ir::ValueId v : model.graph().inputs) inputs.push_back(read_npy(stem + "." + model.graph().value(v).name + ".npy"));
  check_model(GetParam(), model, inputs, read_npy(stem + ".ref64.npy"));
}

INSTANTIATE_TEST_SUITE_P(Models, VulkanSharedModels,
                         ::testing::Values("vits_seed_174", "vits_seed_flow_T1024", "vits_seed_dec_T256", "vits_low_dec_T128"));

}  // namespace
}  // namespace lockstep::vulkan_test
