// Which channel consumers a producer could compute in its own store (backends/channel_consumers.h),
// on WaveNet layers after the compile pipeline; no device needed. The CUDA tests
// (tests/gpu/absorb_test.cpp) check the kernels that use these answers.
#include <gtest/gtest.h>

#include "backends/channel_consumers.h"
#include "passes/pipeline.h"
#include "support/graph_check.h"
#include "support/wavenet.h"

namespace lockstep::backends {
namespace {

ir::Graph compiled(const test::WnLayerOptions& o) {
  ir::Graph g = test::wn_layer(o);
  passes::run_pipeline(g, {});
  return g;
}

int node(const ir::Graph& g, const char* onnx_name) {
  const int k = g.find_node(onnx_name);
  EXPECT_GE(k, 0) << onnx_name;
  return k;
}

TEST(ChannelConsumers, WaveNetGateAfterTheInLayerConv) {
  const ir::Graph g = compiled({});
  const auto gate = gate_pattern(g, ChannelFacts(g), node(g, "conv_in"));
  ASSERT_TRUE(gate);
  EXPECT_EQ(g.nodes[gate->unary_a].op, ir::Op::Tanh);
  EXPECT_EQ(g.nodes[gate->unary_b].op, ir::Op::Sigmoid);
  EXPECT_EQ(gate->a.c0, 0);
  EXPECT_EQ(gate->b.c0, 64);
  EXPECT_EQ(gate->a.len, 64);
  EXPECT_TRUE(gate->a_is_lhs);  // Mul(tanh, sigmoid): the tanh value on the left
  EXPECT_EQ(g.value(gate->out).name, "acts");
  EXPECT_FALSE(gate_pattern(g, ChannelFacts(g), node(g, "conv_rs")));
}

TEST(ChannelConsumers, ResidualAndSkipAfterTheResSkipConv) {
  const ir::Graph g = compiled({});
  const auto segs = absorbable_segments(g, ChannelFacts(g), node(g, "conv_rs"));
  ASSERT_TRUE(segs);
  ASSERT_EQ(segs->size(), 2u);
  const ChannelSegment& res = (*segs)[0];
  const ChannelSegment& skip = (*segs)[1];
  EXPECT_EQ(res.range.c0, 0);
  EXPECT_EQ(skip.range.c0, 64);
  ASSERT_GE(res.consumer, 0);
  ASSERT_GE(skip.consumer, 0);
  // x_new = (x + res) * mask: the Add with x on the left, then the fused mask Mul.
  ASSERT_EQ(res.steps.size(), 2u);
  EXPECT_EQ(res.steps[0].op, ir::Op::Add);
  EXPECT_TRUE(res.steps[0].operand_is_lhs);
  EXPECT_EQ(g.value(res.steps[0].operand).name, "x");
  EXPECT_EQ(res.steps[1].op, ir::Op::Mul);
  EXPECT_EQ(g.value(res.steps[1].operand).name, "mask");
  EXPECT_EQ(g.value(res.out).name, "x_new");
  ASSERT_EQ(skip.steps.size(), 1u);
  EXPECT_EQ(g.value(skip.steps[0].operand).name, "s");
  EXPECT_EQ(g.value(skip.out).name, "out");
}

TEST(ChannelConsumers, GateValueNeededElsewhereIsNotAGate) {
  test::WnLayerOptions o;
  o.tanh_is_output = true;
  const ir::Graph g = compiled(o);
  EXPECT_FALSE(gate_pattern(g, ChannelFacts(g), node(g, "conv_in")));
}

// The residual range absorbs, the skip range stays in conv_rs's output for its Slice.
void expect_only_the_residual_absorbed(const test::WnLayerOptions& o, const char* what) {
  const ir::Graph g = compiled(o);
  const auto segs = absorbable_segments(g, ChannelFacts(g), node(g, "conv_rs"));
  ASSERT_TRUE(segs) << what;
  ASSERT_EQ(segs->size(), 2u) << what;
  EXPECT_GE((*segs)[0].consumer, 0) << what;
  EXPECT_EQ((*segs)[1].consumer, -1) << what;
}

TEST(ChannelConsumers, SkipSliceAsGraphOutputOrOperandMadeLaterStaysInTheConvOutput) {
  test::WnLayerOptions o;
  o.skip_is_output = true;
  expect_only_the_residual_absorbed(o, "skip slice as graph output");
  o = {};
  o.late_operand = true;  // relu(s) runs after conv_rs
  expect_only_the_residual_absorbed(o, "operand made after the producer");
}

TEST(ChannelConsumers, ProducerReadByANonSliceHasNoSegments) {
  ir::Graph g = test::wn_layer({});
  test::GraphBuilder b(g);
  const ir::ValueId rs = g.find_value("rs"), r = b.value("relu_rs", g.value(rs).shape);
  g.nodes.push_back(b.node(ir::Op::Relu, "relu_rs", {rs}, r));
  g.outputs.push_back(r);
  passes::run_pipeline(g, {});
  EXPECT_FALSE(absorbable_segments(g, ChannelFacts(g), node(g, "conv_rs")));
}

}  // namespace
}  // namespace lockstep::backends
