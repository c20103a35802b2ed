#include "backends/vulkan/program.h"

#include <algorithm>
#include <limits>

namespace lockstep::vulkan {

uint32_t Context::at(ir::ValueId v) const {
  if (v == ir::kNoValue || static_cast<size_t>(v) >= offsets_.size() || offsets_[static_cast<size_t>(v)] < 0)
    throw Error(ErrorCode::Internal, "vulkan: value " + std::to_string(v) + " has no arena slot");
  const int64_t words = offsets_[static_cast<size_t>(v)] / 4;
  if (words > std::numeric_limits<int32_t>::max())
    throw Error(ErrorCode::LimitExceeded, "vulkan: value '" + graph_.value(v).name + "' lies past 8 GiB in the arena");
  return static_cast<uint32_t>(words);
}

uint32_t Context::key_slot(int node) const {
  for (const auto& [n, w] : keys_)
    if (n == node) return w;
  throw Error(ErrorCode::Internal, "vulkan: random node " + std::to_string(node) + " has no key slot");
}

uint32_t Context::error_slot(int node) const {
  for (const auto& [n, w] : errors_)
    if (n == node) return w;
  throw Error(ErrorCode::Internal, "vulkan: node " + std::to_string(node) + " has no error word");
}

uint32_t Context::workspace(int node) const {
  for (const auto& [n, w] : workspaces_)
    if (n == node) return w;
  throw Error(ErrorCode::Internal, "vulkan: node " + std::to_string(node) + " has no workspace");
}

uint32_t Context::add_params(const std::vector<uint32_t>& words) {
  const auto base = static_cast<uint32_t>(params_.size());
  params_.insert(params_.end(), words.begin(), words.end());
  return base;
}

uint32_t groups_for(int64_t n, int64_t local) {
  const int64_t g = (n + local - 1) / local;
  return static_cast<uint32_t>(std::clamp<int64_t>(g, 1, 65535));
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out) {
  const std::vector<int64_t> own = contiguous_strides(shape);
  std::vector<int64_t> result(out.size(), 0);
  const size_t shift = out.size() - shape.size();
  for (size_t d = shift; d < out.size(); ++d) {
    const size_t j = d - shift;
    result[d] = (shape[j] == 1 && out[d] != 1) ? 0 : own[j];
  }
  return result;
}

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

std::vector<int64_t> constant_ints(const ir::Graph& graph, const ir::Node& node, size_t index) {
  std::vector<int64_t> result;
  if (index >= node.inputs.size() || node.inputs[index] == ir::kNoValue) return result;
  const Tensor& t = graph.value(node.inputs[index]).constant;
  if (!t.defined())
    throw Error(ErrorCode::UnsupportedAttribute, "vulkan: parameter input " + std::to_string(index) + " must be a constant",
                node.name, ir::op_name(node.op));
  for (int64_t i = 0; i < t.numel(); ++i) result.push_back(t.element_as_int(i));
  return result;
}

uint32_t word(int64_t v, const ir::Node& node) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    throw Error(ErrorCode::LimitExceeded, "vulkan: " + std::to_string(v) + " does not fit the kernels' 32-bit indices", node.name,
                ir::op_name(node.op));
  return static_cast<uint32_t>(static_cast<int32_t>(v));
}

}  // namespace lockstep::vulkan
