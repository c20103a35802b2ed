// Reference elementwise, matrix and shape ops, and epilogues, on hand-worked cases.
#include <gtest/gtest.h>

#include <cmath>

#include "reference/op_runner.h"

namespace lockstep::testing {
namespace {

using ir::Op;

TEST(ReferenceElementwise, NumpyBroadcasting) {
  Tensor a = f32({2, 1}, {1, 2}), b = f32({3}, {10, 20, 30});
  expect_values(run_op({Op::Add, {a, b}})[0], {2, 3}, {11, 21, 31, 12, 22, 32});
  expect_values(run_op({Op::Sub, {b, a}})[0], {2, 3}, {9, 19, 29, 8, 18, 28});
  expect_values(run_op({Op::Div, {a, f32({}, {4})}})[0], {2, 1}, {0.25, 0.5});
  expect_values(run_op({Op::Pow, {a, f32({1}, {3})}})[0], {2, 1}, {1, 8});
  EXPECT_THROW(run_op({Op::Mul, {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}}), Error);
}

TEST(ReferenceElementwise, ComputesInDouble) {
  // 1 + 1e-10 is not representable in float32; the reference keeps it.
  auto y = run_op(
      {Op::Add,
       {Tensor::from_vector<double>({1}, {1.0}), Tensor::from_vector<double>({1}, {1e-10})}});
  EXPECT_EQ(y[0].dtype(), DType::Float64);
  EXPECT_EQ(y[0].data<double>()[0], 1.0 + 1e-10);
}

TEST(ReferenceElementwise, Unary) {
  Tensor x = f32({3}, {-2, 0, 1});
  expect_values(run_op({Op::Relu, {x}})[0], {3}, {0, 0, 1});
  // LeakyRelu alpha 0.1f is read as 0.1 (shortest decimal of the float32).
  expect_values(run_op({Op::LeakyRelu, {x}, A().f("alpha", 0.1f)})[0], {3}, {-0.2, 0, 1});
  expect_values(run_op({Op::Neg, {x}})[0], {3}, {2, 0, -1});
  expect_values(run_op({Op::Tanh, {x}})[0], {3}, {std::tanh(-2.0), 0, std::tanh(1.0)});
  expect_values(run_op({Op::Sigmoid, {x}})[0], {3}, {0.11920292202211755, 0.5, 0.7310585786300049});
  expect_values(run_op({Op::Exp, {x}})[0], {3}, {0.1353352832366127, 1, 2.718281828459045});
  expect_values(run_op({Op::Sqrt, {f32({2}, {4, 2})}})[0], {2}, {2, 1.4142135623730951});
  expect_values(run_op({Op::Identity, {i64s({5})}})[0], {1}, {5});
}

TEST(ReferenceElementwise, IntegerArithmetic) {
  auto y = run_op({Op::Div, {i64s({7, -7}), i64s({2, 2})}});
  EXPECT_EQ(y[0].dtype(), DType::Int64);
  expect_values(y[0], {2}, {3, -3});  // truncation, as ONNX
  expect_values(run_op({Op::Mul, {i64s({3, 4}), i64({}, {2})}})[0], {2}, {6, 8});
}

TEST(ReferenceMatMul, BatchedAndOneDimensional) {
  // [[[1,2]],[[3,4]]] @ [1,1] = [[3],[7]]
  expect_values(run_op({Op::MatMul, {f32({2, 1, 2}, {1, 2, 3, 4}), f32({2}, {1, 1})}})[0], {2, 1},
                {3, 7});
  // [1,2] @ [[1,2],[3,4]] = [7,10]
  expect_values(run_op({Op::MatMul, {f32({2}, {1, 2}), f32({2, 2}, {1, 2, 3, 4})}})[0], {2},
                {7, 10});
  // broadcast batch: [2,2] @ [2,2,2] (identity, then 2*identity)
  auto y =
      run_op({Op::MatMul, {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2})}});
  expect_values(y[0], {2, 2, 2}, {1, 2, 3, 4, 2, 4, 6, 8});
}

TEST(ReferenceGemm, TransBAlphaBetaBroadcastC) {
  // A = [[1,2,3],[4,5,6]], B = [[1,0,1],[0,1,0]] (transB): A·Bᵀ = [[4,2],[10,5]];
  // 2·that + 0.5·[1,2] = [[8.5,5],[20.5,11]].
  auto y =
      run_op({Op::Gemm,
              {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 3}, {1, 0, 1, 0, 1, 0}), f32({2}, {1, 2})},
              A().i("transB", 1).f("alpha", 2).f("beta", 0.5f)});
  expect_values(y[0], {2, 2}, {8.5, 5, 20.5, 11});
  // transA: Aᵀ of [[1,2],[3,4]] times I = [[1,3],[2,4]]
  auto t = run_op(
      {Op::Gemm, {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {1, 0, 0, 1})}, A().i("transA", 1)});
  expect_values(t[0], {2, 2}, {1, 3, 2, 4});
}

