// Unary and binary elementwise ops with numpy broadcasting, Pow, Where, Cast (Equal: logical.cpp).
// The output is walked as (row, column-chunk) items (static schedule); each operand is a row
// base plus an inner stride of 0 or 1, and the node's epilogue runs on the chunk just written.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/epilogue.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/parallel.h"

namespace lockstep::cpu {

namespace {

using ir::Op;

template <class F>
void for_each_chunk(const RowView& view, F&& f) {
  RowChunks c = row_chunks(view);
  const int64_t count = c.count();
  parallel_for(count, [&](int64_t item, int) {
    int64_t row = item / c.per_row, begin = (item % c.per_row) * c.chunk;
    f(row, begin, std::min(begin + c.chunk, c.inner));
  });
}

struct Operand {
  const std::byte* data = nullptr;
  RowOperand at;
  DType dtype = DType::Float32;
};

// `out` is the node's view shape (channels-last when its output is stored so).
Operand operand(const CompileContext& ctx, const ir::Node& node, ir::ValueId id, const Shape& out) {
  const ir::Value& v = ctx.value(id);
  RowOperand at = row_operand(ctx.view_shape(node, id), out);
  // A strided channel-slice view (views.h; full-shaped, channels-last [N][W][C]): rows `pitch` apart.
  if (const int64_t pitch = ctx.pitch_of(id)) at.outer_strides = {out.at(1) * pitch, pitch};
  return Operand{static_cast<const std::byte*>(ctx.ptr(id)), at, storage_dtype(v.dtype)};
}

// Whole row blocks of a rank-3 view whose operands advance by one pitch per row (batch 1 or
// matching batch strides), about 4096 elements per block: one call per block, not per row.
struct RowBlocks {
  int64_t rows_per_item = 0, items = 0;
};

bool uniform_pitch(const Operand& o, const Shape& out, int64_t& pitch) {
  if (o.at.outer_strides.size() != 2 || out.size() != 3) return false;
  pitch = o.at.outer_strides[1];
  return (out[0] == 1 || o.at.outer_strides[0] == out[1] * pitch) && (o.at.inner_stride == 0 || o.at.inner_stride == 1);
}

RowBlocks row_blocks(const RowView& v) {
  RowBlocks b;
  b.rows_per_item = std::max<int64_t>(1, 4096 / std::max<int64_t>(v.inner, 1));
  b.items = (v.rows + b.rows_per_item - 1) / b.rows_per_item;
  return b;
}

template <class T>
const T* row_ptr(const Operand& o, int64_t row, int64_t begin, const Shape& out) {
  return reinterpret_cast<const T*>(o.data) + o.at.row_offset(row, out) + begin * o.at.inner_stride;
}

class FloatUnaryKernel final : public Kernel {
 public:
  FloatUnaryKernel(CompileContext& ctx, const ir::Node& node) : op_(node.op), epilogue_(ctx, node) {
    Shape y = ctx.view_shape(node, node.outputs.at(0));
    // Without an epilogue to broadcast, one flat row: channels-last views have short rows.
    const bool strided = ctx.pitch_of(node.inputs.at(0)) != 0;  // a view's rows are not contiguous
    if (node.epilogue.empty() && !strided && ctx.value(node.inputs.at(0)).shape == ctx.value(node.outputs[0]).shape)
      y = Shape{num_elements(y)};
    view_ = row_view(y);
    x_ = y.size() == 1 ? Operand{static_cast<const std::byte*>(ctx.ptr(node.inputs.at(0))), row_operand(y, y),
                                 DType::Float32}
                       : operand(ctx, node, node.inputs.at(0), y);
    alpha_ = node.attrs.get_float("alpha", 0.01f);
    out_ = ctx.fptr(node.outputs[0]);
    if (strided && x_.at.inner_stride == 1 && uniform_pitch(x_, y, x_pitch_)) blocks_ = row_blocks(view_);
  }
  void run() override {
    if (blocks_.items > 0) {  // strided view input (views.h)
      const int64_t inner = view_.inner;
      parallel_for(blocks_.items, [&](int64_t item, int) {
        const int64_t r0 = item * blocks_.rows_per_item, r1 = std::min(view_.rows, r0 + blocks_.rows_per_item);
        unary_rows(op_, alpha_, reinterpret_cast<const float*>(x_.data) + r0 * x_pitch_, x_pitch_, out_ + r0 * inner,
                   r1 - r0, inner);
        if (epilogue_.empty()) return;
        if (epilogue_.flat()) epilogue_.apply_flat(out_, r0 * inner, r1 * inner);
        else
          for (int64_t r = r0; r < r1; ++r) epilogue_.apply_row(out_, r, 0, inner);
      });
      return;
    }
    for_each_chunk(view_, [&](int64_t row, int64_t b, int64_t e) {
      float* out = out_ + row * view_.inner + b;
      unary_to(op_, alpha_, row_ptr<float>(x_, row, b, view_.out_shape), x_.at.inner_stride, out, e - b);
      if (!epilogue_.empty()) epilogue_.apply_row(out_, row, b, e);
    });
  }

