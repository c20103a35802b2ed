// Hand-worked checks of the tolerance rule and of each fault kind.
#include <gtest/gtest.h>

#include <cmath>

#include "diff/fault.h"
#include "diff/tolerance.h"

namespace lockstep {
namespace {

TEST(Tolerance, FloorSafetyCap) {
  diff::ToleranceConfig c;  // safety 8, floor 1e-6, cap 1e-4
  EXPECT_DOUBLE_EQ(diff::calibrated_tolerance(0.0, c), 1e-6);
  EXPECT_DOUBLE_EQ(diff::calibrated_tolerance(1e-7, c), 1e-6);  // 8e-7 < floor
  EXPECT_DOUBLE_EQ(diff::calibrated_tolerance(5e-7, c), 4e-6);
  EXPECT_DOUBLE_EQ(diff::calibrated_tolerance(1.0, c), 1e-4);
  EXPECT_DOUBLE_EQ(diff::calibrated_tolerance(NAN, c), 1e-4);
  EXPECT_TRUE(diff::exceeds(NAN, 1.0));
  EXPECT_FALSE(diff::exceeds(1e-6, 1e-6));
  EXPECT_TRUE(diff::exceeds(INFINITY, 1e-4));
}

TEST(Fault, EveryKindAltersOnlyItsNode) {
  ir::Node target{ir::Op::Relu, "target", {}, {}, {}, {}};
  ir::Node other{ir::Op::Relu, "other", {}, {}, {}, {}};
  auto fresh = [] { return Tensor::from_vector<float>({2, 2}, {1, -2, 3, 4}); };
  auto apply = [&](const diff::FaultSpec& spec, const ir::Node& node, int output = 0) {
    Tensor t = fresh();
    diff::make_fault(spec)(node, output, t);
    return t;
  };
  Tensor s = apply({"target", diff::FaultKind::Scale, 2.0}, target);
  EXPECT_EQ(s.data<float>()[1], -4.0f);
  Tensor o = apply({"target", diff::FaultKind::Offset, 0.5}, target);
  EXPECT_EQ(o.data<float>()[3], 4.5f);
  Tensor n = apply({"target", diff::FaultKind::NaN, 0}, target);
  EXPECT_TRUE(std::isnan(n.data<float>()[0]));
  EXPECT_EQ(n.data<float>()[1], -2.0f);
  Tensor z = apply({"target", diff::FaultKind::Stale, 0}, target);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(z.data<float>()[i], 0.0f);
  Tensor old = Tensor::from_vector<double>({4}, {9, 8, 7, 6});
  Tensor st = apply({"target", diff::FaultKind::Stale, 0, 0, old}, target);
  EXPECT_EQ(st.data<float>()[2], 7.0f);
  Tensor untouched = apply({"target", diff::FaultKind::Scale, 2.0}, other);
  EXPECT_EQ(untouched.data<float>()[1], -2.0f);
  Tensor other_output = apply({"target", diff::FaultKind::Scale, 2.0}, target, 1);
  EXPECT_EQ(other_output.data<float>()[1], -2.0f);
  Tensor wrong_size = Tensor::from_vector<float>({3}, {1, 2, 3});
  EXPECT_THROW(apply({"target", diff::FaultKind::Stale, 0, 0, wrong_size}, target), Error);
  EXPECT_THROW(diff::make_fault({"", diff::FaultKind::Scale, 2.0}), Error);
}

}  // namespace
}  // namespace lockstep
