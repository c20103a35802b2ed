// Reference: Shape, ConstantOfShape, Range, Cast, Equal, Where.
#include <cstring>

#include "reference/kernels.h"

namespace lockstep::reference {

std::vector<Tensor> eval_Shape(const NodeContext& ctx) {
  const Shape& x = ctx.in(0).shape();
  auto [start, end] = ir::shape_range(ctx.node, static_cast<int64_t>(x.size()));
  return {Tensor::from_vector<int64_t>({end - start},
                                       std::vector<int64_t>(x.begin() + start, x.begin() + end))};
}

std::vector<Tensor> eval_ConstantOfShape(const NodeContext& ctx) {
  Shape shape = ctx.ints(0);
  const Tensor* value = ctx.node.attrs.get_tensor("value");
  if (value && value->numel() != 1)
    ctx.fail(ErrorCode::UnsupportedAttribute, "value must hold one element");
  Tensor fill = value ? to_reference(*value) : Tensor::scalar<double>(0.0);
  Tensor out(fill.dtype(), shape);
  size_t size = dtype_size(fill.dtype());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(dst + i * size, fill.raw(), size);
  return {out};
}

std::vector<Tensor> eval_Range(const NodeContext& ctx) {
  const Tensor& start = ctx.in(0);
  double s = start.element_as_double(0), l = ctx.in(1).element_as_double(0),
         d = ctx.in(2).element_as_double(0);
  int64_t n = ir::range_count(ctx.node, s, l, d);
  Tensor out(start.dtype(), {n});
  for (int64_t i = 0; i < n; ++i) {
    switch (start.dtype()) {
      case DType::Float64:
        out.data<double>()[i] = s + static_cast<double>(i) * d;
        break;
      case DType::Int64:
        out.data<int64_t>()[i] = start.element_as_int(0) + i * ctx.in(2).element_as_int(0);
        break;
      case DType::Int32:
        out.data<int32_t>()[i] =
            static_cast<int32_t>(start.element_as_int(0) + i * ctx.in(2).element_as_int(0));
        break;
      default:
        ctx.fail(ErrorCode::DTypeMismatch, "Range does not accept bool inputs");
    }
  }
  return {out};
}

std::vector<Tensor> eval_Cast(const NodeContext& ctx) {
  DType to = ir::cast_target(ctx.node);
  // Floating values stay double in the reference: Cast to float32 does not round.
  if (to == DType::Float32) to = DType::Float64;
  const Tensor& x = ctx.in(0);
  return {x.dtype() == to ? x : x.to(to)};
}

std::vector<Tensor> eval_Equal(const NodeContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  if (a.dtype() != b.dtype())
    ctx.fail(ErrorCode::DTypeMismatch, std::string("inputs have different dtypes: ") +
                                           dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
  Shape shape = ir::node_broadcast(ctx.node, a.shape(), b.shape());
  Tensor out(DType::Bool, shape);
  bool* o = out.data<bool>();
  bool floating = is_floating(a.dtype());
  auto sa = broadcast_strides(a.shape(), shape), sb = broadcast_strides(b.shape(), shape);
  for_each_broadcast(shape, {sa, sb}, [&](int64_t i, const std::vector<int64_t>& off) {
    o[i] = floating ? a.element_as_double(off[0]) == b.element_as_double(off[1])
                    : a.element_as_int(off[0]) == b.element_as_int(off[1]);
  });
  return {out};
}

std::vector<Tensor> eval_Where(const NodeContext& ctx) {
  const Tensor& c = ctx.in(0);
  const Tensor& x = ctx.in(1);
  const Tensor& y = ctx.in(2);
  if (c.dtype() != DType::Bool) ctx.fail(ErrorCode::DTypeMismatch, "condition must be bool");
  if (x.dtype() != y.dtype())
    ctx.fail(ErrorCode::DTypeMismatch, "X and Y must have the same dtype");
  Shape shape =
      ir::node_broadcast(ctx.node, c.shape(), ir::node_broadcast(ctx.node, x.shape(), y.shape()));
  Tensor out(x.dtype(), shape);
  size_t size = dtype_size(x.dtype());
  auto* dst = static_cast<std::byte*>(out.raw());
  auto* px = static_cast<const std::byte*>(x.raw());
  auto* py = static_cast<const std::byte*>(y.raw());
  const bool* pc = c.data<bool>();
  auto strides = std::vector<std::vector<int64_t>>{broadcast_strides(c.shape(), shape),
                                                   broadcast_strides(x.shape(), shape),
                                                   broadcast_strides(y.shape(), shape)};
  for_each_broadcast(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
    const std::byte* src = pc[off[0]] ? px + off[1] * static_cast<int64_t>(size)
                                      : py + off[2] * static_cast<int64_t>(size);
    std::memcpy(dst + i * static_cast<int64_t>(size), src, size);
  });
  return {out};
}

}  // namespace lockstep::reference
