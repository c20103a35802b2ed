// Host helpers that several op families share (declared in families.h): broadcast strides and
// dimension collapsing for strided kernels, constant parameter inputs, and graph queries.
#include "backends/cuda/families.h"

namespace lockstep::cuda {

void collapse_dims(std::vector<int64_t>& dims, std::vector<std::vector<int64_t>*> strides) {
  std::vector<int64_t> nd;
  std::vector<std::vector<int64_t>> ns(strides.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    bool merge = !nd.empty();
    for (size_t k = 0; k < strides.size() && merge; ++k)
      if (ns[k].back() != (*strides[k])[d] * dims[d]) merge = false;
    if (merge) {
      nd.back() *= dims[d];
      for (size_t k = 0; k < strides.size(); ++k) ns[k].back() = (*strides[k])[d];
    } else {
      nd.push_back(dims[d]);
      for (size_t k = 0; k < strides.size(); ++k) ns[k].push_back((*strides[k])[d]);
    }
  }
  if (nd.empty()) {
    nd.push_back(1);
    for (auto& s : ns) s.push_back(0);
  }
  dims = nd;
  for (size_t k = 0; k < strides.size(); ++k) *strides[k] = ns[k];
}

std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out) {
  std::vector<int64_t> own = contiguous_strides(shape);
  std::vector<int64_t> result(out.size(), 0);
  const size_t shift = out.size() - shape.size();
  for (size_t d = shift; d < out.size(); ++d) {
    const size_t j = d - shift;
    result[d] = (shape[j] == 1 && out[d] != 1) ? 0 : own[j];
  }
  return result;
}

std::vector<int64_t> constant_ints(const ir::Graph& graph, const ir::Node& node, size_t index) {
  std::vector<int64_t> result;
  if (index >= node.inputs.size() || node.inputs[index] == ir::kNoValue) return result;
  const Tensor& t = graph.value(node.inputs[index]).constant;
  if (!t.defined())
    throw Error(ErrorCode::UnsupportedAttribute, "cuda: parameter input " + std::to_string(index) + " must be a constant",
                node.name, ir::op_name(node.op));
  for (int64_t i = 0; i < t.numel(); ++i) result.push_back(t.element_as_int(i));
  return result;
}

namespace {
// The node whose outputs[0] is `v`, or -1.
int output0_producer(const ir::Graph& graph, ir::ValueId v) {
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    const ir::Node& n = graph.nodes[static_cast<size_t>(i)];
    if (!n.outputs.empty() && n.outputs[0] == v) return i;
  }
  return -1;
}
}  // namespace

int reader_count(const ir::Graph& graph, ir::ValueId v) {
  for (ir::ValueId out : graph.outputs)
    if (out == v) return -1;
  int readers = 0;
  for (const ir::Node& n : graph.nodes) {
    for (ir::ValueId in : n.inputs) readers += in == v;
    for (const auto& step : n.epilogue) readers += step.operand == v;
  }
  return readers;
}

int conv_input_producer(const ir::Graph& graph, ir::ValueId v) {
  if (reader_count(graph, v) < 1) return -1;
  for (const ir::Node& n : graph.nodes) {
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (n.inputs[k] == v && (n.op != ir::Op::Conv || k != 0)) return -1;
    for (const auto& step : n.epilogue)
      if (step.operand == v) return -1;
  }
  return output0_producer(graph, v);
}

int sole_reader_producer(const ir::Graph& graph, ir::ValueId v) {
  return reader_count(graph, v) == 1 ? output0_producer(graph, v) : -1;
}

}  // namespace lockstep::cuda
