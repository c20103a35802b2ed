// Safe mode on vulkan: every value in its own slot between canary guards, NaN-filled at each run,
// the guards checked after every dispatch. The same bits as a normal run; a write planted past a
// node's output (testing.h) is reported naming the kernel, the ONNX node and the buffer.
#include <gtest/gtest.h>

#include "backends/vulkan/testing.h"
#include "vulkan/vulkan_test_util.h"
#include "zoo/seed_flow.h"

namespace lockstep::vulkan_test {
namespace {

ir::Graph small_flow() {
  Options options;
  return prepare(Model::from_graph(zoo::seed_flow_graph(3, 64)), options);
}

TEST(VulkanSafeMode, SameBitsAsANormalRun) {
  LOCKSTEP_REQUIRE_VULKAN();
  const ir::Graph g = small_flow();
  const std::vector<Tensor> inputs = zoo::seed_flow_inputs(64);
  const Tensor plain = vulkan::backend().compile(g, Options{})->run(inputs).at(0);
  Options safe;
  safe.safe = true;
  auto checked = vulkan::backend().compile(g, safe);
  EXPECT_TRUE(same_bits(plain, checked->run(inputs).at(0)));
  EXPECT_TRUE(same_bits(plain, checked->run(inputs).at(0))) << "the second safe run (NaN fill again)";
}

TEST(VulkanSafeMode, CatchesAPlantedOutOfBoundsWrite) {
  LOCKSTEP_REQUIRE_VULKAN();
  const ir::Graph g = small_flow();
  const ir::Node* conv = nullptr;
  for (const auto& n : g.nodes)
    if (n.op == ir::Op::Conv && !conv) conv = &n;
  ASSERT_NE(conv, nullptr);
  Options safe;
  safe.safe = true;
  auto exe = vulkan::backend().compile(g, safe);
  vulkan::plant_out_of_bounds_write(*exe, conv->result_onnx_name());
  try {
    exe->run(zoo::seed_flow_inputs(64));
    FAIL() << "safe mode did not catch the planted out-of-bounds write";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Internal);
    const std::string m = e.what();
    EXPECT_NE(m.find("kernel 'planted_write'"), std::string::npos) << m;
    EXPECT_NE(m.find("ONNX node '" + conv->result_onnx_name() + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("the canary after value '" + g.value(conv->outputs[0]).name + "' is broken"), std::string::npos) << m;
    std::printf("[ vulkan   ] %s\n", m.c_str());
  }
}

}  // namespace
}  // namespace lockstep::vulkan_test