 private:
  Op op_;
  float alpha_ = 0;
  Epilogue epilogue_;
  RowView view_;
  Operand x_;
  float* out_ = nullptr;
  RowBlocks blocks_;  // items > 0: the row-block path
  int64_t x_pitch_ = 0;
};

class FloatBinaryKernel final : public Kernel {
 public:
  FloatBinaryKernel(CompileContext& ctx, const ir::Node& node) : op_(node.op), epilogue_(ctx, node) {
    const Shape y = ctx.view_shape(node, node.outputs.at(0));
    view_ = row_view(y);
    a_ = operand(ctx, node, node.inputs.at(0), y);
    b_ = operand(ctx, node, node.inputs.at(1), y);
    out_ = ctx.fptr(node.outputs[0]);
    const bool strided = ctx.pitch_of(node.inputs[0]) != 0 || ctx.pitch_of(node.inputs[1]) != 0;
    if (strided && uniform_pitch(a_, y, a_pitch_) && uniform_pitch(b_, y, b_pitch_)) blocks_ = row_blocks(view_);
  }
  void run() override {
    const Shape& s = view_.out_shape;
    if (blocks_.items > 0) {  // strided view operands (views.h)
      const int64_t inner = view_.inner;
      const auto* a = reinterpret_cast<const float*>(a_.data);
      const auto* b = reinterpret_cast<const float*>(b_.data);
      parallel_for(blocks_.items, [&](int64_t item, int) {
        const int64_t r0 = item * blocks_.rows_per_item, r1 = std::min(view_.rows, r0 + blocks_.rows_per_item);
        binary_rows(op_, a + r0 * a_pitch_, a_pitch_, a_.at.inner_stride, b + r0 * b_pitch_, b_pitch_,
                    b_.at.inner_stride, out_ + r0 * inner, r1 - r0, inner);
        if (epilogue_.empty()) return;
        if (epilogue_.flat()) epilogue_.apply_flat(out_, r0 * inner, r1 * inner);
        else
          for (int64_t r = r0; r < r1; ++r) epilogue_.apply_row(out_, r, 0, inner);
      });
      return;
    }
    for_each_chunk(view_, [&](int64_t row, int64_t b, int64_t e) {
      float* out = out_ + row * view_.inner + b;
      binary_to(op_, row_ptr<float>(a_, row, b, s), a_.at.inner_stride, row_ptr<float>(b_, row, b, s),
                b_.at.inner_stride, out, e - b);
      if (!epilogue_.empty()) epilogue_.apply_row(out_, row, b, e);
    });
  }

 private:
  Op op_;
  Epilogue epilogue_;
  RowView view_;
  Operand a_, b_;
  float* out_ = nullptr;
  RowBlocks blocks_;  // items > 0: the row-block path
  int64_t a_pitch_ = 0, b_pitch_ = 0;
};

// Integer arithmetic (shape computations fed at run time); Div truncates as C++ does.
template <class T>
class IntBinaryKernel final : public Kernel {
 public:
  IntBinaryKernel(CompileContext& ctx, const ir::Node& node) : op_(node.op), name_(node.name) {
    const ir::Value& y = ctx.value(node.outputs.at(0));
    view_ = row_view(y.shape);
    a_ = operand(ctx, node, node.inputs.at(0), y.shape);
    b_ = operand(ctx, node, node.inputs.at(1), y.shape);
    out_ = static_cast<T*>(ctx.ptr(node.outputs[0]));
  }
  void run() override {
    const Shape& s = view_.out_shape;
    for (int64_t row = 0; row < view_.rows; ++row) {
      const T* a = row_ptr<T>(a_, row, 0, s);
      const T* b = row_ptr<T>(b_, row, 0, s);
      T* out = out_ + row * view_.inner;
      for (int64_t j = 0; j < view_.inner; ++j) {
        T x = a[j * a_.at.inner_stride], y = b[j * b_.at.inner_stride];
        switch (op_) {
          case Op::Add: out[j] = static_cast<T>(x + y); break;
          case Op::Sub: out[j] = static_cast<T>(x - y); break;
          case Op::Mul: out[j] = static_cast<T>(x * y); break;
          case Op::Div:
            if (y == 0) throw Error(ErrorCode::InvalidArgument, "integer division by zero", name_, "Div");
            out[j] = static_cast<T>(x / y);
            break;
          case Op::Pow: out[j] = static_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(y))); break;
          default: break;
        }
      }
    }
  }

