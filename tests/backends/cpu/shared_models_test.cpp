// Every shared model through the full pipeline on the cpu backend against its float64 oracle.
#include <gtest/gtest.h>

#include <filesystem>

#include "backends/cpu/cpu_test_util.h"
#include "core/npy.h"
#include "support/fixtures.h"

namespace lockstep::cpu_test {
namespace {

// The pass line; ONNX Runtime reaches 6e-7 to 7e-7 on these models.
constexpr double kModelRelL2 = 1e-5;

TEST(CpuSharedModels, MatchFloat64Oracles) {
  namespace fs = std::filesystem;
  const std::string dir = test::shared_models_dir();
  if (!fs::exists(dir)) GTEST_SKIP() << "no shared models at " << dir;
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".onnx") continue;
    const std::string stem = (entry.path().parent_path() / entry.path().stem()).string();
    if (!fs::exists(stem + ".ref64.npy")) continue;
    auto exe = lockstep::compile(Model::load(entry.path().string()), "cpu", Options{});
    auto out = exe->run({read_npy(stem + ".z_p.npy"), read_npy(stem + ".y_mask.npy")});
    Tensor ref = read_npy(stem + ".ref64.npy");
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(shape_str(out[0].shape()), shape_str(ref.shape())) << stem;
    Diff d = diff(out[0], ref);
    EXPECT_TRUE(d.finite) << stem;
    EXPECT_LE(d.rel_l2, kModelRelL2) << stem;
    std::printf("[ cpu      ] %s: relative L2 %.3g, max |delta| %.3g\n", entry.path().stem().c_str(), d.rel_l2,
                d.max_abs);
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

}  // namespace
}  // namespace lockstep::cpu_test
