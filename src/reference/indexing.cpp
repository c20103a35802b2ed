// Reference: NonZero, ScatterND, GatherND, GatherElements. Every index is checked against its
// dim (ir::checked_index): out of range is an error naming the node, never a wild read.
#include <cstring>

#include "reference/kernels.h"

namespace lockstep::reference {

namespace {

using ir::Op;

template <class T>
void combine(T* dst, const T* src, int64_t n, const std::string& how) {
  for (int64_t i = 0; i < n; ++i) {
    if (how == "add") dst[i] = static_cast<T>(dst[i] + src[i]);
    else if (how == "mul") dst[i] = static_cast<T>(dst[i] * src[i]);
    else if (how == "max") dst[i] = std::max(dst[i], src[i]);
    else dst[i] = std::min(dst[i], src[i]);
  }
}

// Element offset in `shape` (row-major) of the index tuple idx[0..m) into its leading m dims,
// each index checked.
int64_t tuple_offset(const NodeContext& ctx, const Tensor& indices, int64_t first, int64_t m, const Shape& shape,
                     size_t dim0, const char* what) {
  std::vector<int64_t> strides = strides_of(shape);
  int64_t off = 0;
  for (int64_t j = 0; j < m; ++j) {
    const auto d = dim0 + static_cast<size_t>(j);
    off += ir::checked_index(ctx.node, indices.element_as_int(first + j), shape[d], first + j, what) * strides[d];
  }
  return off;
}

}  // namespace

std::vector<Tensor> eval_NonZero(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Shape& s = x.shape();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.element_as_double(i) != 0) hits.push_back(i);
  const auto rank = static_cast<int64_t>(s.size()), count = static_cast<int64_t>(hits.size());
  Tensor out(DType::Int64, {std::max<int64_t>(rank, 1), count});
  int64_t* dst = out.data<int64_t>();
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = hits[static_cast<size_t>(k)];
    for (int64_t d = rank; d-- > 0;) {
      dst[d * count + k] = rest % s[static_cast<size_t>(d)];
      rest /= s[static_cast<size_t>(d)];
    }
    if (rank == 0) dst[k] = 0;  // a scalar reads as a one-element vector
  }
  return {out};
}

std::vector<Tensor> eval_GatherND(const NodeContext& ctx) {
  const Tensor& data = ctx.in(0);
  const Tensor& indices = ctx.in(1);
  Tensor out(data.dtype(), ir::gather_nd_shape(ctx.node, data.shape(), indices.shape()));
  const auto b = static_cast<size_t>(ctx.node.attrs.get_int("batch_dims", 0));
  const Shape& ds = data.shape();
  const int64_t m = indices.shape().back();
  int64_t batches = 1, slice = 1;
  for (size_t d = 0; d < b; ++d) batches *= ds[d];
  for (size_t d = b + static_cast<size_t>(m); d < ds.size(); ++d) slice *= ds[d];
  const Shape inner(ds.begin() + static_cast<int64_t>(b), ds.end());
  const int64_t per_batch_data = num_elements(inner);
  const int64_t tuples = batches ? indices.numel() / m / batches : 0;
  const auto es = static_cast<int64_t>(dtype_size(data.dtype()));
  auto* dst = static_cast<std::byte*>(out.raw());
  const auto* src = static_cast<const std::byte*>(data.raw());
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t n = 0; n < tuples; ++n) {
      const int64_t t = bi * tuples + n;
      const int64_t off = bi * per_batch_data + tuple_offset(ctx, indices, t * m, m, inner, 0, "index");
      std::memcpy(dst + t * slice * es, src + off * es, static_cast<size_t>(slice * es));
    }
  return {out};
}

std::vector<Tensor> eval_ScatterND(const NodeContext& ctx) {
  const Tensor& data = ctx.in(0);
  const Tensor& indices = ctx.in(1);
  const Tensor& updates = ctx.in(2);
  ir::check_scatter_nd(ctx.node, data.shape(), indices.shape(), updates.shape());
  const std::string how = ir::scatter_reduction(ctx.node);
  Tensor out = data.clone();
  const int64_t k = indices.shape().back();
  int64_t slice = 1;
  for (size_t d = static_cast<size_t>(k); d < data.shape().size(); ++d) slice *= data.shape()[d];
  const int64_t tuples = indices.numel() / k;
  const auto es = static_cast<int64_t>(dtype_size(data.dtype()));
  auto* dst = static_cast<std::byte*>(out.raw());
  const auto* src = static_cast<const std::byte*>(updates.raw());
  for (int64_t n = 0; n < tuples; ++n) {  // in index order: with repeated indices the last write wins
    const int64_t off = tuple_offset(ctx, indices, n * k, k, data.shape(), 0, "index");
    std::byte* to = dst + off * es;
    const std::byte* from = src + n * slice * es;
    if (how == "none") {
      std::memcpy(to, from, static_cast<size_t>(slice * es));
      continue;
    }
    switch (data.dtype()) {
      case DType::Float64: combine(reinterpret_cast<double*>(to), reinterpret_cast<const double*>(from), slice, how); break;
      case DType::Int64: combine(reinterpret_cast<int64_t*>(to), reinterpret_cast<const int64_t*>(from), slice, how); break;
      case DType::Int32: combine(reinterpret_cast<int32_t*>(to), reinterpret_cast<const int32_t*>(from), slice, how); break;
      default: ctx.fail(ErrorCode::DTypeMismatch, "reduction '" + how + "' does not accept " + dtype_name(data.dtype()));
    }
  }
  return {out};
}

std::vector<Tensor> eval_GatherElements(const NodeContext& ctx) {
  const Tensor& data = ctx.in(0);
  const Tensor& indices = ctx.in(1);
  const auto axis = static_cast<size_t>(ir::gather_elements_axis(ctx.node, data.shape(), indices.shape()));
  Tensor out(data.dtype(), indices.shape());
  const std::vector<int64_t> strides = strides_of(data.shape());
  std::vector<int64_t> walk = strides;
  walk[axis] = 0;  // the axis coordinate comes from the index
  const auto es = static_cast<size_t>(dtype_size(data.dtype()));
  auto* dst = static_cast<std::byte*>(out.raw());
  const auto* src = static_cast<const std::byte*>(data.raw());
  const int64_t dim = data.shape()[axis];
  // for_each_broadcast walks indices' shape; `walk` are data strides (dims of indices <= data's).
  for_each_broadcast(indices.shape(), {walk}, [&](int64_t i, const std::vector<int64_t>& o) {
    const int64_t k = ir::checked_index(ctx.node, indices.element_as_int(i), dim, i, "index");
    std::memcpy(dst + static_cast<size_t>(i) * es, src + static_cast<size_t>(o[0] + k * strides[axis]) * es, es);
  });
  return {out};
}

}  // namespace lockstep::reference
