// CPU: ScatterND, GatherND, GatherElements (NonZero has a data-dependent shape: it runs in the
// run-time shape stage, see backend.cpp). Elements are copied by storage size; every index is
// checked (ir::checked_index) before it is used, on one thread so that the error is the first
// bad index in index order and is thrown outside any parallel region.
#include <cstring>

#include "backends/cpu/kernel.h"
#include "ir/infer_rules.h"

namespace lockstep::cpu {

namespace {

using ir::Op;

struct Indices {
  const void* data = nullptr;
  DType dtype = DType::Int64;
  int64_t count = 0;
  int64_t operator[](int64_t i) const {
    return dtype == DType::Int64 ? static_cast<const int64_t*>(data)[i] : static_cast<const int32_t*>(data)[i];
  }
};

Indices indices_of(const CompileContext& ctx, const ir::Node& node, size_t input) {
  const ir::Value& v = ctx.value(node.inputs.at(input));
  if (v.dtype != DType::Int64 && v.dtype != DType::Int32)
    throw Error(ErrorCode::DTypeMismatch, "cpu: indices must be int32 or int64", node.name, ir::op_name(node.op));
  return {ctx.ptr(node.inputs[input]), v.dtype, num_elements(v.shape)};
}

// Element offsets of the index tuples [t * m, t * m + m) into dims [dim0, dim0 + m) of `shape`.
void tuple_offsets(const ir::Node& node, const Indices& idx, int64_t m, const Shape& shape, size_t dim0,
                   std::vector<int64_t>& out) {
  const std::vector<int64_t> strides = contiguous_strides(shape);
  const int64_t tuples = m ? idx.count / m : 0;
  out.resize(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < m; ++j) {
      const auto d = dim0 + static_cast<size_t>(j);
      off += ir::checked_index(node, idx[t * m + j], shape[d], t * m + j, "index") * strides[d];
    }
    out[static_cast<size_t>(t)] = off;
  }
}

class GatherNdKernel final : public Kernel {
 public:
  GatherNdKernel(CompileContext& ctx, const ir::Node& node) : node_(node), idx_(indices_of(ctx, node, 1)) {
    const ir::Value& data = ctx.value(node.inputs.at(0));
    const ir::Value& ind = ctx.value(node.inputs[1]);
    ir::gather_nd_shape(node, data.shape, ind.shape);
    const auto b = static_cast<size_t>(node.attrs.get_int("batch_dims", 0));
    m_ = ind.shape.back();
    for (size_t d = 0; d < b; ++d) batches_ *= data.shape[d];
    for (size_t d = b + static_cast<size_t>(m_); d < data.shape.size(); ++d) slice_ *= data.shape[d];
    inner_ = Shape(data.shape.begin() + static_cast<int64_t>(b), data.shape.end());
    per_batch_ = num_elements(inner_);
    es_ = static_cast<int64_t>(storage_size(data.dtype));
    in_ = static_cast<const std::byte*>(ctx.ptr(node.inputs[0]));
    out_ = static_cast<std::byte*>(ctx.ptr(node.outputs.at(0)));
  }
  void run() override {
    tuple_offsets(node_, idx_, m_, inner_, 0, offsets_);
    const auto tuples = static_cast<int64_t>(offsets_.size());
    const int64_t per_batch_tuples = batches_ ? tuples / batches_ : 0;
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t bi = per_batch_tuples ? t / per_batch_tuples : 0;
      std::memcpy(out_ + t * slice_ * es_, in_ + (bi * per_batch_ + offsets_[static_cast<size_t>(t)]) * es_,
                  static_cast<size_t>(slice_ * es_));
    }
  }

 private:
  ir::Node node_;
  Indices idx_;
  int64_t m_ = 1, batches_ = 1, slice_ = 1, per_batch_ = 1, es_ = 4;
  Shape inner_;
  std::vector<int64_t> offsets_;
  const std::byte* in_ = nullptr;
  std::byte* out_ = nullptr;
};

template <class T>
void combine(T* dst, const T* src, int64_t n, char how) {
  for (int64_t i = 0; i < n; ++i) {
    switch (how) {
      case 'a': dst[i] = static_cast<T>(dst[i] + src[i]); break;
      case 'm': dst[i] = static_cast<T>(dst[i] * src[i]); break;
      case 'x': dst[i] = std::max(dst[i], src[i]); break;
      default: dst[i] = std::min(dst[i], src[i]); break;
    }
  }
}

