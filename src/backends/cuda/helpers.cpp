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
int output0_producer(const ir::Graph& graph, const backends::ChannelFacts& facts, ir::ValueId v) {
  const int n = facts.made_by[static_cast<size_t>(v)];
  return n >= 0 && graph.nodes[static_cast<size_t>(n)].outputs[0] == v ? n : -1;
}
}  // namespace

int reader_count(const backends::ChannelFacts& facts, ir::ValueId v) {
  if (facts.is_output[static_cast<size_t>(v)]) return -1;
  return static_cast<int>(facts.readers[static_cast<size_t>(v)].size());
}

int conv_input_producer(const ir::Graph& graph, const backends::ChannelFacts& facts, ir::ValueId v) {
  if (reader_count(facts, v) < 1) return -1;
  for (size_t k : facts.readers[static_cast<size_t>(v)]) {
    const ir::Node& n = graph.nodes[k];
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] == v && (n.op != ir::Op::Conv || i != 0)) return -1;
    for (const auto& step : n.epilogue)
      if (step.operand == v) return -1;
  }
  return output0_producer(graph, facts, v);
}

int sole_reader_producer(const ir::Graph& graph, const backends::ChannelFacts& facts, ir::ValueId v) {
  return reader_count(facts, v) == 1 ? output0_producer(graph, facts, v) : -1;
}

}  // namespace lockstep::cuda
