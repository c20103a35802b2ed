#include "backends/cpu/vector_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
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

// fast_erf against double std::erf: every 4099th float32 bit pattern (all magnitudes, both signs)
// and a dense grid on [-5, 5]. Bound: 5e-7 absolute and relative (measured 4.7e-7 near |x| = 3.27,
// where erf is ~8 float32 ulp below 1; near 0 the relative error stays at float32 rounding).
constexpr double kErfAbs = 5e-7, kErfRel = 5e-7;

void check_erf(float x) {
  const double want = std::erf(static_cast<double>(x)), got = fast_erf(x);
  const double err = std::abs(got - want);
  ASSERT_LE(err, kErfAbs) << x;
  if (std::abs(x) >= 1e-30f) ASSERT_LE(err, kErfRel * std::abs(want)) << x;
}

TEST(CpuVectorMath, ErfMaxError) {
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4099) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    if (std::isfinite(x)) check_erf(x);
  }
  for (float x = -5.0f; x <= 5.0f; x += 1.0f / 8192) check_erf(x);
  EXPECT_EQ(fast_erf(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(fast_erf(-0.0f)));
  EXPECT_EQ(fast_erf(4.0f), 1.0f);
  EXPECT_EQ(fast_erf(-1e30f), -1.0f);
  EXPECT_EQ(fast_erf(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_TRUE(std::isnan(fast_erf(std::numeric_limits<float>::quiet_NaN())));
}

// fast_softplus against log1p(exp(x)) in double (stable form): relative error where the result is
// a normal float32, absolute at float32's subnormal spacing below that.
TEST(CpuVectorMath, SoftplusMaxError) {
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4099) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    if (!std::isfinite(x)) continue;
    const double xd = x, want = std::max(xd, 0.0) + std::log1p(std::exp(-std::abs(xd)));
    const double got = fast_softplus(x);
    if (want >= std::numeric_limits<float>::min()) ASSERT_LE(std::abs(got - want), kVectorMathRel * want) << x;
    else ASSERT_LE(std::abs(got - want), 4 * static_cast<double>(std::numeric_limits<float>::denorm_min())) << x;
  }
  EXPECT_EQ(fast_softplus(100.0f), 100.0f);
  EXPECT_EQ(fast_softplus(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fast_softplus(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(fast_softplus(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace lockstep::cpu