TEST(ReferenceSoftmax, LastAxisAndAxis0) {
  // softmax([1,2,3]) with numpy: [0.09003057317038046, 0.24472847105479767, 0.6652409557748219]
  auto y = run_op({Op::Softmax, {f32({1, 3}, {1, 2, 3})}});
  expect_values(y[0], {1, 3}, {0.09003057317038046, 0.24472847105479767, 0.6652409557748219});
  // axis 0 of [[1,2,3],[1,1,1]]: column softmax; 1/(1+e^-1) = 0.7310585786300049
  auto z = run_op({Op::Softmax, {f32({2, 3}, {1, 2, 3, 1, 1, 1})}, A().i("axis", 0)});
  expect_values(
      z[0], {2, 3},
      {0.5, 0.7310585786300049, 0.8807970779778823, 0.5, 0.2689414213699951, 0.11920292202211755});
}

TEST(ReferenceCast, FloatIntBool) {
  Tensor x = f32({3}, {1.7f, -1.7f, 0});
  auto i = run_op({Op::Cast, {x}, A().i("to", 7)});
  EXPECT_EQ(i[0].dtype(), DType::Int64);
  expect_values(i[0], {3}, {1, -1, 0});
  auto b = run_op({Op::Cast, {x}, A().i("to", 9)});
  EXPECT_EQ(b[0].dtype(), DType::Bool);
  expect_values(b[0], {3}, {1, 1, 0});
  auto f = run_op({Op::Cast, {i64s({3})}, A().i("to", 1)});
  EXPECT_EQ(f[0].dtype(), DType::Float64);  // floating results are double in the reference
  expect_values(run_op({Op::Cast, {i64s({3})}, A().i("to", 6)})[0], {1}, {3});
  EXPECT_THROW(run_op({Op::Cast, {x}, A().i("to", 10)}), Error);  // float16
}

TEST(ReferenceShapeOps, ShapeConstantOfShapeRangeEqualWhere) {
  expect_values(
      run_op(
          {Op::Shape, {f32({2, 3, 4}, std::vector<float>(24))}, A().i("start", 1).i("end", -1)})[0],
      {1}, {3});
  expect_values(
      run_op({Op::Shape, {f32({2, 3, 4}, std::vector<float>(24))}, A().i("start", -2)})[0], {2},
      {3, 4});
  auto c = run_op({Op::ConstantOfShape, {i64s({2, 2})}, A().t("value", i64({1}, {7}))});
  EXPECT_EQ(c[0].dtype(), DType::Int64);
  expect_values(c[0], {2, 2}, {7, 7, 7, 7});
  expect_values(run_op({Op::ConstantOfShape, {i64s({2})}})[0], {2}, {0, 0});
  expect_values(run_op({Op::Range, {i64({}, {10}), i64({}, {1}), i64({}, {-3})}})[0], {3},
                {10, 7, 4});
  expect_values(run_op({Op::Range, {f32({}, {0}), f32({}, {1}), f32({}, {0.25f})}})[0], {4},
                {0, 0.25, 0.5, 0.75});
  auto eq = run_op({Op::Equal, {i64s({1, 2, 3}), i64({1}, {2})}});
  EXPECT_EQ(eq[0].dtype(), DType::Bool);
  expect_values(eq[0], {3}, {0, 1, 0});
  auto w = run_op({Op::Where, {eq[0], i64s({-1}), i64s({5, 6, 7})}});
  expect_values(w[0], {3}, {5, -1, 7});
}

TEST(ReferenceEpilogue, StepsApplyInOrderWithOperandSide) {
  // Conv (identity 1x1) then: acc = 10 - acc (operand lhs), acc = LeakyRelu(acc, 0.5).
  ir::Graph g;
  auto value = [&](const char* name, Tensor t) {
    ir::Value v;
    v.name = name;
    v.dtype = t.dtype();
    v.shape = t.shape();
    v.constant = t;
    return g.add_value(std::move(v));
  };
  ir::ValueId x = value("x", f32({1, 1, 3}, {1, 12, 20}));
  ir::ValueId w = value("w", f32({1, 1, 1}, {1}));
  ir::ValueId ten = value("ten", f32({1}, {10}));
  ir::Value out;
  out.name = "y";
  ir::ValueId y = g.add_value(out);
  ir::Node node;
  node.op = Op::Conv;
  node.name = "conv";
  node.inputs = {x, w};
  node.outputs = {y};
  node.epilogue.push_back({Op::Sub, ten, true, 0.0f, "sub"});
  node.epilogue.push_back({Op::LeakyRelu, ir::kNoValue, false, 0.5f, "act"});
  g.nodes.push_back(node);
  auto r = reference::evaluate_node(g, g.nodes[0], {g.value(x).constant, g.value(w).constant});
  // 10 - [1,12,20] = [9,-2,-10] → [9,-1,-5]
  expect_values(r[0], {1, 1, 3}, {9, -1, -5});
}

}  // namespace
}  // namespace lockstep::testing
