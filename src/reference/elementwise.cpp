// Reference: unary and binary elementwise ops (numpy broadcasting), computed in double.
#include <algorithm>
#include <cmath>

#include "reference/kernels.h"

namespace lockstep::reference {

double unary_op(ir::Op op, double x, double alpha) {
  switch (op) {
    case ir::Op::Tanh:
      return std::tanh(x);
    case ir::Op::Sigmoid:
      return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
    case ir::Op::Relu:
      return x > 0 ? x : 0.0;
    case ir::Op::LeakyRelu:
      return x >= 0 ? x : alpha * x;
    case ir::Op::Exp:
      return std::exp(x);
    case ir::Op::Neg:
      return -x;
    case ir::Op::Sqrt:
      return std::sqrt(x);
    case ir::Op::Identity:
      return x;
    case ir::Op::Erf:
      return std::erf(x);
    case ir::Op::Softplus:  // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
      return x != x ? x : std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
    case ir::Op::Ceil:
      return std::ceil(x);
    case ir::Op::Floor:
      return std::floor(x);
    case ir::Op::Abs:
      return std::abs(x);
    case ir::Op::Reciprocal:
      return 1.0 / x;
    default:
      throw Error(ErrorCode::Internal, std::string("not a unary op: ") + ir::op_name(op));
  }
}

double binary_op(ir::Op op, double a, double b) {
  switch (op) {
    case ir::Op::Add:
      return a + b;
    case ir::Op::Sub:
      return a - b;
    case ir::Op::Mul:
      return a * b;
    case ir::Op::Div:
      return a / b;
    case ir::Op::Pow:
      return std::pow(a, b);
    default:
      throw Error(ErrorCode::Internal, std::string("not a binary op: ") + ir::op_name(op));
  }
}

namespace {

template <class T>
T integer_binary(const NodeContext& ctx, T a, T b) {
  switch (ctx.node.op) {
    case ir::Op::Add:
      return static_cast<T>(a + b);
    case ir::Op::Sub:
      return static_cast<T>(a - b);
    case ir::Op::Mul:
      return static_cast<T>(a * b);
    case ir::Op::Div:
      if (b == 0) ctx.fail(ErrorCode::InvalidModel, "integer division by zero");
      return static_cast<T>(a / b);  // truncates toward zero, as ONNX
    default:
      return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
}

template <class T>
Tensor integer_binary_tensor(const NodeContext& ctx, const Tensor& a, const Tensor& b,
                             const Shape& out_shape) {
  Tensor out(a.dtype(), out_shape);
  T* o = out.data<T>();
  const T* pa = a.data<T>();
  auto sa = broadcast_strides(a.shape(), out_shape), sb = broadcast_strides(b.shape(), out_shape);
  for_each_broadcast(out_shape, {sa, sb}, [&](int64_t i, const std::vector<int64_t>& off) {
    o[i] = integer_binary<T>(ctx, pa[off[0]], static_cast<T>(b.element_as_int(off[1])));
  });
  return out;
}

std::vector<Tensor> binary(const NodeContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  Shape out_shape = ir::node_broadcast(ctx.node, a.shape(), b.shape());
  if (a.dtype() == DType::Int64) return {integer_binary_tensor<int64_t>(ctx, a, b, out_shape)};
  if (a.dtype() == DType::Int32) return {integer_binary_tensor<int32_t>(ctx, a, b, out_shape)};
  if (a.dtype() != DType::Float64)
    ctx.fail(ErrorCode::DTypeMismatch,
             std::string("does not accept ") + dtype_name(a.dtype()) + " inputs");
  if (ctx.node.op != ir::Op::Pow && b.dtype() != DType::Float64)
    ctx.fail(ErrorCode::DTypeMismatch,
             std::string("inputs have different dtypes: float and ") + dtype_name(b.dtype()));
  Tensor out(DType::Float64, out_shape);
  double* o = out.data<double>();
  const double* pa = a.data<double>();
  Tensor bd = b.dtype() == DType::Float64 ? b : b.to(DType::Float64);
  const double* pb = bd.data<double>();
  ir::Op op = ctx.node.op;
  if (a.shape() == out_shape && b.shape() == out_shape) {
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = binary_op(op, pa[i], pb[i]);
  } else {
    auto sa = broadcast_strides(a.shape(), out_shape), sb = broadcast_strides(b.shape(), out_shape);
    for_each_broadcast(out_shape, {sa, sb}, [&](int64_t i, const std::vector<int64_t>& off) {
      o[i] = binary_op(op, pa[off[0]], pb[off[1]]);
    });
  }
  return {out};
}

std::vector<Tensor> unary(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  ir::Op op = ctx.node.op;
  if (op == ir::Op::Identity) return {x};
  if (x.dtype() == DType::Int64 || x.dtype() == DType::Int32) {
    if (op != ir::Op::Neg && op != ir::Op::Relu && op != ir::Op::Abs)
      ctx.fail(ErrorCode::DTypeMismatch,
               std::string("does not accept ") + dtype_name(x.dtype()) + " input");
    Tensor out(x.dtype(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t v = x.element_as_int(i);
      v = op == ir::Op::Neg ? -v : op == ir::Op::Abs ? (v < 0 ? -v : v) : (v > 0 ? v : 0);
      if (x.dtype() == DType::Int64)
        out.data<int64_t>()[i] = v;
      else
        out.data<int32_t>()[i] = static_cast<int32_t>(v);
    }
    return {out};
  }
  if (x.dtype() != DType::Float64)
    ctx.fail(ErrorCode::DTypeMismatch,
             std::string("does not accept ") + dtype_name(x.dtype()) + " input");
  double alpha = ir::attr_double(ctx.node.attrs.get_float("alpha", 0.01f));
  Tensor out(DType::Float64, x.shape());
  const double* px = x.data<double>();
  double* o = out.data<double>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = unary_op(op, px[i], alpha);
  return {out};
}

}  // namespace

std::vector<Tensor> eval_Add(const NodeContext& ctx) {
  return binary(ctx);
}
std::vector<Tensor> eval_Sub(const NodeContext& ctx) {
  return binary(ctx);
}
std::vector<Tensor> eval_Mul(const NodeContext& ctx) {
  return binary(ctx);
}
std::vector<Tensor> eval_Div(const NodeContext& ctx) {
  return binary(ctx);
}
std::vector<Tensor> eval_Pow(const NodeContext& ctx) {
  return binary(ctx);
}
std::vector<Tensor> eval_Tanh(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_Sigmoid(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_Relu(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_LeakyRelu(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_Exp(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_Neg(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_Sqrt(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_Identity(const NodeContext& ctx) {
  return unary(ctx);
}

std::vector<Tensor> eval_Erf(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_Softplus(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_Ceil(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_Floor(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_Abs(const NodeContext& ctx) {
  return unary(ctx);
}
std::vector<Tensor> eval_Reciprocal(const NodeContext& ctx) {
  return unary(ctx);
}

}  // namespace lockstep::reference
