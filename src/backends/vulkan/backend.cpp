// The "vulkan" Backend: availability, what it cannot run (with the reason), and compile.
#include "backends/vulkan/backend.h"

#include "backends/vulkan/device.h"
#include "backends/vulkan/executor.h"
#include "backends/vulkan/families.h"
#include "ir/graph.h"

namespace lockstep::vulkan {
namespace {

// Run-time tensors of the float kernels are float32; the families that take other element types
// (data movement, indexing, the typed kernels, reductions, random) check them themselves.
std::optional<std::string> value_unsupported(const ir::Graph& graph, ir::ValueId id, bool any_dtype) {
  if (id == ir::kNoValue) return std::nullopt;
  const ir::Value& v = graph.value(id);
  if (!v.shape_known()) return "value '" + v.name + "' has no static shape";
  if (v.shape.size() > static_cast<size_t>(kMaxRank)) return "tensors of rank > 6 are not supported on vulkan";
  if (num_elements(v.shape) > (int64_t{1} << 31) - 1) return "tensors of 2^31 elements or more are not supported on vulkan";
  if (v.dtype == DType::Float64)
    return "value '" + v.name + "' is float64; vulkan computes in float32 only (use the reference)";
  if (v.dtype != DType::Float32 && !any_dtype)
    return std::string(dtype_name(v.dtype)) + " values are not supported on vulkan yet (float32 kernels)";
  return std::nullopt;
}

class VulkanBackend final : public Backend {
 public:
  std::string name() const override { return "vulkan"; }

  bool available(std::string* why_not) const override { return device(why_not) != nullptr; }

  std::optional<std::string> unsupported_reason(const ir::Graph& graph, const ir::Node& node) const override {
    if (ir::has_data_dependent_shape(node.op)) return std::string("data-dependent output shape: runs in the run-time shape stage");
    // These families check their own element types.
    const bool own_types = is_data_movement(node.op) || is_indexing(node.op) || is_typed_elementwise(graph, node) ||
                           is_reduce(node.op) || ir::is_random(node.op);
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (!ir::is_parameter_input(node.op, i))
        if (auto r = value_unsupported(graph, node.inputs[i], own_types)) return r;
    for (ir::ValueId v : node.outputs)
      if (auto r = value_unsupported(graph, v, own_types)) return r;
    for (const auto& step : node.epilogue) {
      if (auto r = epilogue_step_unsupported(step.op)) return "epilogue step " + *r;
      if (auto r = value_unsupported(graph, step.operand, false)) return r;
      if (step.op == ir::Op::Pow)
        if (auto r = pow_exponent_unsupported(graph, step.operand)) return "epilogue step " + *r;
    }
    Device* dev = device();
    const bool int64 = dev && dev->int64, float64 = dev && dev->float64;
    switch (node.op) {
      case ir::Op::Conv: case ir::Op::ConvTranspose:
        return conv_unsupported(graph, node);
      case ir::Op::MatMul: case ir::Op::Gemm: case ir::Op::Softmax:
        return matmul_unsupported(graph, node);
      default:
        if (ir::is_random(node.op)) return random_unsupported(graph, node, float64);
        if (is_reduce(node.op)) return reduce_unsupported(graph, node, int64);
        if (is_indexing(node.op)) return indexing_unsupported(graph, node);
        if (is_typed_elementwise(graph, node)) return typed_elementwise_unsupported(graph, node, int64, float64);
        if (is_data_movement(node.op)) return data_movement_unsupported(graph, node);
        return elementwise_unsupported(graph, node);
    }
  }

  std::unique_ptr<Executable> compile(const ir::Graph& graph, const Options& options) const override {
    for (const auto& node : graph.nodes)
      if (auto reason = unsupported_reason(graph, node))
        throw Error(ErrorCode::UnsupportedOp, "vulkan backend: " + *reason, node.name, ir::op_name(node.op));
    return std::make_unique<VulkanExecutable>(graph, options);
  }
};

}  // namespace

const Backend& backend() {
  static VulkanBackend instance;
  return instance;
}

std::string device_description() {
  std::string why;
  Device* d = device(&why);
  return d ? d->description() : why;
}

}  // namespace lockstep::vulkan
