// MatMul and Gemm through gemm.h's sgemm (oneDNN or OpenBLAS; deterministic for a fixed thread count),
// MatMul in float64 where Options::f64_accumulate asks (gemm.h's dgemm);
// Softmax as plain loops.

#include <algorithm>
#include <cmath>
#include <utility>

#include "backends/cpu/epilogue.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd/target.h"
#include "backends/cpu/vector_math.h"

namespace lockstep::cpu {

namespace {

class MatMulKernel final : public Kernel {
 public:
  MatMulKernel(CompileContext& ctx, const ir::Node& node) {
    Shape a = ctx.value(node.inputs.at(0)).shape, b = ctx.value(node.inputs.at(1)).shape;
    const Shape& y = ctx.value(node.outputs.at(0)).shape;
    if (a.empty() || b.empty())
      throw Error(ErrorCode::ShapeMismatch, "cpu: MatMul of a scalar", node.name, "MatMul");
    if (a.size() == 1) a.insert(a.begin(), 1);
    if (b.size() == 1) b.push_back(1);
    m_ = a[a.size() - 2];
    k_ = a.back();
    n_ = b.back();
    if (b[b.size() - 2] != k_)
      throw Error(ErrorCode::ShapeMismatch, "cpu: MatMul inner dims differ: " + shape_str(a) + " x " + shape_str(b),
                  node.name, "MatMul");
    Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
    size_t rank = std::max(a_batch.size(), b_batch.size());
    batch_shape_.assign(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
      int64_t da = i + a_batch.size() >= rank ? a_batch[i + a_batch.size() - rank] : 1;
      int64_t db = i + b_batch.size() >= rank ? b_batch[i + b_batch.size() - rank] : 1;
      batch_shape_[i] = std::max(da, db);
    }
    a_strides_ = broadcast_strides(a_batch, batch_shape_);
    b_strides_ = broadcast_strides(b_batch, batch_shape_);
    batches_ = num_elements(batch_shape_);
    if (batches_ * m_ * n_ != num_elements(y))
      throw Error(ErrorCode::ShapeMismatch, "cpu: MatMul output shape " + shape_str(y) + " is inconsistent", node.name,
                  "MatMul");
    a_ = ctx.fptr(node.inputs[0]);
    b_ = ctx.fptr(node.inputs[1]);
    y_ = ctx.fptr(node.outputs[0]);
    if (ctx.accumulates_f64(node)) {
      f64_threads_ = std::max(1, ctx.threads);
      per_thread_ = static_cast<size_t>(m_ * k_ + k_ * n_ + m_ * n_);
      ctx.workspace_bytes = std::max(ctx.workspace_bytes, per_thread_ * sizeof(double) * static_cast<size_t>(f64_threads_));
    }
  }

  void bind_workspace(std::byte* base) override { scratch_ = reinterpret_cast<double*>(base); }
  std::string implementation() const override { return f64_threads_ ? "lockstep:f64-matmul" : sgemm_implementation(); }
  void run() override {
    if (f64_threads_) {
      // Options::f64_accumulate: each product whole in float64 on one thread, rounded once.
      parallel_for(batches_, f64_threads_, [&](int64_t bi, int slot) { run_f64(bi, scratch_ + static_cast<size_t>(slot) * per_thread_); });
      return;
    }
    for (int64_t bi = 0; bi < batches_; ++bi) {
      const auto [ao, bo] = operand_offsets(bi);
      sgemm(false, false, m_, n_, k_, 1.0f, a_ + ao * m_ * k_, k_, b_ + bo * k_ * n_, n_, 0.0f, y_ + bi * m_ * n_, n_);
    }
  }

 private:
  std::pair<int64_t, int64_t> operand_offsets(int64_t bi) const {
    int64_t ao = 0, bo = 0, rest = bi;
    for (size_t d = batch_shape_.size(); d-- > 0;) {
      int64_t idx = rest % batch_shape_[d];
      rest /= batch_shape_[d];
      ao += idx * a_strides_[d];
      bo += idx * b_strides_[d];
    }
    return {ao, bo};
  }
  void run_f64(int64_t bi, double* scratch) const {
    const auto [ao, bo] = operand_offsets(bi);
    double *a = scratch, *b = a + m_ * k_, *y = b + k_ * n_;
    std::copy(a_ + ao * m_ * k_, a_ + (ao + 1) * m_ * k_, a);
    std::copy(b_ + bo * k_ * n_, b_ + (bo + 1) * k_ * n_, b);
    dgemm(m_, n_, k_, a, k_, b, n_, 0.0, y, n_);
    std::copy(y, y + m_ * n_, y_ + bi * m_ * n_);
  }

