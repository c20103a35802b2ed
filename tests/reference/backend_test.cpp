// The reference as a Backend: input checks (count, dtype, shape) and whole-graph evaluation with
// taps.
#include <gtest/gtest.h>

#include "reference/op_runner.h"

namespace lockstep::testing {
namespace {

// x[1,3] → Relu → Mul by constant 2 → y
ir::Graph small_graph() {
  ir::Graph g;
  ir::Value x{"x", DType::Float32, {1, 3}, {}, {}};
  ir::ValueId xi = g.add_value(x);
  ir::Value two{"two", DType::Float32, {}, {}, Tensor::scalar<float>(2)};
  ir::ValueId ti = g.add_value(two);
  ir::ValueId r = g.add_value({"r", DType::Float32, {}, {}, {}});
  ir::ValueId y = g.add_value({"y", DType::Float32, {}, {}, {}});
  g.nodes.push_back({ir::Op::Relu, "relu", {xi}, {r}, {}, {}});
  g.nodes.push_back({ir::Op::Mul, "mul", {r, ti}, {y}, {}, {}});
  g.inputs = {xi};
  g.outputs = {y};
  return g;
}

Error run_error(const std::vector<Tensor>& inputs) {
  auto exe = reference::backend().compile(small_graph(), {});
  try {
    exe->run(inputs);
  } catch (const Error& e) {
    return e;
  }
  return Error(ErrorCode::Internal, "no error");
}

TEST(ReferenceBackend, RunsWithTapsAndReturnsFloat64) {
  const Backend& b = reference::backend();
  EXPECT_EQ(b.name(), "reference");
  EXPECT_TRUE(b.available());
  auto exe = b.compile(small_graph(), {});
  std::vector<std::string> tapped;
  RunOptions options;
  options.tap = [&](const ir::Node& node, int, const Tensor&) { tapped.push_back(node.name); };
  auto out = exe->run({f32({1, 3}, {-1, 2, 3})}, options);
  EXPECT_EQ(out[0].dtype(), DType::Float64);
  expect_values(out[0], {1, 3}, {0, 4, 6});
  EXPECT_EQ(tapped, (std::vector<std::string>{"relu", "mul"}));
}

TEST(ReferenceBackend, MissingInputNamesIt) {
  Error e = run_error({});
  EXPECT_EQ(e.code(), ErrorCode::MissingInput);
  EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
}

TEST(ReferenceBackend, WrongDtypeAndShape) {
  Error d = run_error({i64({1, 3}, {1, 2, 3})});
  EXPECT_EQ(d.code(), ErrorCode::DTypeMismatch);
  EXPECT_NE(std::string(d.what()).find("expects float32, given int64"), std::string::npos)
      << d.what();
  Error s = run_error({f32({1, 2}, {1, 2})});
  EXPECT_EQ(s.code(), ErrorCode::ShapeMismatch);
  EXPECT_NE(std::string(s.what()).find("expects shape [1,3], given [1,2]"), std::string::npos)
      << s.what();
}

}  // namespace
}  // namespace lockstep::testing
