// Reference Conv / ConvTranspose on hand-worked cases (numbers checked with onnx.reference).
#include <gtest/gtest.h>

#include "reference/op_runner.h"

namespace lockstep::testing {
namespace {

using ir::Op;

TEST(ReferenceConv, Conv1dPadsAndBias) {
  // y[o] = x[o-1] - x[o+1] + 0.5 with x = 1..5 zero-padded by one on each side.
  auto y = run_op({Op::Conv,
                   {f32({1, 1, 5}, {1, 2, 3, 4, 5}), f32({1, 1, 3}, {1, 0, -1}), f32({1}, {0.5f})},
                   A().is("pads", {1, 1})});
  expect_values(y[0], {1, 1, 5}, {-1.5, -1.5, -1.5, -1.5, 4.5});
}

TEST(ReferenceConv, Conv1dStrideDilation) {
  // y[o] = x[2o] + x[2o+2], x = 1..7.
  auto y = run_op({Op::Conv,
                   {f32({1, 1, 7}, {1, 2, 3, 4, 5, 6, 7}), f32({1, 1, 2}, {1, 1})},
                   A().is("strides", {2}).is("dilations", {2})});
  expect_values(y[0], {1, 1, 3}, {4, 8, 12});
}

TEST(ReferenceConv, AutoPadSameUpperAndLower) {
  // in 4, stride 2, kernel 3: out 2, total pad 1; SAME_UPPER pads the end, SAME_LOWER the start.
  Tensor x = f32({1, 1, 4}, {1, 2, 3, 4}), w = f32({1, 1, 3}, {1, 1, 1});
  auto upper = run_op({Op::Conv, {x, w}, A().is("strides", {2}).s("auto_pad", "SAME_UPPER")});
  expect_values(upper[0], {1, 1, 2}, {6, 7});
  auto lower = run_op({Op::Conv, {x, w}, A().is("strides", {2}).s("auto_pad", "SAME_LOWER")});
  expect_values(lower[0], {1, 1, 2}, {3, 9});
  auto valid = run_op({Op::Conv, {x, w}, A().s("auto_pad", "VALID")});
  expect_values(valid[0], {1, 1, 2}, {6, 9});
}

TEST(ReferenceConv, Conv2dAsymmetricPadsStride) {
  // x = arange(18).reshape(1,2,3,3), w = arange(8).reshape(1,2,2,2), pads [1,0,0,1], strides [2,1]
  // numpy/onnx.reference: [[127,145,70],[352,380,174]]; first: 2*0+3*1 + 6*9+7*10 = 127.
  std::vector<float> xv(18), wv(8);
  for (int i = 0; i < 18; ++i) xv[i] = static_cast<float>(i);
  for (int i = 0; i < 8; ++i) wv[i] = static_cast<float>(i);
  auto y = run_op({Op::Conv,
                   {f32({1, 2, 3, 3}, xv), f32({1, 2, 2, 2}, wv)},
                   A().is("pads", {1, 0, 0, 1}).is("strides", {2, 1})});
  expect_values(y[0], {1, 1, 2, 3}, {127, 145, 70, 352, 380, 174});
}

TEST(ReferenceConv, GroupedDepthwise2d) {
  // group 2, 1x1 kernels: channel 0 scaled by 2, channel 1 by 3.
  auto y = run_op(
      {Op::Conv, {f32({1, 2, 1, 2}, {1, 2, 3, 4}), f32({2, 1, 1, 1}, {2, 3})}, A().i("group", 2)});
  expect_values(y[0], {1, 2, 1, 2}, {2, 4, 9, 12});
}

TEST(ReferenceConv, Conv3dGeneric) {
  // 2x2x2 ones input, 2x2x2 ones kernel, no pads: the sum, 8.
  auto y = run_op({Op::Conv,
                   {f32({1, 1, 2, 2, 2}, std::vector<float>(8, 1)),
                    f32({1, 1, 2, 2, 2}, std::vector<float>(8, 1))}});
  expect_values(y[0], {1, 1, 1, 1, 1}, {8});
}

TEST(ReferenceConv, ChannelMismatchIsAClearError) {
  try {
    run_op({Op::Conv, {f32({1, 2, 4}, std::vector<float>(8)), f32({1, 3, 1}, {1, 1, 1})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ShapeMismatch);
    EXPECT_NE(
        std::string(e.what()).find("Conv input has 2 channels but weight expects 3 (group 1)"),
        std::string::npos)
        << e.what();
    EXPECT_EQ(e.node(), "n0");
  }
}

TEST(ReferenceConv, UnknownAutoPadIsUnsupported) {
  try {
    run_op(
        {Op::Conv, {f32({1, 1, 4}, {1, 2, 3, 4}), f32({1, 1, 1}, {1})}, A().s("auto_pad", "FOO")});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::UnsupportedAttribute);
  }
}

TEST(ReferenceConvTranspose, Stride2OutputPadding) {
  // out[2i+k] += x[i]*w[k], x = [1,2,3], w = [1,10]; length 2*(3-1)+1+2 = 7.
  Tensor x = f32({1, 1, 3}, {1, 2, 3}), w = f32({1, 1, 2}, {1, 10});
  auto y = run_op({Op::ConvTranspose, {x, w}, A().is("strides", {2}).is("output_padding", {1})});
  expect_values(y[0], {1, 1, 7}, {1, 10, 2, 20, 3, 30, 0});
  // pads [1,0] crop the first output.
  auto cropped = run_op({Op::ConvTranspose,
                         {x, w},
                         A().is("strides", {2}).is("output_padding", {1}).is("pads", {1, 0})});
  expect_values(cropped[0], {1, 1, 6}, {10, 2, 20, 3, 30, 0});
  // output_shape [6] gives total padding 1; NOTSET puts the larger half at the start.
  auto shaped = run_op({Op::ConvTranspose,
                        {x, w},
                        A().is("strides", {2}).is("output_padding", {1}).is("output_shape", {6})});
  expect_values(shaped[0], {1, 1, 6}, {10, 2, 20, 3, 30, 0});
}

TEST(ReferenceConvTranspose, TwoDimensionalStride2) {
  // onnx.reference: x = w = [[1,2],[3,4]], strides [2,2] → the Kronecker product.
  auto y = run_op({Op::ConvTranspose,
                   {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 2, 2}, {1, 2, 3, 4})},
                   A().is("strides", {2, 2})});
  expect_values(y[0], {1, 1, 4, 4}, {1, 2, 2, 4, 3, 4, 6, 8, 3, 6, 4, 8, 9, 12, 12, 16});
}

TEST(ReferenceConvTranspose, GroupsDilationBias) {
  // group 2, dilation 2: channel c: out[i + 2k] += x[c,i] w[c,k], plus b[c]. By hand:
  // c0: [1,2]·1, [1,2]·-1 → [1,2,-1,-2] + 0.25; c1: [3,4]·2, [3,4]·-2 → [6,8,-6,-8] + 0.5.
  // (onnx.reference 1.x adds b[0] to every group here: a bug in its grouped path.)
  auto y = run_op(
      {Op::ConvTranspose,
       {f32({1, 2, 2}, {1, 2, 3, 4}), f32({2, 1, 2}, {1, -1, 2, -2}), f32({2}, {0.25f, 0.5f})},
       A().i("group", 2).is("dilations", {2})});
  expect_values(y[0], {1, 2, 4}, {1.25, 2.25, -0.75, -1.75, 6.5, 8.5, -5.5, -7.5});
}

}  // namespace
}  // namespace lockstep::testing