  int64_t m_ = 0, n_ = 0, k_ = 0, batches_ = 1;
  int f64_threads_ = 0;    // > 0: float64 accumulation (Options::f64_accumulate)
  size_t per_thread_ = 0;  // doubles of scratch per thread
  double* scratch_ = nullptr;
  Shape batch_shape_;
  std::vector<int64_t> a_strides_, b_strides_;
  const float *a_ = nullptr, *b_ = nullptr;
  float* y_ = nullptr;
};

class GemmKernel final : public Kernel {
 public:
  GemmKernel(CompileContext& ctx, const ir::Node& node) {
    const Shape& a = ctx.value(node.inputs.at(0)).shape;
    const Shape& b = ctx.value(node.inputs.at(1)).shape;
    if (a.size() != 2 || b.size() != 2)
      throw Error(ErrorCode::ShapeMismatch, "cpu: Gemm needs 2-D A and B", node.name, "Gemm");
    ta_ = node.attrs.get_int("transA", 0) != 0;
    tb_ = node.attrs.get_int("transB", 0) != 0;
    alpha_ = node.attrs.get_float("alpha", 1.0f);
    beta_ = node.attrs.get_float("beta", 1.0f);
    m_ = ta_ ? a[1] : a[0];
    k_ = ta_ ? a[0] : a[1];
    n_ = tb_ ? b[0] : b[1];
    lda_ = a[1];
    ldb_ = b[1];
    a_ = ctx.fptr(node.inputs[0]);
    b_ = ctx.fptr(node.inputs[1]);
    y_ = ctx.fptr(node.outputs[0]);
    if (node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue) {
      c_ = ctx.fptr(node.inputs[2]);
      c_strides_ = broadcast_strides(ctx.value(node.inputs[2]).shape, {m_, n_});
    }
  }

  std::string implementation() const override { return sgemm_implementation(); }
  void run() override {
    float beta = 0.0f;
    if (c_ && beta_ != 0.0f) {
      for (int64_t i = 0; i < m_; ++i)
        for (int64_t j = 0; j < n_; ++j) y_[i * n_ + j] = beta_ * c_[i * c_strides_[0] + j * c_strides_[1]];
      beta = 1.0f;
    }
    sgemm(ta_, tb_, m_, n_, k_, alpha_, a_, lda_, b_, ldb_, beta, y_, n_);
  }

 private:
  bool ta_ = false, tb_ = false;
  float alpha_ = 1, beta_ = 1;
  int64_t m_ = 0, n_ = 0, k_ = 0, lda_ = 0, ldb_ = 0;
  const float *a_ = nullptr, *b_ = nullptr, *c_ = nullptr;
  std::vector<int64_t> c_strides_;
  float* y_ = nullptr;
};

// y = e^(x - mx) along one line, in a loop that vectorizes (libm's scalar expf was most of the
// op); below e^-87.3 it is 0, as the reference's is for masked (-1e4) scores (no subnormals).
LOCKSTEP_X86_CLONES
void softmax_exps(const float* x, float mx, float* y, int64_t stride, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const float d = x[j * stride] - mx;
    const float e = fast_exp(d);
    y[j * stride] = d < -87.33654f ? 0.0f : e;
  }
}

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(CompileContext& ctx, const ir::Node& node) {
    const Shape& x = ctx.value(node.inputs.at(0)).shape;
    int64_t rank = static_cast<int64_t>(x.size());
    int64_t axis = node.attrs.get_int("axis", -1);
    if (axis < 0) axis += rank;
    if (rank == 0 || axis < 0 || axis >= rank)
      throw Error(ErrorCode::UnsupportedAttribute, "cpu: Softmax axis out of range", node.name, "Softmax");
    for (int64_t i = 0; i < axis; ++i) outer_ *= x[static_cast<size_t>(i)];
    len_ = x[static_cast<size_t>(axis)];
    for (int64_t i = axis + 1; i < rank; ++i) inner_ *= x[static_cast<size_t>(i)];
    x_ = ctx.fptr(node.inputs[0]);
    y_ = ctx.fptr(node.outputs[0]);
  }

  void run() override {
    const int64_t lines = outer_ * inner_;
    parallel_for(lines, [&](int64_t line, int) {
      int64_t o = line / inner_, i = line % inner_;
      const float* x = x_ + o * len_ * inner_ + i;
      float* y = y_ + o * len_ * inner_ + i;
      float mx = -INFINITY;
      for (int64_t j = 0; j < len_; ++j) mx = std::max(mx, x[j * inner_]);
      softmax_exps(x, mx, y, inner_, len_);
      double part[4] = {0, 0, 0, 0};  // four chains in a fixed order: same bits on every ISA
      for (int64_t j = 0; j < len_; ++j) part[j & 3] += y[j * inner_];
      const double sum = (part[0] + part[1]) + (part[2] + part[3]);
      float inv = static_cast<float>(1.0 / sum);
      for (int64_t j = 0; j < len_; ++j) y[j * inner_] *= inv;
    });
  }

 private:
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
  const float* x_ = nullptr;
  float* y_ = nullptr;
};

}  // namespace

KernelPtr make_matmul_kernel(CompileContext& ctx, const ir::Node& node) {
  KernelPtr k;
  switch (node.op) {
    case ir::Op::MatMul: k = std::make_unique<MatMulKernel>(ctx, node); break;
    case ir::Op::Gemm: k = std::make_unique<GemmKernel>(ctx, node); break;
    case ir::Op::Softmax: k = std::make_unique<SoftmaxKernel>(ctx, node); break;
    default: throw Error(ErrorCode::Internal, "cpu: not a matmul-family op", node.name, ir::op_name(node.op));
  }
  return with_epilogue(ctx, node, std::move(k));
}

}  // namespace lockstep::cpu
