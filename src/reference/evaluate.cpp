#include "reference/evaluate.h"
namespace lockstep::reference {
std::vector<Tensor> evaluate(const ir::Graph&, const std::vector<Tensor>&, const TapFn&) { throw Error(ErrorCode::Internal, "reference: not implemented yet"); }
std::vector<Tensor> evaluate_node(const ir::Graph&, const ir::Node&, const std::vector<Tensor>&) { throw Error(ErrorCode::Internal, "reference: not implemented yet"); }
const Backend& backend() { throw Error(ErrorCode::Internal, "reference: not implemented yet"); }
}  // namespace lockstep::reference
