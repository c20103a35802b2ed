// Reference comparisons, logical ops, unary float math and Clip on hand-worked cases, and the
// dtype errors their shape rules raise.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "reference/op_runner.h"

namespace lockstep::testing {
namespace {

using ir::Op;

Tensor bools(Shape shape, std::vector<bool> v) {
  Tensor t(DType::Bool, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}

TEST(ReferenceLogical, ComparisonsBroadcastOnInt64) {
  Tensor a = i64({2, 1}, {1, 5}), b = i64s({0, 1, 5, 9});
  auto lt = run_op({Op::Less, {a, b}});
  EXPECT_EQ(lt[0].dtype(), DType::Bool);
  expect_values(lt[0], {2, 4}, {0, 0, 1, 1, 0, 0, 0, 1});
  expect_values(run_op({Op::LessOrEqual, {a, b}})[0], {2, 4}, {0, 1, 1, 1, 0, 0, 1, 1});
  expect_values(run_op({Op::Greater, {a, b}})[0], {2, 4}, {1, 0, 0, 0, 1, 1, 0, 0});
  expect_values(run_op({Op::GreaterOrEqual, {a, b}})[0], {2, 4}, {1, 1, 0, 0, 1, 1, 1, 0});
  // int64 compares exactly: 2^53 + 1 and 2^53 are one double.
  const int64_t big = int64_t{1} << 53;
  expect_values(run_op({Op::Greater, {i64s({big + 1}), i64s({big})}})[0], {1}, {1});
  expect_values(run_op({Op::Equal, {i64s({big + 1}), i64s({big})}})[0], {1}, {0});
}

TEST(ReferenceLogical, FloatComparisonsWithNanAndSignedZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor x = f32({5}, {nan, 1, -0.0f, -inf, 2.5f}), y = f32({5}, {1, nan, 0.0f, -inf, 2.5f});
  expect_values(run_op({Op::Less, {x, y}})[0], {5}, {0, 0, 0, 0, 0});
  expect_values(run_op({Op::LessOrEqual, {x, y}})[0], {5}, {0, 0, 1, 1, 1});
  expect_values(run_op({Op::Greater, {x, y}})[0], {5}, {0, 0, 0, 0, 0});
  expect_values(run_op({Op::GreaterOrEqual, {x, y}})[0], {5}, {0, 0, 1, 1, 1});
  expect_values(run_op({Op::Less, {f32({3}, {-1, 0.5f, 3}), f32({}, {0.5f})}})[0], {3}, {1, 0, 0});
}

TEST(ReferenceLogical, AndOrXorNotTruthTablesWithBroadcasting) {
  Tensor a = bools({2, 1}, {false, true}), b = bools({2}, {false, true});
  expect_values(run_op({Op::And, {a, b}})[0], {2, 2}, {0, 0, 0, 1});
  expect_values(run_op({Op::Or, {a, b}})[0], {2, 2}, {0, 1, 1, 1});
  expect_values(run_op({Op::Xor, {a, b}})[0], {2, 2}, {0, 1, 1, 0});
  auto n = run_op({Op::Not, {bools({3}, {true, false, true})}});
  EXPECT_EQ(n[0].dtype(), DType::Bool);
  expect_values(n[0], {3}, {0, 1, 0});
}

// A wrong dtype is an error of shape inference naming the node and the op.
void expect_dtype_error(const OpCall& call, const std::string& op) {
  ir::Graph g = one_node_graph(call);
  try {
    ir::infer_node(g, g.nodes[0]);
    ADD_FAILURE() << op << " accepted a wrong dtype";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::DTypeMismatch) << e.what();
    EXPECT_NE(std::string(e.what()).find(op + " node 'n0'"), std::string::npos) << e.what();
  }
}

TEST(ReferenceLogical, WrongDtypesAreShapeInferenceErrors) {
  Tensor b = bools({2}, {true, false});
  expect_dtype_error({Op::Less, {b, b}}, "Less");
  expect_dtype_error({Op::GreaterOrEqual, {b, b}}, "GreaterOrEqual");
  expect_dtype_error({Op::And, {f32({2}, {1, 0}), f32({2}, {1, 0})}}, "And");
  expect_dtype_error({Op::Or, {b, i64s({1, 0})}}, "Or");
  expect_dtype_error({Op::Not, {i64s({1})}}, "Not");
  expect_dtype_error({Op::Less, {f32({1}, {1}), i64s({1})}}, "Less");
  expect_dtype_error({Op::Erf, {i64s({1})}}, "Erf");
  expect_dtype_error({Op::Ceil, {b}}, "Ceil");
  expect_dtype_error({Op::Abs, {b}}, "Abs");
  expect_dtype_error({Op::Clip, {f32({1}, {1}), i64({}, {0})}}, "Clip");
}

TEST(ReferenceMath, ErfSoftplusAtKnownValues) {
  // erf from tables (Abramowitz & Stegun 7.1), to 16 digits.
  expect_values(run_op({Op::Erf, {f32({5}, {0, 0.5f, -1, 3, -10})}})[0], {5},
                {0, 0.5204998778130465, -0.8427007929497149, 0.9999779095030014, -1});
  EXPECT_TRUE(std::isnan(run_op({Op::Erf, {f32({1}, {NAN})}})[0].element_as_double(0)));
  // log(1 + e^x): ln 2 at 0; x + e^-x at 100; e^x at -100 (no underflow to 0, no overflow).
  auto sp = run_op({Op::Softplus, {f32({4}, {0, 1, 100, -100})}});
  expect_values(sp[0], {4}, {0.6931471805599453, 1.3132616875182228, 100, 3.720075976020836e-44});
  EXPECT_NEAR(sp[0].element_as_double(3) / 3.720075976020836e-44, 1.0, 1e-12);
  EXPECT_EQ(run_op({Op::Softplus, {f32({1}, {INFINITY})}})[0].element_as_double(0), INFINITY);
  EXPECT_EQ(run_op({Op::Softplus, {f32({1}, {-INFINITY})}})[0].element_as_double(0), 0.0);
}

TEST(ReferenceMath, CeilFloorAbsReciprocal) {
  const float above2 = std::nextafter(2.0f, 3.0f);     // 2 + 2^-22
  const float above_m2 = std::nextafter(-2.0f, 0.0f);  // -2 + 2^-23
  Tensor x = f32({7}, {-1.5f, 2, above2, above_m2, 0.25f, 4194304.5f, 1e20f});
  expect_values(run_op({Op::Ceil, {x}})[0], {7}, {-1, 2, 3, -1, 1, 4194305, 1e20f});
  expect_values(run_op({Op::Floor, {x}})[0], {7}, {-2, 2, 2, -2, 0, 4194304, 1e20f});
  expect_values(run_op({Op::Abs, {f32({3}, {-3.5f, 0, 2})}})[0], {3}, {3.5, 0, 2});
  auto ai = run_op({Op::Abs, {i64s({-7, 0, 4})}});
  EXPECT_EQ(ai[0].dtype(), DType::Int64);
  expect_values(ai[0], {3}, {7, 0, 4});
  expect_values(run_op({Op::Reciprocal, {f32({3}, {2, -4, 0.5f})}})[0], {3}, {0.5, -0.25, 2});
}

TEST(ReferenceClip, BoundsOptionalAndOrdered) {
  Tensor x = f32({5}, {-2, -0.5f, 0, 0.5f, 2});
  expect_values(run_op({Op::Clip, {x, f32({}, {-1}), f32({}, {1})}})[0], {5}, {-1, -0.5, 0, 0.5, 1});
  expect_values(run_op({Op::Clip, {x, Tensor{}, f32({1}, {0})}})[0], {5}, {-2, -0.5, 0, 0, 0});
  expect_values(run_op({Op::Clip, {x, f32({}, {0})}})[0], {5}, {0, 0, 0, 0.5, 2});
  expect_values(run_op({Op::Clip, {x}})[0], {5}, {-2, -0.5, 0, 0.5, 2});
  // min > max: every value becomes max (ONNX).
  expect_values(run_op({Op::Clip, {x, f32({}, {1}), f32({}, {-1})}})[0], {5}, {-1, -1, -1, -1, -1});
  EXPECT_TRUE(std::isnan(run_op({Op::Clip, {f32({1}, {NAN}), f32({}, {0}), f32({}, {1})}})[0].element_as_double(0)));
  auto ci = run_op({Op::Clip, {i64s({-9, 3, 12}), i64({}, {0}), i64({}, {10})}});
  EXPECT_EQ(ci[0].dtype(), DType::Int64);
  expect_values(ci[0], {3}, {0, 3, 10});
  EXPECT_THROW(run_op({Op::Clip, {x, f32({2}, {0, 1})}}), Error);
}

}  // namespace
}  // namespace lockstep::testing
