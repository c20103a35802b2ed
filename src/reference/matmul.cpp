// Reference: MatMul (numpy semantics: batched, broadcast batch dims, 1-D operands), Gemm, Softmax.
#include <cmath>

#include "reference/kernels.h"

namespace lockstep::reference {

namespace {
void require_double(const NodeContext& ctx, const Tensor& t) {
  if (t.dtype() != DType::Float64)
    ctx.fail(ErrorCode::DTypeMismatch,
             std::string("expects floating inputs, got ") + dtype_name(t.dtype()));
}
}  // namespace

std::vector<Tensor> eval_MatMul(const NodeContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  require_double(ctx, a);
  require_double(ctx, b);
  Shape out_shape = ir::matmul_shape(ctx.node, a.shape(), b.shape());
  Shape a2 = a.rank() == 1 ? Shape{1, a.shape()[0]} : a.shape();
  Shape b2 = b.rank() == 1 ? Shape{b.shape()[0], 1} : b.shape();
  int64_t m = a2[a2.size() - 2], k = a2.back(), n = b2.back();
  Shape batch = ir::node_broadcast(ctx.node, Shape(a2.begin(), a2.end() - 2),
                                   Shape(b2.begin(), b2.end() - 2));
  // Batch offsets (in matrices) of each operand, broadcast over the batch shape.
  auto sa = broadcast_strides(Shape(a2.begin(), a2.end() - 2), batch);
  auto sb = broadcast_strides(Shape(b2.begin(), b2.end() - 2), batch);
  Tensor out(DType::Float64, out_shape);
  const double* pa = a.data<double>();
  const double* pb = b.data<double>();
  double* po = out.data<double>();
  for_each_broadcast(batch, {sa, sb}, [&](int64_t bi, const std::vector<int64_t>& off) {
    const double* ma = pa + off[0] * m * k;
    const double* mb = pb + off[1] * k * n;
    double* mo = po + bi * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk) {
        double av = ma[i * k + kk];
        for (int64_t j = 0; j < n; ++j) mo[i * n + j] += av * mb[kk * n + j];
      }
  });
  return {out};
}

std::vector<Tensor> eval_Gemm(const NodeContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  require_double(ctx, a);
  require_double(ctx, b);
  Shape c_shape = ctx.has(2) ? ctx.in(2).shape() : Shape{};
  Shape out_shape = ir::gemm_shape(ctx.node, a.shape(), b.shape(), ctx.has(2) ? &c_shape : nullptr);
  bool ta = ctx.node.attrs.get_int("transA", 0) != 0, tb = ctx.node.attrs.get_int("transB", 0) != 0;
  double alpha = ir::attr_double(ctx.node.attrs.get_float("alpha", 1.0f));
  double beta = ir::attr_double(ctx.node.attrs.get_float("beta", 1.0f));
  int64_t m = out_shape[0], n = out_shape[1], k = ta ? a.shape()[0] : a.shape()[1];
  const double* pa = a.data<double>();
  const double* pb = b.data<double>();
  Tensor out(DType::Float64, out_shape);
  double* po = out.data<double>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        acc += (ta ? pa[kk * m + i] : pa[i * k + kk]) * (tb ? pb[j * k + kk] : pb[kk * n + j]);
      po[i * n + j] = alpha * acc;
    }
  if (ctx.has(2)) {
    const Tensor& c = ctx.in(2);
    require_double(ctx, c);
    const double* pc = c.data<double>();
    for_each_broadcast(
        out_shape, {broadcast_strides(c.shape(), out_shape)},
        [&](int64_t i, const std::vector<int64_t>& off) { po[i] += beta * pc[off[0]]; });
  }
  return {out};
}

std::vector<Tensor> eval_Softmax(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  require_double(ctx, x);
  int64_t axis = ir::softmax_axis(ctx.node, x.rank());
  int64_t outer = 1, dim = x.shape()[static_cast<size_t>(axis)], inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[static_cast<size_t>(d)];
  Tensor out(DType::Float64, x.shape());
  const double* px = x.data<double>();
  double* po = out.data<double>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const double* row = px + o * dim * inner + in;
      double* orow = po + o * dim * inner + in;
      double mx = -INFINITY, sum = 0;
      for (int64_t i = 0; i < dim; ++i) mx = std::max(mx, row[i * inner]);
      for (int64_t i = 0; i < dim; ++i) sum += orow[i * inner] = std::exp(row[i * inner] - mx);
      for (int64_t i = 0; i < dim; ++i) orow[i * inner] /= sum;
    }
  return {out};
}

}  // namespace lockstep::reference