 private:
  Op op_;
  std::string name_;
  RowView view_;
  Operand a_, b_;
  T* out_ = nullptr;
};

template <class T>
T load_as(const std::byte* p, DType dtype) {
  switch (dtype) {
    case DType::Float32: case DType::Float64: return static_cast<T>(*reinterpret_cast<const float*>(p));
    case DType::Int64: return static_cast<T>(*reinterpret_cast<const int64_t*>(p));
    case DType::Int32: return static_cast<T>(*reinterpret_cast<const int32_t*>(p));
    case DType::Bool: return static_cast<T>(*reinterpret_cast<const bool*>(p));
  }
  return T{};
}

// Where(cond, x, y): bytes of the selected operand, any element type.
class WhereKernel final : public Kernel {
 public:
  WhereKernel(CompileContext& ctx, const ir::Node& node) {
    const ir::Value& y = ctx.value(node.outputs.at(0));
    view_ = row_view(y.shape);
    c_ = operand(ctx, node, node.inputs.at(0), y.shape);
    x_ = operand(ctx, node, node.inputs.at(1), y.shape);
    y_ = operand(ctx, node, node.inputs.at(2), y.shape);
    out_ = static_cast<std::byte*>(ctx.ptr(node.outputs[0]));
    size_ = static_cast<int64_t>(storage_size(y.dtype));
  }
  void run() override {
    const Shape& s = view_.out_shape;
    for_each_chunk(view_, [&](int64_t row, int64_t b, int64_t e) {
      const bool* c = row_ptr<bool>(c_, row, b, s);
      const std::byte* x = x_.data + (x_.at.row_offset(row, s) + b * x_.at.inner_stride) * size_;
      const std::byte* y = y_.data + (y_.at.row_offset(row, s) + b * y_.at.inner_stride) * size_;
      std::byte* out = out_ + (row * view_.inner + b) * size_;
      switch (size_) {  // a fixed-size copy per element, not a memcpy call
        case 1: select<1>(c, x, y, out, e - b); break;
        case 4: select<4>(c, x, y, out, e - b); break;
        case 8: select<8>(c, x, y, out, e - b); break;
        default: select<0>(c, x, y, out, e - b);
      }
    });
  }

  template <size_t S>
  void select(const bool* c, const std::byte* x, const std::byte* y, std::byte* out, int64_t n) const {
    const int64_t cs = c_.at.inner_stride, xs = x_.at.inner_stride * size_, ys = y_.at.inner_stride * size_;
    const auto bytes = S ? S : static_cast<size_t>(size_);
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(out + j * static_cast<int64_t>(bytes), c[j * cs] ? x + j * xs : y + j * ys, bytes);
  }

 private:
  RowView view_;
  Operand c_, x_, y_;
  std::byte* out_ = nullptr;
  int64_t size_ = 4;
};

// Pow whose operands differ in dtype (ONNX allows e.g. float ** int64): computed in double,
// stored as the base's dtype. Rare in models, so a plain loop.
class MixedPowKernel final : public Kernel {
 public:
  MixedPowKernel(CompileContext& ctx, const ir::Node& node) {
    const ir::Value& y = ctx.value(node.outputs.at(0));
    view_ = row_view(y.shape);
    a_ = operand(ctx, node, node.inputs.at(0), y.shape);
    b_ = operand(ctx, node, node.inputs.at(1), y.shape);
    out_dtype_ = storage_dtype(y.dtype);
    out_ = static_cast<std::byte*>(ctx.ptr(node.outputs[0]));
  }
  void run() override {
    const Shape& s = view_.out_shape;
    const int64_t as = static_cast<int64_t>(storage_size(a_.dtype)), bs = static_cast<int64_t>(storage_size(b_.dtype));
    for (int64_t row = 0; row < view_.rows; ++row) {
      for (int64_t j = 0; j < view_.inner; ++j) {
        const std::byte* pa = a_.data + (a_.at.row_offset(row, s) + j * a_.at.inner_stride) * as;
        const std::byte* pb = b_.data + (b_.at.row_offset(row, s) + j * b_.at.inner_stride) * bs;
        double x = is_floating(a_.dtype) ? load_as<double>(pa, a_.dtype) : static_cast<double>(load_as<int64_t>(pa, a_.dtype));
        double e = is_floating(b_.dtype) ? load_as<double>(pb, b_.dtype) : static_cast<double>(load_as<int64_t>(pb, b_.dtype));
        double r = std::pow(x, e);
        int64_t i = row * view_.inner + j;
        switch (out_dtype_) {
          case DType::Float32: case DType::Float64: reinterpret_cast<float*>(out_)[i] = static_cast<float>(r); break;
          case DType::Int64: reinterpret_cast<int64_t*>(out_)[i] = static_cast<int64_t>(r); break;
          case DType::Int32: reinterpret_cast<int32_t*>(out_)[i] = static_cast<int32_t>(r); break;
          case DType::Bool: reinterpret_cast<bool*>(out_)[i] = r != 0.0; break;
        }
      }
    }
  }

