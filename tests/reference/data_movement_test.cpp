// Reference Slice, Split, Concat, Reshape, Transpose, Squeeze/Unsqueeze, Pad, Gather, Expand.
#include <gtest/gtest.h>

#include <limits>

#include "reference/op_runner.h"

namespace lockstep::testing {
namespace {

using ir::Op;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Tensor iota(Shape shape) {
  std::vector<float> v(static_cast<size_t>(num_elements(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return f32(std::move(shape), v);
}

TEST(ReferenceSlice, FlipWithInt64Bounds) {
  // x[INT64_MAX:INT64_MIN:-1] reverses (the exporter's Flip).
  auto y = run_op({Op::Slice, {iota({5}), i64s({kMax}), i64s({kMin}), i64s({0}), i64s({-1})}});
  expect_values(y[0], {5}, {4, 3, 2, 1, 0});
}

TEST(ReferenceSlice, NegativeStartToInt64Max) {
  auto y = run_op({Op::Slice, {iota({10}), i64s({-3}), i64s({kMax})}});
  expect_values(y[0], {3}, {7, 8, 9});
}

TEST(ReferenceSlice, NegativeStepAndAxes) {
  // x = arange(10): x[8:1:-3] = [8,5,2]
  auto y = run_op({Op::Slice, {iota({10}), i64s({8}), i64s({1}), Tensor{}, i64s({-3})}});
  expect_values(y[0], {3}, {8, 5, 2});
  // x = arange(6).reshape(2,3): x[:, 1:3] via axes [-1]
  auto z = run_op({Op::Slice, {iota({2, 3}), i64s({1}), i64s({3}), i64s({-1})}});
  expect_values(z[0], {2, 2}, {1, 2, 4, 5});
  // Empty result: start past end with a positive step.
  auto e = run_op({Op::Slice, {iota({4}), i64s({3}), i64s({1})}});
  expect_values(e[0], {0}, {});
}

TEST(ReferenceSlice, ZeroStepIsAnError) {
  EXPECT_THROW(run_op({Op::Slice, {iota({4}), i64s({0}), i64s({4}), i64s({0}), i64s({0})}}), Error);
}

TEST(ReferenceSplit, SizesNumOutputsAndEqual) {
  auto a = run_op({Op::Split, {iota({6}), i64s({2, 4})}, {}, 2});
  expect_values(a[0], {2}, {0, 1});
  expect_values(a[1], {4}, {2, 3, 4, 5});
  // opset 18 num_outputs: 7 into 3 → ceil 3, last chunk smaller (onnx.reference: [3,3,1]).
  auto b = run_op({Op::Split, {iota({7})}, A().i("num_outputs", 3), 3});
  expect_values(b[2], {1}, {6});
  auto c = run_op({Op::Split, {iota({2, 4})}, A().i("axis", -1), 2});
  expect_values(c[1], {2, 2}, {2, 3, 6, 7});
  EXPECT_THROW(run_op({Op::Split, {iota({6}), i64s({2, 3})}, {}, 2}), Error);
}

TEST(ReferenceConcat, MiddleAxis) {
  auto y = run_op({Op::Concat, {iota({2, 1}), f32({2, 2}, {10, 11, 12, 13})}, A().i("axis", 1)});
  expect_values(y[0], {2, 3}, {0, 10, 11, 1, 12, 13});
}

TEST(ReferenceReshapeFamily, ReshapeFlattenSqueezeUnsqueeze) {
  auto r = run_op({Op::Reshape, {iota({2, 3, 4}), i64s({0, -1})}});
  expect_values(r[0], {2, 12}, values(iota({24})));
  auto f = run_op({Op::Flatten, {iota({2, 3, 4})}, A().i("axis", 2)});
  EXPECT_EQ(shape_str(f[0].shape()), "[6,4]");
  auto s = run_op({Op::Squeeze, {iota({1, 3, 1}), i64s({-1})}});
  EXPECT_EQ(shape_str(s[0].shape()), "[1,3]");
  auto s2 = run_op({Op::Squeeze, {iota({1, 3, 1})}});
  EXPECT_EQ(shape_str(s2[0].shape()), "[3]");
  auto u = run_op({Op::Unsqueeze, {iota({3}), i64s({0, -1})}});
  EXPECT_EQ(shape_str(u[0].shape()), "[1,3,1]");
  EXPECT_THROW(run_op({Op::Squeeze, {iota({2, 3}), i64s({0})}}), Error);
}

TEST(ReferenceTranspose, PermAndDefault) {
  // arange(6).reshape(1,2,3).transpose(2,0,1) = [[[0,3]],[[1,4]],[[2,5]]]
  auto y = run_op({Op::Transpose, {iota({1, 2, 3})}, A().is("perm", {2, 0, 1})});
  expect_values(y[0], {3, 1, 2}, {0, 3, 1, 4, 2, 5});
  auto d = run_op({Op::Transpose, {iota({2, 3})}});
  expect_values(d[0], {3, 2}, {0, 3, 1, 4, 2, 5});
}

TEST(ReferencePad, ReflectEdgeConstantNegative) {
  Tensor x = f32({3}, {1, 2, 3});
  expect_values(run_op({Op::Pad, {x, i64s({2, 2})}, A().s("mode", "reflect")})[0], {7},
                {3, 2, 1, 2, 3, 2, 1});
  expect_values(run_op({Op::Pad, {x, i64s({2, 2})}, A().s("mode", "edge")})[0], {7},
                {1, 1, 1, 2, 3, 3, 3});
  // Constant 9, one before, crop one after.
  expect_values(run_op({Op::Pad, {x, i64s({1, -1}), f32({}, {9})}})[0], {3}, {9, 1, 2});
  // 2-D reflect, pads [1,2,0,1] (onnx.reference): [[6,5,4,5,6,5],[3,2,1,2,3,2],[6,5,4,5,6,5]]
  auto r = run_op(
      {Op::Pad, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i64s({1, 2, 0, 1})}, A().s("mode", "reflect")});
  expect_values(r[0], {3, 6}, {6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5});
  // axes input: pad only the last axis.
  auto a = run_op({Op::Pad, {f32({2, 1}, {1, 2}), i64s({1, 0}), Tensor{}, i64s({-1})}});
  expect_values(a[0], {2, 2}, {0, 1, 0, 2});
}

TEST(ReferencePad, WrapModeIsUnsupported) {
  try {
    run_op({Op::Pad, {f32({3}, {1, 2, 3}), i64s({1, 1})}, A().s("mode", "wrap")});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::UnsupportedAttribute);
    EXPECT_NE(std::string(e.what()).find("wrap"), std::string::npos);
    EXPECT_EQ(e.op(), "Pad");
  }
}

TEST(ReferenceGather, NegativeIndicesAndAxis) {
  // arange(6).reshape(2,3)[:, [-1, 0]] = [[2,0],[5,3]]
  auto y = run_op({Op::Gather, {iota({2, 3}), i64s({-1, 0})}, A().i("axis", 1)});
  expect_values(y[0], {2, 2}, {2, 0, 5, 3});
  auto s = run_op({Op::Gather, {i64s({7, 8, 9}), i64({}, {1})}});
  expect_values(s[0], {}, {8});
  EXPECT_THROW(run_op({Op::Gather, {iota({3}), i64s({3})}}), Error);
}

TEST(ReferenceExpand, Bidirectional) {
  // [3,1] expanded with shape [2,1,2] → [2,3,2]
  auto y = run_op({Op::Expand, {f32({3, 1}, {1, 2, 3}), i64s({2, 1, 2})}});
  expect_values(y[0], {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
}

}  // namespace
}  // namespace lockstep::testing
