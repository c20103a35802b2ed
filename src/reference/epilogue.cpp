// Reference: a node's fused epilogue steps, applied in order to its output 0 (see ir/graph.h).
#include "reference/kernels.h"

namespace lockstep::reference {

void apply_epilogue(const ir::Node& node, Tensor& acc, const std::vector<Tensor>& operands) {
  if (acc.dtype() != DType::Float64)
    ir::fail(node, ErrorCode::DTypeMismatch, "an epilogue needs a floating output");
  double* pa = acc.data<double>();
  for (size_t s = 0; s < node.epilogue.size(); ++s) {
    const ir::EpilogueStep& step = node.epilogue[s];
    if (ir::is_unary_elementwise(step.op)) {
      double alpha = ir::attr_double(step.alpha);
      for (int64_t i = 0; i < acc.numel(); ++i) pa[i] = unary_op(step.op, pa[i], alpha);
      continue;
    }
    if (!ir::is_binary_elementwise(step.op))
      ir::fail(node, ErrorCode::Internal,
               std::string("epilogue step ") + ir::op_name(step.op) + " is not elementwise");
    const Tensor& operand = operands.at(s);
    if (!operand.defined() || operand.dtype() != DType::Float64)
      ir::fail(node, ErrorCode::Internal,
               "epilogue step '" + step.onnx_name + "' has no floating operand");
    // The epilogue never changes the output shape: the operand must broadcast to it.
    if (ir::node_broadcast(node, operand.shape(), acc.shape()) != acc.shape())
      ir::fail(node, ErrorCode::ShapeMismatch,
               "epilogue operand " + shape_str(operand.shape()) + " does not broadcast to " +
                   shape_str(acc.shape()));
    const double* pb = operand.data<double>();
    for_each_broadcast(acc.shape(), {broadcast_strides(operand.shape(), acc.shape())},
                       [&](int64_t i, const std::vector<int64_t>& off) {
                         pa[i] = step.operand_is_lhs ? binary_op(step.op, pb[off[0]], pa[i])
                                                     : binary_op(step.op, pa[i], pb[off[0]]);
                       });
  }
}

}  // namespace lockstep::reference