class ScatterNdKernel final : public Kernel {
 public:
  ScatterNdKernel(CompileContext& ctx, const ir::Node& node) : node_(node), idx_(indices_of(ctx, node, 1)) {
    const ir::Value& data = ctx.value(node.inputs.at(0));
    const ir::Value& ind = ctx.value(node.inputs[1]);
    ir::check_scatter_nd(node, data.shape, ind.shape, ctx.value(node.inputs.at(2)).shape);
    const std::string how = ir::scatter_reduction(node);
    how_ = how == "none" ? 'n' : how == "add" ? 'a' : how == "mul" ? 'm' : how == "max" ? 'x' : 'i';
    dtype_ = storage_dtype(data.dtype);
    if (how_ != 'n' && dtype_ == DType::Bool)
      throw Error(ErrorCode::DTypeMismatch, "cpu: reduction '" + how + "' does not accept bool", node.name, "ScatterND");
    k_ = ind.shape.back();
    for (size_t d = static_cast<size_t>(k_); d < data.shape.size(); ++d) slice_ *= data.shape[d];
    shape_ = data.shape;
    es_ = static_cast<int64_t>(storage_size(data.dtype));
    bytes_ = static_cast<size_t>(num_elements(data.shape) * es_);
    data_ = static_cast<const std::byte*>(ctx.ptr(node.inputs[0]));
    updates_ = static_cast<const std::byte*>(ctx.ptr(node.inputs[2]));
    out_ = static_cast<std::byte*>(ctx.ptr(node.outputs.at(0)));
  }
  void run() override {
    tuple_offsets(node_, idx_, k_, shape_, 0, offsets_);  // all checked before the output is touched
    if (out_ != data_) std::memmove(out_, data_, bytes_);
    for (size_t t = 0; t < offsets_.size(); ++t) {  // index order: with repeated indices the last write wins
      std::byte* to = out_ + offsets_[t] * es_;
      const std::byte* from = updates_ + static_cast<int64_t>(t) * slice_ * es_;
      if (how_ == 'n') {
        std::memcpy(to, from, static_cast<size_t>(slice_ * es_));
        continue;
      }
      switch (dtype_) {
        case DType::Float32: combine(reinterpret_cast<float*>(to), reinterpret_cast<const float*>(from), slice_, how_); break;
        case DType::Int64: combine(reinterpret_cast<int64_t*>(to), reinterpret_cast<const int64_t*>(from), slice_, how_); break;
        case DType::Int32: combine(reinterpret_cast<int32_t*>(to), reinterpret_cast<const int32_t*>(from), slice_, how_); break;
        default: break;  // bool rejected at compile time
      }
    }
  }

 private:
  ir::Node node_;
  Indices idx_;
  char how_ = 'n';
  DType dtype_ = DType::Float32;
  int64_t k_ = 1, slice_ = 1, es_ = 4;
  size_t bytes_ = 0;
  Shape shape_;
  std::vector<int64_t> offsets_;
  const std::byte* data_ = nullptr;
  const std::byte* updates_ = nullptr;
  std::byte* out_ = nullptr;
};

class GatherElementsKernel final : public Kernel {
 public:
  GatherElementsKernel(CompileContext& ctx, const ir::Node& node) : node_(node), idx_(indices_of(ctx, node, 1)) {
    const ir::Value& data = ctx.value(node.inputs.at(0));
    shape_ = ctx.value(node.inputs[1]).shape;
    const auto axis = static_cast<size_t>(ir::gather_elements_axis(node, data.shape, shape_));
    const std::vector<int64_t> strides = contiguous_strides(data.shape);
    walk_ = strides;
    walk_[axis] = 0;
    axis_stride_ = strides[axis];
    dim_ = data.shape[axis];
    es_ = storage_size(data.dtype);
    in_ = static_cast<const std::byte*>(ctx.ptr(node.inputs[0]));
    out_ = static_cast<std::byte*>(ctx.ptr(node.outputs.at(0)));
  }
  void run() override {
    std::vector<int64_t> index(shape_.size(), 0);
    int64_t base = 0;
    for (int64_t i = 0; i < idx_.count; ++i) {
      const int64_t k = ir::checked_index(node_, idx_[i], dim_, i, "index");
      std::memcpy(out_ + static_cast<size_t>(i) * es_, in_ + static_cast<size_t>(base + k * axis_stride_) * es_, es_);
      for (size_t d = shape_.size(); d-- > 0;) {
        base += walk_[d];
        if (++index[d] < shape_[d]) break;
        base -= walk_[d] * shape_[d];
        index[d] = 0;
      }
    }
  }

 private:
  ir::Node node_;
  Indices idx_;
  Shape shape_;
  std::vector<int64_t> walk_;
  int64_t axis_stride_ = 1, dim_ = 1;
  size_t es_ = 4;
  const std::byte* in_ = nullptr;
  std::byte* out_ = nullptr;
};

}  // namespace

KernelPtr make_indexing_kernel(CompileContext& ctx, const ir::Node& node) {
  switch (node.op) {
    case Op::GatherND: return std::make_unique<GatherNdKernel>(ctx, node);
    case Op::ScatterND: return std::make_unique<ScatterNdKernel>(ctx, node);
    case Op::GatherElements: return std::make_unique<GatherElementsKernel>(ctx, node);
    default:
      throw Error(ErrorCode::UnsupportedOp, "cpu: data-dependent output shape: runs in the run-time shape stage",
                  node.name, ir::op_name(node.op));
  }
}

}  // namespace lockstep::cpu
