// Reference: comparisons (Less, LessOrEqual, Greater, GreaterOrEqual) and logical ops (And, Or,
// Xor, Not), numpy broadcasting, bool results. Integers compare exactly as int64, floating values
// as double (NaN compares false).
#include "reference/kernels.h"

namespace lockstep::reference {

namespace {

template <class T>
bool compare(ir::Op op, T a, T b) {
  switch (op) {
    case ir::Op::Less: return a < b;
    case ir::Op::LessOrEqual: return a <= b;
    case ir::Op::Greater: return a > b;
    case ir::Op::GreaterOrEqual: return a >= b;
    case ir::Op::And: return a && b;
    case ir::Op::Or: return a || b;
    case ir::Op::Xor: return static_cast<bool>(a) != static_cast<bool>(b);
    default: throw Error(ErrorCode::Internal, std::string("not a comparison: ") + ir::op_name(op));
  }
}

std::vector<Tensor> binary_bool(const NodeContext& ctx, bool logical) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  if (a.dtype() != b.dtype())
    ctx.fail(ErrorCode::DTypeMismatch, std::string("inputs have different dtypes: ") +
                                           dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
  if (logical != (a.dtype() == DType::Bool))
    ctx.fail(ErrorCode::DTypeMismatch, std::string("does not accept ") + dtype_name(a.dtype()) + " inputs");
  Shape shape = ir::node_broadcast(ctx.node, a.shape(), b.shape());
  Tensor out(DType::Bool, shape);
  bool* o = out.data<bool>();
  const bool floating = is_floating(a.dtype());
  const ir::Op op = ctx.node.op;
  auto sa = broadcast_strides(a.shape(), shape), sb = broadcast_strides(b.shape(), shape);
  for_each_broadcast(shape, {sa, sb}, [&](int64_t i, const std::vector<int64_t>& off) {
    o[i] = floating ? compare(op, a.element_as_double(off[0]), b.element_as_double(off[1]))
                    : compare(op, a.element_as_int(off[0]), b.element_as_int(off[1]));
  });
  return {out};
}

}  // namespace

std::vector<Tensor> eval_Less(const NodeContext& ctx) { return binary_bool(ctx, false); }
std::vector<Tensor> eval_LessOrEqual(const NodeContext& ctx) { return binary_bool(ctx, false); }
std::vector<Tensor> eval_Greater(const NodeContext& ctx) { return binary_bool(ctx, false); }
std::vector<Tensor> eval_GreaterOrEqual(const NodeContext& ctx) { return binary_bool(ctx, false); }
std::vector<Tensor> eval_And(const NodeContext& ctx) { return binary_bool(ctx, true); }
std::vector<Tensor> eval_Or(const NodeContext& ctx) { return binary_bool(ctx, true); }
std::vector<Tensor> eval_Xor(const NodeContext& ctx) { return binary_bool(ctx, true); }

std::vector<Tensor> eval_Not(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.dtype() != DType::Bool)
    ctx.fail(ErrorCode::DTypeMismatch, std::string("does not accept ") + dtype_name(x.dtype()) + " input");
  Tensor out(DType::Bool, x.shape());
  const bool* px = x.data<bool>();
  bool* o = out.data<bool>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = !px[i];
  return {out};
}

}  // namespace lockstep::reference
