// Clip (float, int32, int64; min/max one-element tensors, constant or computed at run time,
// read when the kernel runs) and the integer forms of Abs, Neg and Relu. The float unary math
// ops (Erf, Softplus, Ceil, ...) are elementwise.cpp's, so that they fuse as epilogue steps.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "backends/cpu/kernel.h"
#include "backends/cpu/parallel.h"

namespace lockstep::cpu {

namespace {

using ir::Op;

template <class T>
class ClipKernel final : public Kernel {
 public:
  ClipKernel(CompileContext& ctx, const ir::Node& node) {
    n_ = num_elements(ctx.value(node.outputs.at(0)).shape);
    in_ = static_cast<const T*>(ctx.ptr(node.inputs.at(0)));
    out_ = static_cast<T*>(ctx.ptr(node.outputs[0]));
    for (size_t i = 1; i < 3; ++i) {
      if (i >= node.inputs.size() || node.inputs[i] == ir::kNoValue) continue;
      const ir::Value& b = ctx.value(node.inputs[i]);
      if (num_elements(b.shape) != 1)
        throw Error(ErrorCode::ShapeMismatch, std::string("cpu: Clip ") + (i == 1 ? "min" : "max") + " must be a scalar",
                    node.name, "Clip");
      (i == 1 ? lo_ : hi_) = static_cast<const T*>(ctx.ptr(node.inputs[i]));
    }
  }
  void run() override {
    // Absent bounds do not bound (infinities keep float infinities and NaN as they are).
    const T lo = lo_ ? *lo_ : lowest(), hi = hi_ ? *hi_ : highest();
    const T* x = in_;
    T* y = out_;
    parallel_for(
        n_, [&](int64_t i, int) {
      T v = x[i];
      v = v < lo ? lo : v;
      y[i] = v > hi ? hi : v;
    },
        n_ > 65536);
  }

 private:
  static constexpr T lowest() {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  }
  static constexpr T highest() {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  }
  int64_t n_ = 0;
  const T* in_ = nullptr;
  const T* lo_ = nullptr;
  const T* hi_ = nullptr;
  T* out_ = nullptr;
};

template <class T>
class IntUnaryKernel final : public Kernel {
 public:
  IntUnaryKernel(CompileContext& ctx, const ir::Node& node) : op_(node.op) {
    n_ = num_elements(ctx.value(node.outputs.at(0)).shape);
    in_ = static_cast<const T*>(ctx.ptr(node.inputs.at(0)));
    out_ = static_cast<T*>(ctx.ptr(node.outputs[0]));
  }
  void run() override {
    // Wrapping negation (as the reference's int64 arithmetic stored back to T) without UB.
    using U = std::make_unsigned_t<T>;
    for (int64_t i = 0; i < n_; ++i) {
      const T v = in_[i];
      const T neg = static_cast<T>(U{0} - static_cast<U>(v));
      out_[i] = op_ == Op::Neg ? neg : op_ == Op::Abs ? (v < 0 ? neg : v) : (v > 0 ? v : T{0});
    }
  }

 private:
  Op op_;
  int64_t n_ = 0;
  const T* in_ = nullptr;
  T* out_ = nullptr;
};

}  // namespace

KernelPtr make_clip_kernel(CompileContext& ctx, const ir::Node& node) {
  const DType t = storage_dtype(ctx.value(node.outputs.at(0)).dtype);
  for (size_t i = 0; i < node.inputs.size() && i < 3; ++i)
    if (node.inputs[i] != ir::kNoValue && storage_dtype(ctx.value(node.inputs[i]).dtype) != t)
      throw Error(ErrorCode::DTypeMismatch, "cpu: Clip bounds must have the input's dtype", node.name, "Clip");
  KernelPtr k;
  switch (t) {
    case DType::Float32: k = std::make_unique<ClipKernel<float>>(ctx, node); break;
    case DType::Int64: k = std::make_unique<ClipKernel<int64_t>>(ctx, node); break;
    case DType::Int32: k = std::make_unique<ClipKernel<int32_t>>(ctx, node); break;
    default:
      throw Error(ErrorCode::UnsupportedAttribute, std::string("cpu: Clip on ") + dtype_name(t) + " is not supported",
                  node.name, "Clip");
  }
  return with_epilogue(ctx, node, std::move(k));
}

KernelPtr make_int_unary_kernel(CompileContext& ctx, const ir::Node& node) {
  const DType t = storage_dtype(ctx.value(node.outputs.at(0)).dtype);
  const bool ok_op = node.op == Op::Abs || node.op == Op::Neg || node.op == Op::Relu;
  if (ok_op && t == DType::Int64) return std::make_unique<IntUnaryKernel<int64_t>>(ctx, node);
  if (ok_op && t == DType::Int32) return std::make_unique<IntUnaryKernel<int32_t>>(ctx, node);
  throw Error(ErrorCode::UnsupportedAttribute,
              std::string("cpu: ") + ir::op_name(node.op) + " on " + dtype_name(t) + " is not supported", node.name,
              ir::op_name(node.op));
}

}  // namespace lockstep::cpu
