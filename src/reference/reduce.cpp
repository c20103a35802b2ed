// Reference: ReduceMean/Sum/Max/Min and CumSum. Floating values accumulate in double in index
// order; integers in int64.
#include <cmath>
#include <limits>

#include "reference/kernels.h"

namespace lockstep::reference {

namespace {

using ir::Op;

template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

template <class T>
Acc<T> reduce_init(Op op) {
  using A = Acc<T>;
  if (op == Op::ReduceMax)
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<T>::lowest();
  if (op == Op::ReduceMin)
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<T>::max();
  return 0;
}

template <class T>
Tensor reduce(const NodeContext& ctx, const Tensor& x, const std::vector<char>& mask) {
  const Op op = ctx.node.op;
  Shape keep = x.shape();
  int64_t count = 1;
  for (size_t d = 0; d < keep.size(); ++d)
    if (mask[d]) count *= keep[d], keep[d] = 1;
  std::vector<Acc<T>> acc(static_cast<size_t>(num_elements(keep)), reduce_init<T>(op));
  std::vector<char> nan(acc.size(), 0);  // Max/Min propagate NaN
  const T* in = x.data<T>();
  for_each_broadcast(x.shape(), {broadcast_strides(keep, x.shape())}, [&](int64_t i, const std::vector<int64_t>& o) {
    auto& a = acc[static_cast<size_t>(o[0])];
    const Acc<T> v = in[i];
    if (op == Op::ReduceMax || op == Op::ReduceMin) {
      if constexpr (std::is_floating_point_v<T>)
        if (v != v) nan[static_cast<size_t>(o[0])] = 1;
      a = op == Op::ReduceMax ? std::max(a, v) : std::min(a, v);
    } else {
      a += v;
    }
  });
  Tensor out(x.dtype(), ir::reduce_shape(ctx.node, x.shape(), mask));
  T* dst = out.data<T>();
  for (size_t k = 0; k < acc.size(); ++k) {
    Acc<T> v = acc[k];
    if (op == Op::ReduceMean) {
      if (count) v = v / count;
      else if constexpr (std::is_floating_point_v<T>) v = std::numeric_limits<double>::quiet_NaN();
    }
    if constexpr (std::is_floating_point_v<T>)
      if (nan[k]) v = std::numeric_limits<double>::quiet_NaN();
    dst[k] = static_cast<T>(v);
  }
  return out;
}

std::vector<Tensor> eval_reduce(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has(1)) axes = ctx.ints(1);
  std::vector<char> mask = ir::reduce_mask(ctx.node, static_cast<int64_t>(x.shape().size()), axes ? &*axes : nullptr);
  switch (x.dtype()) {
    case DType::Float64: return {reduce<double>(ctx, x, mask)};
    case DType::Int64: return {reduce<int64_t>(ctx, x, mask)};
    case DType::Int32: return {reduce<int32_t>(ctx, x, mask)};
    default: ctx.fail(ErrorCode::DTypeMismatch, std::string("does not accept ") + dtype_name(x.dtype()) + " input");
  }
}

template <class T>
Tensor cumsum(const NodeContext& ctx, const Tensor& x, int64_t axis) {
  const bool exclusive = ctx.node.attrs.get_int("exclusive", 0) != 0;
  const bool reverse = ctx.node.attrs.get_int("reverse", 0) != 0;
  int64_t outer = 1, inner = 1;
  const int64_t dim = x.shape()[static_cast<size_t>(axis)];
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  Tensor out(x.dtype(), x.shape());
  const T* in = x.data<T>();
  T* dst = out.data<T>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      Acc<T> sum = 0;
      for (int64_t s = 0; s < dim; ++s) {
        const int64_t k = reverse ? dim - 1 - s : s;
        const int64_t at = (o * dim + k) * inner + j;
        if (exclusive) {
          dst[at] = static_cast<T>(sum);
          sum += in[at];
        } else {
          sum += in[at];
          dst[at] = static_cast<T>(sum);
        }
      }
    }
  return out;
}

}  // namespace

std::vector<Tensor> eval_ReduceMean(const NodeContext& ctx) { return eval_reduce(ctx); }
std::vector<Tensor> eval_ReduceSum(const NodeContext& ctx) { return eval_reduce(ctx); }
std::vector<Tensor> eval_ReduceMax(const NodeContext& ctx) { return eval_reduce(ctx); }
std::vector<Tensor> eval_ReduceMin(const NodeContext& ctx) { return eval_reduce(ctx); }

std::vector<Tensor> eval_CumSum(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t axis = ir::cumsum_axis(ctx.node, static_cast<int64_t>(x.shape().size()), ctx.ints(1));
  switch (x.dtype()) {
    case DType::Float64: return {cumsum<double>(ctx, x, axis)};
    case DType::Int64: return {cumsum<int64_t>(ctx, x, axis)};
    case DType::Int32: return {cumsum<int32_t>(ctx, x, axis)};
    default: ctx.fail(ErrorCode::DTypeMismatch, std::string("does not accept ") + dtype_name(x.dtype()) + " input");
  }
}

}  // namespace lockstep::reference
