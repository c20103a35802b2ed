// Metrics on hand-worked vectors.
#include "diff/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lockstep::diff {
namespace {

constexpr double kExact = 1e-15;  // results of a few exact double operations

TEST(Metrics, HandWorkedVectors) {
  // test = (3, 4), ref = (4, 3): dot 24, |t| = |r| = 5 → cosine 24/25; delta (-1, 1) → |d| = √2.
  Metrics m = compare(Tensor::from_vector<float>({2}, {3, 4}), Tensor::from_vector<double>({2}, {4, 3}));
  EXPECT_TRUE(m.shape_match);
  EXPECT_NEAR(m.cosine, 0.96, kExact);
  EXPECT_NEAR(m.max_abs_delta, 1.0, kExact);
  EXPECT_NEAR(m.rms_ratio, 1.0, kExact);
  EXPECT_NEAR(m.rel_l2, std::sqrt(2.0) / 5, kExact);
  EXPECT_FALSE(agrees(m));
}

TEST(Metrics, ScaledVectorHasCosineOneAndRmsRatio) {
  // test = 2·ref: cosine 1, rms ratio 2, rel_l2 = |ref|/|ref| = 1, max delta = max |ref| = 3.
  Metrics m = compare(Tensor::from_vector<int64_t>({1, 3}, {2, -4, 6}), Tensor::from_vector<int32_t>({1, 3}, {1, -2, 3}));
  EXPECT_NEAR(m.cosine, 1.0, kExact);
  EXPECT_NEAR(m.rms_ratio, 2.0, kExact);
  EXPECT_NEAR(m.rel_l2, 1.0, kExact);
  EXPECT_NEAR(m.max_abs_delta, 3.0, kExact);
}

TEST(Metrics, ZeroVectors) {
  Tensor z = Tensor::from_vector<float>({3}, {0, 0, 0});
  Metrics both = compare(z, z);
  EXPECT_EQ(both.cosine, 1.0);
  EXPECT_EQ(both.rms_ratio, 1.0);
  EXPECT_EQ(both.rel_l2, 0.0);
  EXPECT_TRUE(agrees(both));
  Metrics one = compare(Tensor::from_vector<float>({3}, {0, 3, 4}), z);
  EXPECT_EQ(one.cosine, 0.0);
  EXPECT_EQ(one.rel_l2, 5.0);  // |test − 0| when the reference is zero
  EXPECT_FALSE(agrees(one));
}

TEST(Metrics, IdenticalAgreesAndTinyErrorAgrees) {
  std::vector<double> ref(1000), test(1000);
  for (int i = 0; i < 1000; ++i) ref[i] = test[i] = std::sin(i * 0.1);
  EXPECT_TRUE(agrees(compare(Tensor::from_vector<double>({1000}, test), Tensor::from_vector<double>({1000}, ref))));
  test[7] += 1e-3;  // rel_l2 ≈ 1e-3 / √500 ≈ 4.5e-5 > 1e-5
  EXPECT_FALSE(agrees(compare(Tensor::from_vector<double>({1000}, test), Tensor::from_vector<double>({1000}, ref))));
}

TEST(Metrics, NansAreCountedAndNeverAgree) {
  Metrics m = compare(Tensor::from_vector<float>({3}, {1, NAN, NAN}), Tensor::from_vector<float>({3}, {1, 2, NAN}));
  EXPECT_EQ(m.nan_count_test, 2);
  EXPECT_EQ(m.nan_count_ref, 1);
  EXPECT_TRUE(std::isnan(m.cosine));
  EXPECT_TRUE(std::isnan(m.max_abs_delta));
  EXPECT_FALSE(agrees(m));
}

TEST(Metrics, ShapeMismatch) {
  Metrics m = compare(Tensor::from_vector<float>({2, 1}, {1, 2}), Tensor::from_vector<float>({1, 2}, {1, 2}));
  EXPECT_FALSE(m.shape_match);
  EXPECT_FALSE(agrees(m));
}

}  // namespace
}  // namespace lockstep::diff