 private:
  RowView view_;
  Operand a_, b_;
  DType out_dtype_ = DType::Float32;
  std::byte* out_ = nullptr;
};

// Float -> integer conversion without undefined behaviour: NaN -> 0, out of range saturates.
template <class T>
T float_to_int(float v) {
  if (std::isnan(v)) return 0;
  if (v >= static_cast<float>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  if (v <= static_cast<float>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  return static_cast<T>(v);
}

class CastKernel final : public Kernel {
 public:
  CastKernel(CompileContext& ctx, const ir::Node& node) {
    const ir::Value& x = ctx.value(node.inputs.at(0));
    const ir::Value& y = ctx.value(node.outputs.at(0));
    from_ = storage_dtype(x.dtype);
    to_ = storage_dtype(y.dtype);
    n_ = num_elements(y.shape);
    in_ = static_cast<const std::byte*>(ctx.ptr(node.inputs[0]));
    out_ = static_cast<std::byte*>(ctx.ptr(node.outputs[0]));
  }
  void run() override {
    const size_t is = dtype_size(from_);
    for (int64_t i = 0; i < n_; ++i) {
      const std::byte* p = in_ + static_cast<size_t>(i) * is;
      switch (to_) {
        case DType::Float32: case DType::Float64:
          reinterpret_cast<float*>(out_)[i] = load_as<float>(p, from_);
          break;
        case DType::Bool:
          reinterpret_cast<bool*>(out_)[i] = is_floating(from_) ? load_as<float>(p, from_) != 0.0f
                                                                 : load_as<int64_t>(p, from_) != 0;
          break;
        case DType::Int64:
          reinterpret_cast<int64_t*>(out_)[i] =
              is_floating(from_) ? float_to_int<int64_t>(load_as<float>(p, from_)) : load_as<int64_t>(p, from_);
          break;
        case DType::Int32:
          reinterpret_cast<int32_t*>(out_)[i] =
              is_floating(from_) ? float_to_int<int32_t>(load_as<float>(p, from_)) : load_as<int32_t>(p, from_);
          break;
      }
    }
  }

 private:
  DType from_ = DType::Float32, to_ = DType::Float32;
  int64_t n_ = 0;
  const std::byte* in_ = nullptr;
  std::byte* out_ = nullptr;
};

}  // namespace

KernelPtr make_elementwise_kernel(CompileContext& ctx, const ir::Node& node) {
  const DType out = storage_dtype(ctx.value(node.outputs.at(0)).dtype);
  auto unsupported = [&] {
    return Error(ErrorCode::UnsupportedAttribute,
                 std::string("cpu: ") + ir::op_name(node.op) + " with a " + dtype_name(out) +
                     " result and these operand dtypes is not supported",
                 node.name, ir::op_name(node.op));
  };
  KernelPtr k;
  switch (node.op) {
    case Op::Where: k = std::make_unique<WhereKernel>(ctx, node); break;
    case Op::Cast: k = std::make_unique<CastKernel>(ctx, node); break;
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow:
      if (node.op == Op::Pow && (storage_dtype(ctx.value(node.inputs.at(0)).dtype) != out ||
                                 storage_dtype(ctx.value(node.inputs.at(1)).dtype) != out)) {
        k = std::make_unique<MixedPowKernel>(ctx, node);
        break;
      }
      for (ir::ValueId id : node.inputs)
        if (id != ir::kNoValue && storage_dtype(ctx.value(id).dtype) != out) throw unsupported();
      if (out == DType::Float32) return std::make_unique<FloatBinaryKernel>(ctx, node);
      if (out == DType::Int64) k = std::make_unique<IntBinaryKernel<int64_t>>(ctx, node);
      else if (out == DType::Int32) k = std::make_unique<IntBinaryKernel<int32_t>>(ctx, node);
      else throw unsupported();
      break;
    default:
      if ((out == DType::Int64 || out == DType::Int32) && storage_dtype(ctx.value(node.inputs.at(0)).dtype) == out)
        return make_int_unary_kernel(ctx, node);  // Abs, Neg, Relu (math.cpp)
      if (out != DType::Float32 || storage_dtype(ctx.value(node.inputs.at(0)).dtype) != DType::Float32)
        throw unsupported();
      return std::make_unique<FloatUnaryKernel>(ctx, node);
  }
  return with_epilogue(ctx, node, std::move(k));
}

}  // namespace lockstep::cpu
