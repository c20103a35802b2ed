// Internals of the reference interpreter: the per-op evaluators (one per ops.inc entry, defined
// in the family files) and the broadcasting and indexing helpers they share.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/infer_rules.h"

namespace lockstep::reference {

// What an evaluator sees: its node and the input tensors (floating ones already Float64).
struct NodeContext {
  const ir::Graph& graph;
  const ir::Node& node;
  const std::vector<Tensor>& inputs;
  uint64_t seed = 0;  // the run's seed (random ops)

  bool has(size_t i) const { return i < inputs.size() && inputs[i].defined(); }
  const Tensor& in(size_t i) const;  // throws InvalidModel when absent
  std::vector<int64_t> ints(size_t i) const { return ir::tensor_ints(in(i)); }
  [[noreturn]] void fail(ErrorCode code, const std::string& message) const {
    ir::fail(node, code, message);
  }
};

using Evaluator = std::vector<Tensor> (*)(const NodeContext&);

#define LOCKSTEP_OP(name, onnx, attrs) std::vector<Tensor> eval_##name(const NodeContext& ctx);
#include "ir/ops.inc"
#undef LOCKSTEP_OP

// Float32 → Float64; other dtypes unchanged (shares storage).
Tensor to_reference(const Tensor& t);

std::vector<int64_t> strides_of(const Shape& shape);
// Strides of `in` read at the coordinates of `out` (numpy broadcasting: 0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Calls f(out_index, offsets) for every element of `out`, with one offset per input stride set.
template <class F>
void for_each_broadcast(const Shape& out, const std::vector<std::vector<int64_t>>& strides, F&& f) {
  int64_t total = num_elements(out);
  if (total == 0) return;
  size_t rank = out.size(), n = strides.size();
  std::vector<int64_t> index(rank, 0), offsets(n, 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, offsets);
    for (size_t d = rank; d-- > 0;) {
      ++index[d];
      for (size_t k = 0; k < n; ++k) offsets[k] += strides[k][d];
      if (index[d] < out[d]) break;
      for (size_t k = 0; k < n; ++k) offsets[k] -= strides[k][d] * out[d];
      index[d] = 0;
    }
  }
}

// Elementwise math in double, shared by the op evaluators and the epilogue.
double unary_op(ir::Op op, double x, double alpha);
double binary_op(ir::Op op, double a, double b);

// Applies node.epilogue to `acc` (Float64) in place; operands[i] is step i's operand.
void apply_epilogue(const ir::Node& node, Tensor& acc, const std::vector<Tensor>& operands);

// Dispatches to the per-op evaluator (generated from ops.inc).
std::vector<Tensor> dispatch(const NodeContext& ctx);

}  // namespace lockstep::reference
