#include "backends/cpu/vector_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace lockstep::cpu {
namespace {

// The fast float32 functions against libm in double, relative error in float32 ulps' terms.
constexpr double kVectorMathRel = 1e-6;

TEST(CpuVectorMath, NanPropagatesAndInfinitiesSaturate) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(fast_exp(nan)));
  EXPECT_TRUE(std::isnan(fast_tanh(nan)));
  EXPECT_TRUE(std::isnan(fast_sigmoid(nan)));
  EXPECT_GE(fast_exp(-inf), 0.0f);
  EXPECT_LT(fast_exp(-inf), 1e-37f);
  EXPECT_FLOAT_EQ(fast_tanh(inf), 1.0f);
  EXPECT_FLOAT_EQ(fast_tanh(-inf), -1.0f);
  EXPECT_FLOAT_EQ(fast_sigmoid(inf), 1.0f);
}

TEST(CpuVectorMath, MatchesLibmOverTheRange) {
  for (float x = -20.0f; x <= 20.0f; x += 0.01953125f) {
    EXPECT_NEAR(fast_exp(x), std::exp(static_cast<double>(x)), kVectorMathRel * std::exp(static_cast<double>(x))) << x;
    EXPECT_NEAR(fast_tanh(x), std::tanh(static_cast<double>(x)), kVectorMathRel * std::abs(std::tanh(static_cast<double>(x))) + 1e-9) << x;
    double s = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    EXPECT_NEAR(fast_sigmoid(x), s, kVectorMathRel * s) << x;
  }
}

}  // namespace
}  // namespace lockstep::cpu
