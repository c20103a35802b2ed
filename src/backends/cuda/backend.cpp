// The "cuda" Backend: availability, what it cannot run, and compile.
#include "backends/cuda/backend.h"

#include "backends/cuda/executor.h"
#include "backends/cuda/families.h"

namespace lockstep::cuda {
namespace {

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }

  bool available(std::string* why_not) const override { return device_available(why_not); }

  std::optional<std::string> unsupported_reason(const ir::Graph& graph, const ir::Node& node) const override {
    for (ir::ValueId v : node.outputs)
      if (v != ir::kNoValue && graph.value(v).shape.size() > static_cast<size_t>(kMaxRank))
        return "tensors of rank > 8 are not supported on CUDA";
    for (const auto& step : node.epilogue) {
      if (!ir::is_unary_elementwise(step.op) && !ir::is_binary_elementwise(step.op))
        return std::string("epilogue step ") + ir::op_name(step.op) + " is not element-wise";
    }
    switch (node.op) {
      case ir::Op::Conv: case ir::Op::ConvTranspose:
        return conv_unsupported(graph, node);
      case ir::Op::MatMul: case ir::Op::Gemm: case ir::Op::Softmax:
        return matmul_unsupported(graph, node);
      case ir::Op::Shape: case ir::Op::ConstantOfShape: case ir::Op::Range:
        return shape_op_unsupported(graph, node);
      case ir::Op::Slice: case ir::Op::Split: case ir::Op::Concat: case ir::Op::Reshape: case ir::Op::Flatten:
      case ir::Op::Transpose: case ir::Op::Unsqueeze: case ir::Op::Squeeze: case ir::Op::Pad: case ir::Op::Gather:
      case ir::Op::Expand:
        return data_movement_unsupported(graph, node);
      case ir::Op::Less: case ir::Op::LessOrEqual: case ir::Op::Greater: case ir::Op::GreaterOrEqual:
      case ir::Op::And: case ir::Op::Or: case ir::Op::Xor: case ir::Op::Not:
        return logical_unsupported(graph, node);
      case ir::Op::ReduceMean: case ir::Op::ReduceSum: case ir::Op::ReduceMax: case ir::Op::ReduceMin:
      case ir::Op::CumSum:
        return reduce_unsupported(graph, node);
      case ir::Op::ScatterND: case ir::Op::GatherND: case ir::Op::GatherElements:
        return indexing_unsupported(graph, node);
      case ir::Op::RandomNormal: case ir::Op::RandomNormalLike: case ir::Op::RandomUniform:
      case ir::Op::RandomUniformLike:
        return random_unsupported(graph, node);
      case ir::Op::NonZero:
        return std::string("data-dependent output shape: runs in the run-time shape stage");
      default:
        return elementwise_unsupported(graph, node);
    }
  }

  std::unique_ptr<Executable> compile(const ir::Graph& graph, const Options& options) const override {
    for (const auto& node : graph.nodes)
      if (auto reason = unsupported_reason(graph, node))
        throw Error(ErrorCode::UnsupportedOp, "cuda backend: " + *reason, node.name, ir::op_name(node.op));
    return std::make_unique<CudaExecutable>(graph, options);
  }
  // replan() plans every graph again for its views, absorptions and in-place pairs.
  bool plans_memory() const override { return true; }
};

}  // namespace

const Backend& backend() {
  static CudaBackend instance;
  return instance;
}

}  // namespace lockstep::cuda
