// Reference: Clip(x, [min], [max]) = min(max(x, min), max); min and max are one-element tensors
// (constants or computed at run time), an absent one does not bound. min > max gives max, as
// ONNX specifies; NaN stays NaN.
#include "reference/kernels.h"

namespace lockstep::reference {

namespace {

const Tensor* bound(const NodeContext& ctx, size_t i) {
  if (!ctx.has(i)) return nullptr;
  const Tensor& t = ctx.in(i);
  if (t.numel() != 1)
    ctx.fail(ErrorCode::ShapeMismatch,
             std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " + shape_str(t.shape()));
  if (t.dtype() != ctx.in(0).dtype())
    ctx.fail(ErrorCode::DTypeMismatch, std::string(i == 1 ? "min" : "max") + " has dtype " +
                                           dtype_name(t.dtype()) + ", the input " + dtype_name(ctx.in(0).dtype()));
  return &t;
}

template <class T>
void clip(const Tensor& x, const Tensor* lo, const Tensor* hi, Tensor& out) {
  const T* px = x.data<T>();
  T* o = out.data<T>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    T v = px[i];
    if (lo && v < lo->data<T>()[0]) v = lo->data<T>()[0];
    if (hi && v > hi->data<T>()[0]) v = hi->data<T>()[0];
    o[i] = v;
  }
}

}  // namespace

std::vector<Tensor> eval_Clip(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor* lo = bound(ctx, 1);
  const Tensor* hi = bound(ctx, 2);
  Tensor out(x.dtype(), x.shape());
  switch (x.dtype()) {
    case DType::Float64: clip<double>(x, lo, hi, out); break;
    case DType::Int64: clip<int64_t>(x, lo, hi, out); break;
    case DType::Int32: clip<int32_t>(x, lo, hi, out); break;
    default: ctx.fail(ErrorCode::DTypeMismatch, std::string("does not accept ") + dtype_name(x.dtype()) + " input");
  }
  return {out};
}

}  // namespace lockstep::reference
