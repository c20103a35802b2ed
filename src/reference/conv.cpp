// Reference: Conv and ConvTranspose, N-D, direct loops in double. Loop order: output channel,
// input channel, kernel tap, then contiguous output positions, so each output element
// accumulates in one fixed order (input channel, tap) whatever the thread count.
#include "reference/kernels.h"

namespace lockstep::reference {

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

// Decomposes a flat index over `dims` into a multi-index (row-major).
void unflatten(int64_t flat, const std::vector<int64_t>& dims, std::vector<int64_t>& index) {
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = flat % dims[d];
    flat /= dims[d];
  }
}

int64_t product(const std::vector<int64_t>& v, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < v.size() && i < to; ++i) p *= v[i];
  return p;
}

void add_bias(const NodeContext& ctx, double* out, int64_t oc, int64_t plane) {
  if (!ctx.has(2)) return;
  double b = ctx.in(2).data<double>()[oc];
  for (int64_t i = 0; i < plane; ++i) out[i] = b;
}

}  // namespace

std::vector<Tensor> eval_Conv(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& w = ctx.in(1);
  ir::ConvGeometry g = ir::conv_geometry(ctx.node, x.shape(), w.shape());
  Tensor out(DType::Float64, g.out_shape);
  size_t nsp = g.kernel.size(), last = nsp - 1;
  std::vector<int64_t> in_sp(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> out_sp(g.out_shape.begin() + 2, g.out_shape.end());
  int64_t batch = x.shape()[0], channels = x.shape()[1], m = w.shape()[0];
  int64_t cg = channels / g.group, mg = m / g.group;
  int64_t in_plane = product(in_sp), out_plane = product(out_sp), taps = product(g.kernel);
  int64_t out_outer = product(out_sp, 0, last), out_len = out_sp[last], in_len = in_sp[last];
  int64_t s = g.strides[last], dil = g.dilations[last], pb = g.pad_begin[last];
  auto in_row_strides = strides_of(in_sp);
  const std::vector<int64_t> outer_dims(out_sp.begin(), out_sp.end() - 1);
  const double* px = x.data<double>();
  const double* pw = w.data<double>();
  double* po = out.data<double>();

#pragma omp parallel for schedule(static)
  for (int64_t job = 0; job < batch * m; ++job) {
    int64_t n = job / m, oc = job % m, grp = oc / mg;
    double* __restrict o_plane = po + job * out_plane;
    add_bias(ctx, o_plane, oc, out_plane);
    std::vector<int64_t> k_idx(nsp), o_idx(nsp);
    for (int64_t ic = 0; ic < cg; ++ic) {
      const double* x_plane = px + (n * channels + grp * cg + ic) * in_plane;
      const double* w_taps = pw + (oc * cg + ic) * taps;
      for (int64_t t = 0; t < taps; ++t) {
        double wv = w_taps[t];
        unflatten(t, g.kernel, k_idx);
        int64_t shift = k_idx[last] * dil - pb;  // input = o*s + shift
        int64_t lo = std::max<int64_t>(0, ceil_div(-shift, s));
        int64_t hi = std::min<int64_t>(out_len, floor_div(in_len - 1 - shift, s) + 1);
        if (lo >= hi) continue;
        for (int64_t r = 0; r < out_outer; ++r) {
          unflatten(r, outer_dims, o_idx);
          int64_t row = 0;
          bool valid = true;
          for (size_t d = 0; d < last && valid; ++d) {
            int64_t i = o_idx[d] * g.strides[d] + k_idx[d] * g.dilations[d] - g.pad_begin[d];
            valid = i >= 0 && i < in_sp[d];
            row += i * in_row_strides[d];
          }
          if (!valid) continue;
          double* __restrict o_row = o_plane + r * out_len;
          const double* __restrict x_row = x_plane + row + shift;
          if (s == 1) {
#pragma omp simd
            for (int64_t o = lo; o < hi; ++o) o_row[o] += wv * x_row[o];
          } else {
            for (int64_t o = lo; o < hi; ++o) o_row[o] += wv * x_row[o * s];
          }
        }
      }
    }
  }
  return {out};
}

std::vector<Tensor> eval_ConvTranspose(const NodeContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& w = ctx.in(1);
  ir::ConvGeometry g = ir::conv_transpose_geometry(ctx.node, x.shape(), w.shape());
  Tensor out(DType::Float64, g.out_shape);
  size_t nsp = g.kernel.size(), last = nsp - 1;
  std::vector<int64_t> in_sp(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> out_sp(g.out_shape.begin() + 2, g.out_shape.end());
  int64_t batch = x.shape()[0], channels = x.shape()[1], mg = w.shape()[1], m = g.out_shape[1];
  int64_t cg = channels / g.group;
  int64_t in_plane = product(in_sp), out_plane = product(out_sp), taps = product(g.kernel);
  int64_t in_outer = product(in_sp, 0, last), in_len = in_sp[last], out_len = out_sp[last];
  int64_t s = g.strides[last], dil = g.dilations[last], pb = g.pad_begin[last];
  auto out_row_strides = strides_of(out_sp);
  const std::vector<int64_t> outer_dims(in_sp.begin(), in_sp.end() - 1);
  const double* px = x.data<double>();
  const double* pw = w.data<double>();
  double* po = out.data<double>();

#pragma omp parallel for schedule(static)
  for (int64_t job = 0; job < batch * m; ++job) {
    int64_t n = job / m, oc = job % m, grp = oc / mg, ocg = oc % mg;
    double* o_plane = po + job * out_plane;
    add_bias(ctx, o_plane, oc, out_plane);
    std::vector<int64_t> k_idx(nsp), i_idx(nsp);
    for (int64_t ic = 0; ic < cg; ++ic) {
      int64_t c = grp * cg + ic;
      const double* x_plane = px + (n * channels + c) * in_plane;
      const double* w_taps = pw + (c * mg + ocg) * taps;
      for (int64_t t = 0; t < taps; ++t) {
        double wv = w_taps[t];
        unflatten(t, g.kernel, k_idx);
        int64_t shift = k_idx[last] * dil - pb;  // output = i*s + shift
        int64_t lo = std::max<int64_t>(0, ceil_div(-shift, s));
        int64_t hi = std::min<int64_t>(in_len, floor_div(out_len - 1 - shift, s) + 1);
        if (lo >= hi) continue;
        for (int64_t r = 0; r < in_outer; ++r) {
          unflatten(r, outer_dims, i_idx);
          int64_t row = 0;
          bool valid = true;
          for (size_t d = 0; d < last && valid; ++d) {
            int64_t o = i_idx[d] * g.strides[d] + k_idx[d] * g.dilations[d] - g.pad_begin[d];
            valid = o >= 0 && o < out_sp[d];
            row += o * out_row_strides[d];
          }
          if (!valid) continue;
          double* o_row = o_plane + row + shift;
          const double* x_row = x_plane + r * in_len;
          for (int64_t i = lo; i < hi; ++i) o_row[i * s] += wv * x_row[i];
        }
      }
    }
  }
  return {out};
}

}  // namespace lockstep::reference
