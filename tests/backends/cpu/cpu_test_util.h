// Builds small one-node (or few-node) graphs, runs them on the cpu backend and on the float64
// reference, and compares with named tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/backend.h"
#include "ir/graph.h"
#include "ir/infer.h"
#include "reference/evaluate.h"

namespace lockstep::cpu_test {

// float32 against float64: relative L2 over the tensor, and a per-element bound that grows with
// the reduction length (each product/sum adds ~1 float32 rounding of the running magnitude).
inline constexpr double kCpuRelL2 = 1e-6;
inline constexpr double kCpuAbsPerTerm = 2e-7;

inline Tensor random_tensor(Shape shape, uint32_t seed, DType dtype = DType::Float32, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = dist(rng);
    switch (dtype) {
      case DType::Float32: t.data<float>()[i] = v; break;
      case DType::Float64: t.data<double>()[i] = v; break;
      case DType::Int64: t.data<int64_t>()[i] = static_cast<int64_t>(std::lround(v * 4)); break;
      case DType::Int32: t.data<int32_t>()[i] = static_cast<int32_t>(std::lround(v * 4)); break;
      case DType::Bool: t.data<bool>()[i] = v > 0; break;
    }
  }
  return t;
}

struct In {
  Tensor value;
  bool runtime = true;  // false: a constant of the graph (weights, parameters)
};

// A node's attributes from {name, value} pairs.
inline ir::Attributes attrs(std::initializer_list<std::pair<std::string, ir::Attribute>> list) {
  ir::Attributes a;
  for (auto& [k, v] : list) a.set(k, v);
  return a;
}

// One node; output shapes from ir::infer_node; runtime inputs become graph inputs in order.
inline ir::Graph node_graph(ir::Op op, const std::vector<In>& inputs, ir::Attributes attrs = {}, size_t outputs = 1) {
  ir::Graph g;
  ir::Node node;
  node.op = op;
  node.name = std::string(ir::op_name(op)) + "_0";
  node.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].value.defined()) {
      node.inputs.push_back(ir::kNoValue);
      continue;
    }
    ir::Value v;
    v.name = "in" + std::to_string(i);
    v.dtype = inputs[i].value.dtype();
    v.shape = inputs[i].value.shape();
    if (!inputs[i].runtime) v.constant = inputs[i].value;
    ir::ValueId id = g.add_value(std::move(v));
    node.inputs.push_back(id);
    if (inputs[i].runtime) g.inputs.push_back(id);
  }
  for (size_t o = 0; o < outputs; ++o) {
    ir::Value v;
    v.name = "out" + std::to_string(o);
    node.outputs.push_back(g.add_value(std::move(v)));
  }
  g.nodes.push_back(node);
  // Shape inference may read constants: give it the runtime values too, then drop them.
  ir::Graph probe = g;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (node.inputs[i] != ir::kNoValue) probe.value(node.inputs[i]).constant = inputs[i].value;
  auto types = ir::infer_node(probe, probe.nodes[0]);
  for (size_t o = 0; o < outputs; ++o) {
    g.value(node.outputs[o]).dtype = types.at(o).dtype;
    g.value(node.outputs[o]).shape = types.at(o).shape;
    g.outputs.push_back(node.outputs[o]);
  }
  return g;
}

inline std::vector<Tensor> runtime_inputs(const std::vector<In>& inputs) {
  std::vector<Tensor> r;
  for (const auto& in : inputs)
    if (in.value.defined() && in.runtime) r.push_back(in.value);
  return r;
}

struct Diff {
  double rel_l2 = 0, max_abs = 0, ref_max = 0;
  bool finite = true;
};

inline Diff diff(const Tensor& got, const Tensor& want) {
  Diff d;
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.element_as_double(i), w = want.element_as_double(i);
    if (std::isfinite(w) && !std::isfinite(g)) d.finite = false;
    if (!std::isfinite(w)) continue;
    num += (g - w) * (g - w);
    den += w * w;
    d.max_abs = std::max(d.max_abs, std::fabs(g - w));
    d.ref_max = std::max(d.ref_max, std::fabs(w));
  }
  d.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return d;
}

// Checks a backend's outputs against the reference's with the given named bounds: integer
// outputs exactly, floating ones by relative L2 and a max-abs bound scaled by `terms`.
inline void expect_outputs_match(const std::vector<Tensor>& got, const std::vector<Tensor>& want, int64_t terms,
                                 const std::string& what, double rel_l2, double abs_per_term) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(shape_str(got[o].shape()), shape_str(want[o].shape())) << what << " output " << o;
    if (!is_floating(want[o].dtype())) {
      ASSERT_EQ(got[o].dtype(), want[o].dtype()) << what;
      for (int64_t i = 0; i < want[o].numel(); ++i)
        ASSERT_EQ(got[o].element_as_int(i), want[o].element_as_int(i)) << what << " element " << i;
      continue;
    }
    Diff d = diff(got[o], want[o]);
    EXPECT_TRUE(d.finite) << what << ": NaN/Inf where the reference is finite";
    EXPECT_LE(d.rel_l2, rel_l2) << what << " output " << o;
    EXPECT_LE(d.max_abs, abs_per_term * static_cast<double>(terms) * std::max(1.0, d.ref_max) + 1e-30)
        << what << " output " << o;
  }
}

// Runs `g` on cpu and on the reference; checks every output. `terms`: reduction length.
inline void expect_matches_reference(const ir::Graph& g, const std::vector<Tensor>& inputs, int64_t terms = 1,
                                     const std::string& what = "") {
  auto exe = cpu::backend().compile(g, Options{});
  expect_outputs_match(exe->run(inputs), reference::evaluate(g, inputs), terms, what, kCpuRelL2, kCpuAbsPerTerm);
}

}  // namespace lockstep::cpu_test
