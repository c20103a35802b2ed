// Comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual) on float, int32, int64 (and
// bool for Equal), and the logical ops And, Or, Xor, Not: numpy broadcasting, bool results.
// Each input is compared as its stored type (floating values as float32; NaN compares false).
#include <algorithm>

#include "backends/cpu/epilogue.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/parallel.h"

namespace lockstep::cpu {

namespace {

using ir::Op;

template <class T>
class CompareKernel final : public Kernel {
 public:
  CompareKernel(CompileContext& ctx, const ir::Node& node) : op_(node.op) {
    const Shape& y = ctx.value(node.outputs.at(0)).shape;
    view_ = row_view(y);
    a_ = static_cast<const T*>(ctx.ptr(node.inputs.at(0)));
    b_ = static_cast<const T*>(ctx.ptr(node.inputs.at(1)));
    ra_ = row_operand(ctx.value(node.inputs[0]).shape, y);
    rb_ = row_operand(ctx.value(node.inputs[1]).shape, y);
    out_ = static_cast<bool*>(ctx.ptr(node.outputs[0]));
  }
  void run() override {
    switch (op_) {
      case Op::Equal: rows([](T x, T y) { return x == y; }); break;
      case Op::Less: rows([](T x, T y) { return x < y; }); break;
      case Op::LessOrEqual: rows([](T x, T y) { return x <= y; }); break;
      case Op::Greater: rows([](T x, T y) { return x > y; }); break;
      case Op::GreaterOrEqual: rows([](T x, T y) { return x >= y; }); break;
      case Op::And: rows([](T x, T y) { return x && y; }); break;
      case Op::Or: rows([](T x, T y) { return x || y; }); break;
      case Op::Xor: rows([](T x, T y) { return x != y; }); break;  // T = bool here
      default: throw Error(ErrorCode::Internal, std::string("cpu: not a comparison: ") + ir::op_name(op_));
    }
  }

 private:
  // (row, column chunk) items, static schedule; each operand is a row base plus a stride 0 or 1.
  template <class F>
  void rows(F f) const {
    const RowChunks c = row_chunks(view_);
    const int64_t count = c.count();
    parallel_for(
        count, [&](int64_t item, int) {
      const int64_t row = item / c.per_row, begin = (item % c.per_row) * c.chunk;
      const int64_t end = std::min(begin + c.chunk, c.inner);
      const int64_t as = ra_.inner_stride, bs = rb_.inner_stride;
      const T* a = a_ + ra_.row_offset(row, view_.out_shape) + begin * as;
      const T* b = b_ + rb_.row_offset(row, view_.out_shape) + begin * bs;
      bool* o = out_ + row * view_.inner + begin;
      for (int64_t j = 0; j < end - begin; ++j) o[j] = f(a[j * as], b[j * bs]);
    },
        count > 8);
  }

  Op op_;
  RowView view_;
  const T* a_ = nullptr;
  const T* b_ = nullptr;
  RowOperand ra_, rb_;
  bool* out_ = nullptr;
};

class NotKernel final : public Kernel {
 public:
  NotKernel(CompileContext& ctx, const ir::Node& node) {
    n_ = num_elements(ctx.value(node.outputs.at(0)).shape);
    in_ = static_cast<const bool*>(ctx.ptr(node.inputs.at(0)));
    out_ = static_cast<bool*>(ctx.ptr(node.outputs[0]));
  }
  void run() override {
    for (int64_t i = 0; i < n_; ++i) out_[i] = !in_[i];
  }

 private:
  int64_t n_ = 0;
  const bool* in_ = nullptr;
  bool* out_ = nullptr;
};

}  // namespace

KernelPtr make_logical_kernel(CompileContext& ctx, const ir::Node& node) {
  const DType a = storage_dtype(ctx.value(node.inputs.at(0)).dtype);
  const bool logical = node.op == Op::And || node.op == Op::Or || node.op == Op::Xor || node.op == Op::Not;
  auto unsupported = [&] {
    return Error(ErrorCode::UnsupportedAttribute,
                 std::string("cpu: ") + ir::op_name(node.op) + " on " + dtype_name(a) + " inputs is not supported",
                 node.name, ir::op_name(node.op));
  };
  if (storage_dtype(ctx.value(node.outputs.at(0)).dtype) != DType::Bool || (logical && a != DType::Bool))
    throw unsupported();
  if (node.op == Op::Not) return with_epilogue(ctx, node, std::make_unique<NotKernel>(ctx, node));
  if (storage_dtype(ctx.value(node.inputs.at(1)).dtype) != a) throw unsupported();
  KernelPtr k;
  switch (a) {
    case DType::Float32: k = std::make_unique<CompareKernel<float>>(ctx, node); break;
    case DType::Int64: k = std::make_unique<CompareKernel<int64_t>>(ctx, node); break;
    case DType::Int32: k = std::make_unique<CompareKernel<int32_t>>(ctx, node); break;
    case DType::Bool:
      if (!logical && node.op != Op::Equal) throw unsupported();
      k = std::make_unique<CompareKernel<bool>>(ctx, node);
      break;
    default: throw unsupported();
  }
  return with_epilogue(ctx, node, std::move(k));
}

}  // namespace lockstep::cpu
