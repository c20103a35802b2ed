#include "ir/infer.h"
namespace lockstep::ir {
std::vector<ValueType> infer_node(const Graph&, const Node&) { throw Error(ErrorCode::Internal, "infer: not implemented yet"); }
Shape broadcast_shapes(const Shape&, const Shape&) { throw Error(ErrorCode::Internal, "infer: not implemented yet"); }
}  // namespace lockstep::ir
