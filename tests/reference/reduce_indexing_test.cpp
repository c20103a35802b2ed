// Hand-worked cases for the reductions, CumSum and the indexing ops on the reference (each also
// cross-checks ir::infer_node's shape), and the out-of-range index errors.
#include <gtest/gtest.h>

#include <cmath>

#include "reference/op_runner.h"

namespace lockstep::testing {
namespace {

using ir::Op;

Tensor x23() { return f32({2, 3}, {1, 2, 3, 4, 5, 6}); }

TEST(RefReduce, AxesKeepdimsAndNoop) {
  expect_values(run_op({Op::ReduceSum, {x23(), i64s({1})}, A().i("keepdims", 0)})[0], {2}, {6, 15});
  expect_values(run_op({Op::ReduceSum, {x23(), i64s({0})}})[0], {1, 3}, {5, 7, 9});
  expect_values(run_op({Op::ReduceMean, {x23(), i64s({-1})}})[0], {2, 1}, {2, 5});
  expect_values(run_op({Op::ReduceMax, {x23()}, A().i("keepdims", 0)})[0], {}, {6});
  expect_values(run_op({Op::ReduceMin, {x23(), i64s({0, 1})}})[0], {1, 1}, {1});
  // No axes: every dim, unless noop_with_empty_axes (then the identity).
  expect_values(run_op({Op::ReduceSum, {x23(), i64s({})}, A().i("noop_with_empty_axes", 1)})[0], {2, 3},
                {1, 2, 3, 4, 5, 6});
  expect_values(run_op({Op::ReduceSum, {x23(), i64s({})}})[0], {1, 1}, {21});
  // Integers stay integers (ReduceMean truncates).
  Tensor out = run_op({Op::ReduceMean, {i64({2, 2}, {1, 2, 4, 7}), i64s({1})}, A().i("keepdims", 0)})[0];
  EXPECT_EQ(out.dtype(), DType::Int64);
  expect_values(out, {2}, {1, 5});
}

TEST(RefReduce, EmptyAndNaN) {
  Tensor empty = f32({0, 2}, {});
  expect_values(run_op({Op::ReduceSum, {empty, i64s({0})}, A().i("keepdims", 0)})[0], {2}, {0, 0});
  Tensor mx = run_op({Op::ReduceMax, {empty, i64s({0})}, A().i("keepdims", 0)})[0];
  EXPECT_TRUE(std::isinf(mx.element_as_double(0)) && mx.element_as_double(0) < 0);
  Tensor nan = run_op({Op::ReduceMax, {f32({3}, {1, NAN, 2})}})[0];
  EXPECT_TRUE(std::isnan(nan.element_as_double(0)));
  EXPECT_THROW(run_op({Op::ReduceSum, {x23(), i64s({1, -1})}}), Error);  // the same axis twice
}

TEST(RefCumSum, ExclusiveReverseAxis) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(run_op({Op::CumSum, {x, i64s({1})}})[0], {2, 3}, {1, 3, 6, 4, 9, 15});
  expect_values(run_op({Op::CumSum, {x, i64s({0})}})[0], {2, 3}, {1, 2, 3, 5, 7, 9});
  expect_values(run_op({Op::CumSum, {x, i64s({-1})}, A().i("exclusive", 1)})[0], {2, 3}, {0, 1, 3, 0, 4, 9});
  expect_values(run_op({Op::CumSum, {x, i64s({1})}, A().i("reverse", 1)})[0], {2, 3}, {6, 5, 3, 15, 11, 6});
  expect_values(run_op({Op::CumSum, {x, i64s({1})}, A().i("reverse", 1).i("exclusive", 1)})[0], {2, 3},
                {5, 3, 0, 11, 6, 0});
  Tensor ints = run_op({Op::CumSum, {Tensor::from_vector<int32_t>({3}, {1, 2, 3}), i64s({0})}})[0];
  EXPECT_EQ(ints.dtype(), DType::Int32);
  expect_values(ints, {3}, {1, 3, 6});
}

TEST(RefIndexing, NonZero) {
  // numpy: np.array(np.nonzero([[1, 0], [1, 1]])) = [[0, 1, 1], [0, 0, 1]]
  Tensor x = Tensor::from_vector<bool>({2, 2}, {true, false, true, true});
  expect_values(run_op({Op::NonZero, {x}})[0], {2, 3}, {0, 1, 1, 0, 0, 1});
  expect_values(run_op({Op::NonZero, {f32({4}, {0, 3, 0, -1})}})[0], {1, 2}, {1, 3});
  expect_values(run_op({Op::NonZero, {f32({2}, {0, 0})}})[0], {1, 0}, {});
}

TEST(RefIndexing, GatherND) {
  // The ONNX operator examples.
  Tensor data = f32({2, 2}, {0, 1, 2, 3});
  expect_values(run_op({Op::GatherND, {data, i64({2, 2}, {0, 0, 1, 1})}})[0], {2}, {0, 3});
  expect_values(run_op({Op::GatherND, {data, i64({2, 1}, {1, 0})}})[0], {2, 2}, {2, 3, 0, 1});
  Tensor d3 = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  expect_values(run_op({Op::GatherND, {d3, i64({2, 1}, {1, 0})}, A().i("batch_dims", 1)})[0], {2, 2}, {2, 3, 4, 5});
  expect_values(run_op({Op::GatherND, {d3, i64({2, 2}, {-1, 1, 0, -2})}})[0], {2, 2}, {6, 7, 0, 1});
}

TEST(RefIndexing, ScatterND) {
  // The ONNX operator example (1-D) and reductions with a repeated index.
  Tensor data = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor idx = i64({4, 1}, {4, 3, 1, 7});
  Tensor upd = f32({4}, {9, 10, 11, 12});
  expect_values(run_op({Op::ScatterND, {data, idx, upd}})[0], {8}, {1, 11, 3, 10, 9, 6, 7, 12});
  Tensor rep = i64({2, 1}, {1, 1});
  Tensor two = f32({2}, {10, 5});
  expect_values(run_op({Op::ScatterND, {data, rep, two}, A().s("reduction", "add")})[0], {8}, {1, 17, 3, 4, 5, 6, 7, 8});
  expect_values(run_op({Op::ScatterND, {data, rep, two}, A().s("reduction", "mul")})[0], {8}, {1, 100, 3, 4, 5, 6, 7, 8});
  expect_values(run_op({Op::ScatterND, {data, rep, two}})[0], {8}, {1, 5, 3, 4, 5, 6, 7, 8});  // last wins
  Tensor m = f32({2, 2}, {1, 2, 3, 4});
  expect_values(run_op({Op::ScatterND, {m, i64({1, 1}, {-1}), f32({1, 2}, {8, 9})}})[0], {2, 2}, {1, 2, 8, 9});
}

TEST(RefIndexing, GatherElements) {
  // The ONNX operator examples.
  Tensor data = f32({2, 2}, {1, 2, 3, 4});
  expect_values(run_op({Op::GatherElements, {data, i64({2, 2}, {0, 0, 1, 0})}, A().i("axis", 1)})[0], {2, 2},
                {1, 1, 4, 3});
  Tensor d33 = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_values(run_op({Op::GatherElements, {d33, i64({2, 3}, {1, 2, 0, 2, 0, 0})}})[0], {2, 3}, {4, 8, 3, 7, 2, 3});
  expect_values(run_op({Op::GatherElements, {d33, i64({2, 3}, {-1, -2, 0, -2, 0, 0})}})[0], {2, 3},
                {7, 5, 3, 4, 2, 3});
}

// An index out of range names the node, the op and the index, on every indexing op.
TEST(RefIndexing, OutOfRangeIndexIsAnErrorNamingTheNode) {
  auto expect_bad = [](const OpCall& call, const std::string& index) {
    try {
      run_op(call);
      ADD_FAILURE() << "no error for index " << index;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_EQ(e.node(), "n0");
      EXPECT_EQ(e.op(), ir::op_name(call.op));
      EXPECT_NE(std::string(e.what()).find("index " + index + " "), std::string::npos) << e.what();
    }
  };
  Tensor data = f32({2, 2}, {1, 2, 3, 4});
  expect_bad({Op::GatherND, {data, i64({1, 2}, {0, 2})}}, "2");
  expect_bad({Op::GatherND, {data, i64({1, 1}, {-3})}}, "-3");
  expect_bad({Op::ScatterND, {data, i64({1, 1}, {5}), f32({1, 2}, {0, 0})}}, "5");
  expect_bad({Op::GatherElements, {data, i64({1, 2}, {0, 7})}, A().i("axis", 1)}, "7");
  expect_bad({Op::GatherElements, {data, i64({1, 1}, {-3})}}, "-3");
}

}  // namespace
}  // namespace lockstep::testing
