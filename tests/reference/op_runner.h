// Runs one op on the reference (evaluate_node) and cross-checks ir::infer_node's output shapes.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ir/graph.h"
#include "ir/infer.h"
#include "reference/evaluate.h"

namespace lockstep::testing {

// Hand-worked values are exact in binary or given to ~16 digits.
inline constexpr double kHandTol = 1e-12;

struct OpCall {
  ir::Op op;
  std::vector<Tensor> inputs;  // undefined = omitted optional input
  ir::Attributes attrs;
  size_t outputs = 1;
};

inline ir::Graph one_node_graph(const OpCall& call) {
  ir::Graph g;
  ir::Node node;
  node.op = call.op;
  node.name = "n0";
  node.attrs = call.attrs;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (!call.inputs[i].defined()) {
      node.inputs.push_back(ir::kNoValue);
      continue;
    }
    ir::Value v;
    v.name = "in" + std::to_string(i);
    v.dtype = call.inputs[i].dtype();
    v.shape = call.inputs[i].shape();
    v.constant = call.inputs[i];  // lets infer_node read parameter inputs
    node.inputs.push_back(g.add_value(std::move(v)));
  }
  for (size_t o = 0; o < call.outputs; ++o) {
    ir::Value v;
    v.name = "out" + std::to_string(o);
    node.outputs.push_back(g.add_value(std::move(v)));
  }
  g.nodes.push_back(std::move(node));
  return g;
}

inline std::vector<Tensor> run_op(const OpCall& call) {
  ir::Graph g = one_node_graph(call);
  std::vector<Tensor> out = reference::evaluate_node(g, g.nodes[0], call.inputs);
  auto types = ir::infer_node(g, g.nodes[0]);
  EXPECT_EQ(types.size(), out.size());
  for (size_t i = 0; i < out.size() && i < types.size(); ++i)
    EXPECT_EQ(shape_str(types[i].shape), shape_str(out[i].shape()))
        << "infer_node disagrees on output " << i;
  return out;
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

inline void expect_values(const Tensor& t, const Shape& shape,
                          const std::vector<double>& expected) {
  EXPECT_EQ(shape_str(t.shape()), shape_str(shape));
  auto got = values(t);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], kHandTol) << "element " << i;
}

inline Tensor f32(Shape shape, std::vector<float> v) {
  return Tensor::from_vector<float>(std::move(shape), v);
}
inline Tensor i64(Shape shape, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(std::move(shape), v);
}
inline Tensor i64s(std::vector<int64_t> v) {
  Shape s{static_cast<int64_t>(v.size())};
  return Tensor::from_vector<int64_t>(s, v);
}

// Attribute builder: A().i("group", 2).is("pads", {1, 1}).s("auto_pad", "VALID").
struct A {
  ir::Attributes a;
  A& i(const char* k, int64_t v) {
    a.set(k, v);
    return *this;
  }
  A& f(const char* k, float v) {
    a.set(k, v);
    return *this;
  }
  A& s(const char* k, std::string v) {
    a.set(k, std::move(v));
    return *this;
  }
  A& is(const char* k, std::vector<int64_t> v) {
    a.set(k, std::move(v));
    return *this;
  }
  A& t(const char* k, Tensor v) {
    a.set(k, std::move(v));
    return *this;
  }
  operator ir::Attributes() const { return a; }
};

}  // namespace lockstep::testing
