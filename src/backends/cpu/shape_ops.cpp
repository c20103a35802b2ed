// Shape, ConstantOfShape and Range: usually folded away; at run time they only fill buffers.
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernel.h"
#include "core/fill.h"

namespace lockstep::cpu {

namespace {

using ir::Op;

class ShapeKernel final : public Kernel {
 public:
  ShapeKernel(const CompileContext& ctx, const ir::Node& node) {
    const Shape& x = ctx.value(node.inputs.at(0)).shape;
    const int64_t rank = static_cast<int64_t>(x.size());
    int64_t start = node.attrs.get_int("start", 0), end = node.attrs.get_int("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    for (int64_t i = start; i < end; ++i) dims_.push_back(x[static_cast<size_t>(i)]);
    out_ = static_cast<int64_t*>(ctx.ptr(node.outputs.at(0)));
  }
  void run() override { std::copy(dims_.begin(), dims_.end(), out_); }

 private:
  std::vector<int64_t> dims_;
  int64_t* out_;
};

// Fills the output with one element's bytes (ConstantOfShape's `value`, default float 0).
class FillKernel final : public Kernel {
 public:
  FillKernel(const CompileContext& ctx, const ir::Node& node) {
    const ir::Value& y = ctx.value(node.outputs.at(0));
    elem_ = storage_size(y.dtype);
    count_ = num_elements(y.shape);
    out_ = static_cast<std::byte*>(ctx.ptr(node.outputs[0]));
    if (const Tensor* v = node.attrs.get_tensor("value")) {
      if (v->numel() != 1)
        throw Error(ErrorCode::UnsupportedAttribute, "cpu: ConstantOfShape value must hold one element", node.name,
                    "ConstantOfShape");
      Tensor stored = v->dtype() == DType::Float64 ? v->to(DType::Float32) : *v;
      if (stored.dtype() != storage_dtype(y.dtype))
        throw Error(ErrorCode::DTypeMismatch, "cpu: ConstantOfShape value dtype differs from the output", node.name,
                    "ConstantOfShape");
      std::memcpy(value_, stored.raw(), elem_);
    }
  }
  void run() override { fill_repeating(out_, static_cast<size_t>(count_) * elem_, value_, elem_); }

 private:
  size_t elem_ = 4;
  int64_t count_ = 0;
  std::byte* out_ = nullptr;
  std::byte value_[8] = {};
};

// Range(start, limit, delta): out[i] = start + i * delta; the count is the output's static shape.
class RangeKernel final : public Kernel {
 public:
  RangeKernel(const CompileContext& ctx, const ir::Node& node) {
    const ir::Value& y = ctx.value(node.outputs.at(0));
    dtype_ = storage_dtype(y.dtype);
    count_ = num_elements(y.shape);
    start_ = ctx.ptr(node.inputs.at(0));
    delta_ = ctx.ptr(node.inputs.at(2));
    out_ = ctx.ptr(node.outputs[0]);
  }
  void run() override {
    switch (dtype_) {
      case DType::Float32: case DType::Float64: fill<float>(); break;
      case DType::Int64: fill<int64_t>(); break;
      case DType::Int32: fill<int32_t>(); break;
      default: throw Error(ErrorCode::DTypeMismatch, "cpu: Range on bool");
    }
  }

 private:
  template <class T>
  void fill() {
    const T start = *static_cast<const T*>(start_), delta = *static_cast<const T*>(delta_);
    T* out = static_cast<T*>(out_);
    for (int64_t i = 0; i < count_; ++i) out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  }
  DType dtype_ = DType::Float32;
  int64_t count_ = 0;
  const void *start_ = nullptr, *delta_ = nullptr;
  void* out_ = nullptr;
};

}  // namespace

KernelPtr make_shape_kernel(CompileContext& ctx, const ir::Node& node) {
  switch (node.op) {
    case Op::Shape: return std::make_unique<ShapeKernel>(ctx, node);
    case Op::ConstantOfShape: return std::make_unique<FillKernel>(ctx, node);
    case Op::Range: return std::make_unique<RangeKernel>(ctx, node);
    default: throw Error(ErrorCode::Internal, "cpu: not a shape op", node.name, ir::op_name(node.op));
  }
}

}  // namespace lockstep::cpu
