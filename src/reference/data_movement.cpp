// Reference: Slice, Split, Concat, Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Expand,
// Gather. Element copies are byte copies so every dtype goes through the same loops.
#include <cstring>

#include "reference/kernels.h"

namespace lockstep::reference {

namespace {

// One row of a strided view: `count` elements `stride` apart, of `size` bytes each.
void copy_row(std::byte* dst, const std::byte* src, int64_t count, int64_t stride, int64_t size) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(count * size));
    return;
  }
  auto rows = [&](auto element) {
    using T = decltype(element);
    for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * size, src + i * stride * size, sizeof(T));
  };
  if (size == 8) rows(int64_t{});
  else if (size == 4) rows(int32_t{});
  else if (size == 1) rows(int8_t{});
  else
    for (int64_t i = 0; i < count; ++i)
      std::memcpy(dst + i * size, src + i * stride * size, static_cast<size_t>(size));
}

// Copies the strided view (base offset + per-dim strides, in elements) of `x` into a new tensor,
// a row (the last dim) at a time: the run-time shape stage folds a voice's relative-position
// tables through these at every new length.
Tensor gather_view(const Tensor& x, const Shape& out_shape, int64_t base,
                   const std::vector<int64_t>& strides) {
  Tensor out(x.dtype(), out_shape);
  if (out.numel() == 0) return out;
  const int64_t size = static_cast<int64_t>(dtype_size(x.dtype()));
  auto* dst = static_cast<std::byte*>(out.raw());
  const auto* src = static_cast<const std::byte*>(x.raw());
  if (out_shape.empty()) {
    std::memcpy(dst, src + base * size, static_cast<size_t>(size));
    return out;
  }
  const size_t rank = out_shape.size();
  const int64_t row = out_shape[rank - 1], row_stride = strides[rank - 1];
  const int64_t rows = out.numel() / row;
  std::vector<int64_t> index(rank - 1, 0);
  int64_t offset = base;
  for (int64_t r = 0; r < rows; ++r) {
    copy_row(dst + r * row * size, src + offset * size, row, row_stride, size);
    for (size_t d = rank - 1; d-- > 0;) {  // the next row's offset: an odometer over the outer dims
      offset += strides[d];
      if (++index[d] < out_shape[d]) break;
      offset -= strides[d] * out_shape[d];
      index[d] = 0;
    }
  }
  return out;
}

std::vector<int64_t> optional_ints(const NodeContext& ctx, size_t i, bool* present) {
  *present = ctx.has(i);
  return *present ? ctx.ints(i) : std::vector<int64_t>{};
}

}  // namespace

std::vector<Tensor> eval_Slice(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  bool has_axes, has_steps;
  auto axes = optional_ints(ctx, 3, &has_axes);
  auto steps = optional_ints(ctx, 4, &has_steps);
  auto dims = ir::slice_dims(ctx.node, x.shape(), ctx.ints(1), ctx.ints(2),
                             has_axes ? &axes : nullptr, has_steps ? &steps : nullptr);
  auto in_strides = strides_of(x.shape());
  Shape out_shape;
  std::vector<int64_t> strides;
  int64_t base = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    out_shape.push_back(dims[d].count);
    strides.push_back(in_strides[d] * dims[d].step);
    if (dims[d].count > 0) base += dims[d].start * in_strides[d];
  }
  return {gather_view(x, out_shape, base, strides)};
}

std::vector<Tensor> eval_Split(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  bool has_sizes;
  auto sizes_in = optional_ints(ctx, 1, &has_sizes);
  auto sizes = ir::split_sizes(ctx.node, x.shape(), has_sizes ? &sizes_in : nullptr);
  size_t axis = static_cast<size_t>(ir::split_axis(ctx.node, x.rank()));
  auto strides = strides_of(x.shape());
  std::vector<Tensor> outs;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    Shape shape = x.shape();
    shape[axis] = s;
    outs.push_back(gather_view(x, shape, offset * strides[axis], strides));
    offset += s;
  }
  return outs;
}

