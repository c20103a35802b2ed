// The error bounds of shaders/math.glsl, measured on the device: exp, tanh and sigmoid within their
// stated ulps of float64 over dense sweeps, division and sqrt correctly rounded (0.5 ulp and a
// hair) in [2^-40, 2^40], and the special values (inf, NaN, -0, overflow) as float32 rounds them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "vulkan/vulkan_test_util.h"

namespace lockstep::vulkan_test {
namespace {

using ir::Op;

// |got - want| in units of the float32 ulp at want (normal range).
double ulps(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : 1e30;
  if (std::isinf(want)) return got == want ? 0 : 1e30;
  int e = 0;
  std::frexp(want, &e);
  const double ulp = std::ldexp(1.0, std::max(e, -125) - 24);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

Tensor sweep(float lo, float hi, int n, uint32_t seed, bool log_scale = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Tensor t(DType::Float32, {n});
  for (int i = 0; i < n; ++i) {
    double v = log_scale ? std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * u(rng)) : lo + (hi - lo) * u(rng);
    if (log_scale && i % 2) v = -v;
    t.data<float>()[i] = static_cast<float>(v);
  }
  return t;
}

Tensor run_unary(Op op, const Tensor& x) {
  return vulkan::backend().compile(node_graph(op, {{x, true}}), Options{})->run({x}).at(0);
}

double max_ulps(const Tensor& x, const Tensor& y, double (*f)(double), float* worst_at) {
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double e = ulps(y.data<float>()[i], f(x.data<float>()[i]));
    if (e > worst) {
      worst = e;
      *worst_at = x.data<float>()[i];
    }
  }
  return worst;
}

double sigmoid64(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(VulkanMath, ExpTanhSigmoidWithinTheStatedBound) {
  LOCKSTEP_REQUIRE_VULKAN();
  struct Case {
    Op op;
    double (*f)(double);
    Tensor x;
    double bound;
  };
  const int n = 1 << 18;
  const Case cases[] = {{Op::Exp, [](double v) { return std::exp(v); }, sweep(-87.0f, 88.7f, n, 1), kExpUlps},
                        {Op::Exp, [](double v) { return std::exp(v); }, sweep(1e-8f, 2.0f, n, 2, true), kExpUlps},
                        {Op::Tanh, [](double v) { return std::tanh(v); }, sweep(-12.0f, 12.0f, n, 3), kTanhUlps},
                        {Op::Tanh, [](double v) { return std::tanh(v); }, sweep(1e-30f, 1.0f, n, 4, true), kTanhUlps},
                        {Op::Sigmoid, sigmoid64, sweep(-87.0f, 30.0f, n, 5), kSigmoidUlps},
                        {Op::Sigmoid, sigmoid64, sweep(1e-8f, 4.0f, n, 6, true), kSigmoidUlps}};
  for (const Case& c : cases) {
    float at = 0;
    const double worst = max_ulps(c.x, run_unary(c.op, c.x), c.f, &at);
    std::printf("[ vulkan   ] %s: max %.3f ulp (at %.9g) over %d values\n", ir::op_name(c.op), worst, at, n);
    EXPECT_LE(worst, c.bound) << ir::op_name(c.op) << " at " << at;
  }
}

TEST(VulkanMath, ErfAndSoftplusWithinTheStatedBound) {
  LOCKSTEP_REQUIRE_VULKAN();
  const int n = 1 << 18;
  for (const Tensor& x : {sweep(-5.0f, 5.0f, n, 11), sweep(1e-6f, 4.0f, n, 12, true)}) {
    const Tensor y = run_unary(Op::Erf, x);
    double worst_abs = 0, worst_ulps = 0;
    for (int i = 0; i < n; ++i) {
      const double want = std::erf(static_cast<double>(x.data<float>()[i]));
      worst_abs = std::max(worst_abs, std::fabs(y.data<float>()[i] - want));
      if (std::fabs(want) >= 1e-3) worst_ulps = std::max(worst_ulps, ulps(y.data<float>()[i], want));
    }
    std::printf("[ vulkan   ] Erf: max %.3g absolute, %.3f ulp where |erf| >= 1e-3, over %d values\n", worst_abs, worst_ulps, n);
    EXPECT_LE(worst_abs, kErfAbs);
    EXPECT_LE(worst_ulps, kErfUlps);
  }
  // The bound holds where the result is normal; a subnormal result (x below -87.34) may be
  // flushed to zero by a driver that flushes denormals (NVIDIA's does), else it keeps the bound.
  const Tensor x = sweep(-100.0f, 60.0f, n, 13);
  const Tensor y = run_unary(Op::Softplus, x);
  double worst = 0;
  float at = 0;
  int flushed = 0;
  for (int i = 0; i < n; ++i) {
    const double want = std::log1p(std::exp(static_cast<double>(x.data<float>()[i])));
    const float got = y.data<float>()[i];
    if (want < std::numeric_limits<float>::min() && got == 0.0f) {
      ++flushed;
      continue;
    }
    if (const double e = ulps(got, want); e > worst) worst = e, at = x.data<float>()[i];
  }
  std::printf("[ vulkan   ] Softplus: max %.3f ulp (at %.9g) over %d values, %d subnormal results flushed to 0\n",
              worst, at, n, flushed);
  EXPECT_LE(worst, kSoftplusUlps);
}

TEST(VulkanMath, DivisionAndSqrtAreCorrectlyRounded) {
  LOCKSTEP_REQUIRE_VULKAN();
  const int n = 1 << 18;
  const Tensor a = sweep(1e-6f, 1e6f, n, 7, true), b = sweep(1e-6f, 1e6f, n, 8, true);
  const Tensor q = vulkan::backend().compile(node_graph(Op::Div, {{a, true}, {b, true}}), Options{})->run({a, b}).at(0);
  double worst = 0;
  for (int i = 0; i < n; ++i)
    worst = std::max(worst, ulps(q.data<float>()[i], static_cast<double>(a.data<float>()[i]) / b.data<float>()[i]));
  std::printf("[ vulkan   ] Div: max %.4f ulp over %d values\n", worst, n);
  EXPECT_LE(worst, kCorrectlyRoundedUlps);
  Tensor pos = sweep(1e-9f, 1e9f, n, 9, true);
  for (int i = 0; i < n; ++i) pos.data<float>()[i] = std::fabs(pos.data<float>()[i]);
  const Tensor s = run_unary(Op::Sqrt, pos);
  worst = 0;
  for (int i = 0; i < n; ++i) worst = std::max(worst, ulps(s.data<float>()[i], std::sqrt(static_cast<double>(pos.data<float>()[i]))));
  std::printf("[ vulkan   ] Sqrt: max %.4f ulp over %d values\n", worst, n);
  EXPECT_LE(worst, kCorrectlyRoundedUlps);
}

TEST(VulkanMath, SpecialValues) {
  LOCKSTEP_REQUIRE_VULKAN();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> xs{0.0f, -0.0f, inf, -inf, nan, 88.72f, 89.0f, -88.0f, -104.0f, 44.5f, -44.5f, 1e-30f, -1e-30f};
  const Tensor x = Tensor::from_vector<float>({static_cast<int64_t>(xs.size())}, xs);
  for (Op op : {Op::Exp, Op::Tanh, Op::Sigmoid, Op::Sqrt, Op::Reciprocal}) {
    const Tensor got = run_unary(op, x);
    const Tensor want = reference::evaluate(node_graph(op, {{x, true}}), {x}).at(0);
    for (size_t i = 0; i < xs.size(); ++i) {
      const float g = got.data<float>()[i];
      const double w64 = want.element_as_double(static_cast<int64_t>(i));
      const double w = std::isnan(w64) ? w64 : static_cast<float>(w64);  // float32's overflow to inf
      const std::string what = std::string(ir::op_name(op)) + "(" + std::to_string(xs[i]) + ")";
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(g)) << what;
      } else if (std::isinf(w) || w == 0.0) {
        EXPECT_EQ(g, static_cast<float>(w)) << what;
        EXPECT_EQ(std::signbit(g), std::signbit(w)) << what << ": the sign of zero";
      } else if (std::fabs(w) >= 1.1754944e-38) {  // normal results; subnormal ones may flush
        EXPECT_LE(ulps(g, w64), kSigmoidUlps) << what << " = " << g << ", float64 " << w64;
      }
    }
  }
}

}  // namespace
}  // namespace lockstep::vulkan_test
