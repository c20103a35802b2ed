#include "dynamic/predict.h"

#include <cstring>

namespace lockstep::dynamic {

namespace {

bool is_comparison(ir::Op op) {
  return op == ir::Op::Greater || op == ir::Op::Less || op == ir::Op::GreaterOrEqual || op == ir::Op::LessOrEqual;
}

}  // namespace

std::vector<Prediction> predict_selections(const ir::Graph& graph) {
  std::vector<Prediction> out(graph.nodes.size(), Prediction::None);
  const std::vector<int> producer = graph.producers();
  auto made_by = [&](ir::ValueId v) -> const ir::Node* {
    if (v == ir::kNoValue || graph.is_constant(v)) return nullptr;
    const int p = producer[static_cast<size_t>(v)];
    return p < 0 ? nullptr : &graph.nodes[static_cast<size_t>(p)];
  };
  // A comparison of a run-time value with a constant bound.
  auto bound_test = [&](ir::ValueId v) {
    const ir::Node* n = made_by(v);
    return n && is_comparison(n->op) && n->inputs.size() == 2 &&
           (graph.is_constant(n->inputs[0]) != graph.is_constant(n->inputs[1]));
  };
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& node = graph.nodes[i];
    // (The mask's dtype is not checked here: an export without value_info leaves it unset until the
    // probe infers it; the probe predicts only a bool mask.)
    if (node.op != ir::Op::NonZero || node.inputs.empty()) continue;
    bool flipped = false;
    const ir::Node* n = made_by(node.inputs[0]);
    while (n && (n->op == ir::Op::Not || n->op == ir::Op::Expand)) {
      if (n->op == ir::Op::Not) flipped = !flipped;
      n = made_by(n->inputs.at(0));
    }
    if (n && n->op == ir::Op::And && n->inputs.size() == 2 && bound_test(n->inputs[0]) && bound_test(n->inputs[1]))
      out[i] = flipped ? Prediction::AllFalse : Prediction::AllTrue;
  }
  return out;
}

Tensor predicted_mask(Prediction prediction, DType dtype, const Shape& shape) {
  if (dtype != DType::Bool || prediction == Prediction::None)
    throw Error(ErrorCode::Internal, "predicted_mask: only a bool mask with a prediction");
  Tensor t(DType::Bool, shape);  // zero-filled: every element false
  if (prediction == Prediction::AllTrue && t.nbytes()) std::memset(t.raw(), 1, t.nbytes());
  return t;
}

bool prediction_holds(Prediction prediction, const Tensor& mask) {
  if (prediction == Prediction::None || mask.dtype() != DType::Bool) return false;
  const auto* b = static_cast<const unsigned char*>(mask.raw());
  const bool want = prediction == Prediction::AllTrue;
  for (size_t i = 0; i < mask.nbytes(); ++i)
    if ((b[i] != 0) != want) return false;
  return true;
}

}  // namespace lockstep::dynamic
