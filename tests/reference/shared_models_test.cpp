// The reference interpreter on the four shared models, against PyTorch's float64 oracles.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/npy.h"
#include "onnx/import.h"
#include "reference/evaluate.h"
#include "support/fixtures.h"

namespace lockstep::testing {
namespace {

// The reference computes what PyTorch computes in float64, up to summation order.
constexpr double kReferenceRelL2 = 1e-12;

double relative_l2(const Tensor& got, const Tensor& want) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double d = got.element_as_double(i) - want.element_as_double(i);
    num += d * d;
    den += want.element_as_double(i) * want.element_as_double(i);
  }
  return std::sqrt(num / den);
}

class ReferenceSharedModels : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceSharedModels, MatchesFloat64Oracle) {
  const std::string stem = test::shared_models_dir() + "/" + GetParam();
  if (!std::filesystem::exists(stem + ".onnx")) GTEST_SKIP() << "missing " << stem << ".onnx";
  ir::Graph graph = onnx::import_model(stem + ".onnx");
  std::vector<Tensor> inputs = {read_npy(stem + ".z_p.npy"), read_npy(stem + ".y_mask.npy")};
  Tensor want = read_npy(stem + ".ref64.npy");
  auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> out = reference::evaluate(graph, inputs);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(shape_str(out[0].shape()), shape_str(want.shape()));
  double err = relative_l2(out[0], want);
  std::printf("[reference] %s: relative L2 %.3e in %.2f s\n", GetParam().c_str(), err, seconds);
  EXPECT_LE(err, kReferenceRelL2);
}

INSTANTIATE_TEST_SUITE_P(Models, ReferenceSharedModels,
                         ::testing::Values("vits_seed_174", "vits_seed_flow_T1024",
                                           "vits_seed_dec_T256", "vits_low_dec_T128"));

}  // namespace
}  // namespace lockstep::testing