std::vector<Tensor> eval_Concat(const NodeContext& ctx) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (ctx.in(i).dtype() != ctx.in(0).dtype())
      ctx.fail(ErrorCode::DTypeMismatch, "inputs have different dtypes");
    shapes.push_back(ctx.in(i).shape());
  }
  int64_t axis = 0;
  Shape out_shape = ir::concat_shape(ctx.node, shapes, &axis);
  Tensor out(ctx.in(0).dtype(), out_shape);
  int64_t size = static_cast<int64_t>(dtype_size(out.dtype()));
  int64_t outer = 1, inner = size;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      int64_t block = shapes[i][static_cast<size_t>(axis)] * inner;
      if (block == 0) continue;
      std::memcpy(dst, static_cast<const std::byte*>(ctx.in(i).raw()) + o * block,
                  static_cast<size_t>(block));
      dst += block;
    }
  }
  return {out};
}

std::vector<Tensor> eval_Reshape(const NodeContext& ctx) {
  return {ctx.in(0).reshaped(ir::reshape_shape(ctx.node, ctx.in(0).shape(), ctx.ints(1)))};
}

std::vector<Tensor> eval_Flatten(const NodeContext& ctx) {
  return {ctx.in(0).reshaped(ir::flatten_shape(ctx.node, ctx.in(0).shape()))};
}

std::vector<Tensor> eval_Squeeze(const NodeContext& ctx) {
  bool has_axes;
  auto axes = optional_ints(ctx, 1, &has_axes);
  return {ctx.in(0).reshaped(
      ir::squeeze_shape(ctx.node, ctx.in(0).shape(), has_axes ? &axes : nullptr))};
}

std::vector<Tensor> eval_Unsqueeze(const NodeContext& ctx) {
  return {ctx.in(0).reshaped(ir::unsqueeze_shape(ctx.node, ctx.in(0).shape(), ctx.ints(1)))};
}

std::vector<Tensor> eval_Transpose(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  auto perm = ir::transpose_perm(ctx.node, x.rank());
  auto in_strides = strides_of(x.shape());
  Shape out_shape;
  std::vector<int64_t> strides;
  for (int64_t p : perm) {
    out_shape.push_back(x.shape()[static_cast<size_t>(p)]);
    strides.push_back(in_strides[static_cast<size_t>(p)]);
  }
  return {gather_view(x, out_shape, 0, strides)};
}

std::vector<Tensor> eval_Expand(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  Shape out_shape = ir::node_broadcast(ctx.node, x.shape(), ctx.ints(1));
  return {gather_view(x, out_shape, 0, broadcast_strides(x.shape(), out_shape))};
}

std::vector<Tensor> eval_Gather(const NodeContext& ctx) {
  const Tensor& data = ctx.in(0);
  const Tensor& indices = ctx.in(1);
  if (indices.dtype() != DType::Int64 && indices.dtype() != DType::Int32)
    ctx.fail(ErrorCode::DTypeMismatch, "indices must be int32 or int64");
  int64_t axis = 0;
  Shape out_shape = ir::gather_shape(ctx.node, data.shape(), indices.shape(), &axis);
  Tensor out(data.dtype(), out_shape);
  int64_t size = static_cast<int64_t>(dtype_size(data.dtype()));
  int64_t outer = 1, inner = size, dim = data.shape()[static_cast<size_t>(axis)];
  for (int64_t d = 0; d < axis; ++d) outer *= data.shape()[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < data.shape().size(); ++d)
    inner *= data.shape()[d];
  auto* dst = static_cast<std::byte*>(out.raw());
  auto* src = static_cast<const std::byte*>(data.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < indices.numel(); ++j) {
      int64_t idx = indices.element_as_int(j);
      if (idx < -dim || idx >= dim)
        ctx.fail(ErrorCode::ShapeMismatch, "index " + std::to_string(idx) +
                                               " is out of range for axis of size " +
                                               std::to_string(dim));
      if (idx < 0) idx += dim;
      std::memcpy(dst, src + (o * dim + idx) * inner, static_cast<size_t>(inner));
      dst += inner;
    }
  }
  return {out};
}

}  // namespace lockstep::reference
