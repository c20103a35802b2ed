// CPU: ReduceMean/Sum/Max/Min and CumSum. Deterministic and accurate: sums accumulate in double
// over fixed blocks of the reduced range, combined in block order, so the bits do not depend on
// the thread count; CumSum runs each lane serially in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/kernel.h"
#include "backends/cpu/parallel.h"
#include "ir/infer_rules.h"

namespace lockstep::cpu {

namespace {

using ir::Op;

constexpr int64_t kBlock = 8192;          // reduced elements per partial (fixed: part of the result's definition)
constexpr int64_t kParallelWork = 32768;  // elements below which a kernel stays on one thread

template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

template <class T>
Acc<T> init(Op op) {
  using A = Acc<T>;
  if (op == Op::ReduceMax)
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<T>::lowest();
  if (op == Op::ReduceMin)
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<T>::max();
  return 0;
}

// NaN wins: once `a` is NaN no comparison replaces it.
template <class A>
inline A pick(Op op, A a, A v) {
  if (op == Op::ReduceMax) return (v > a || v != v) ? v : a;
  return (v < a || v != v) ? v : a;
}

template <class T>
class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(CompileContext& ctx, const ir::Node& node) : op_(node.op) {
    const ir::Value& x = ctx.value(node.inputs.at(0));
    const Shape& s = x.shape;
    std::vector<int64_t> axes = ctx.const_ints(node, 1);
    const bool has_axes = node.inputs.size() > 1 && node.inputs[1] != ir::kNoValue;
    const std::vector<char> mask = ir::reduce_mask(node, static_cast<int64_t>(s.size()), has_axes ? &axes : nullptr);
    const std::vector<int64_t> strides = contiguous_strides(s);
    Shape kept, kept_strides, red, red_strides;
    for (size_t d = 0; d < s.size(); ++d) {
      (mask[d] ? red : kept).push_back(s[d]);
      (mask[d] ? red_strides : kept_strides).push_back(strides[d]);
    }
    count_ = num_elements(red);
    base_ = offsets(kept, kept_strides);
    // Reduced dims that are the trailing dims of the input are one contiguous run.
    contiguous_ = true;
    for (size_t d = 0, r = 0; d < s.size(); ++d)
      if (mask[d]) contiguous_ = contiguous_ && d == s.size() - red.size() + r++;
    if (!contiguous_) reduced_ = offsets(red, red_strides);
    blocks_ = std::max<int64_t>(1, (count_ + kBlock - 1) / kBlock);
    partial_.assign(static_cast<size_t>(static_cast<int64_t>(base_.size()) * blocks_), Acc<T>{});
    in_ = static_cast<const T*>(ctx.ptr(node.inputs[0]));
    out_ = static_cast<T*>(ctx.ptr(node.outputs.at(0)));
  }

  void run() override {
    const auto outs = static_cast<int64_t>(base_.size());
    const int64_t items = outs * blocks_;
    parallel_for(
        items, [&](int64_t item, int) {
      const int64_t o = item / blocks_, blk = item % blocks_;
      const int64_t begin = blk * kBlock, end = std::min(count_, begin + kBlock);
      const T* x = in_ + base_[static_cast<size_t>(o)];
      Acc<T> a = init<T>(op_);
      if (op_ == Op::ReduceMax || op_ == Op::ReduceMin) {
        for (int64_t k = begin; k < end; ++k) a = pick<Acc<T>>(op_, a, x[at(k)]);
      } else {
        for (int64_t k = begin; k < end; ++k) a += x[at(k)];
      }
      partial_[static_cast<size_t>(item)] = a;
    },
        outs * count_ > kParallelWork);
    for (int64_t o = 0; o < outs; ++o) {
      Acc<T> a = init<T>(op_);
      for (int64_t blk = 0; blk < blocks_; ++blk) {
        const Acc<T> p = partial_[static_cast<size_t>(o * blocks_ + blk)];
        a = op_ == Op::ReduceMax || op_ == Op::ReduceMin ? pick<Acc<T>>(op_, a, p) : a + p;
      }
      if (op_ == Op::ReduceMean) {
        if (count_ > 0) a = a / count_;
        else if constexpr (std::is_floating_point_v<T>) a = std::numeric_limits<double>::quiet_NaN();
      }
      out_[o] = static_cast<T>(a);
    }
  }

 private:
  int64_t at(int64_t k) const { return contiguous_ ? k : reduced_[static_cast<size_t>(k)]; }

  static std::vector<int64_t> offsets(const Shape& dims, const Shape& strides) {
    std::vector<int64_t> out(static_cast<size_t>(num_elements(dims)));
    std::vector<int64_t> index(dims.size(), 0);
    int64_t off = 0;
    for (auto& o : out) {
      o = off;
      for (size_t d = dims.size(); d-- > 0;) {
        off += strides[d];
        if (++index[d] < dims[d]) break;
        off -= strides[d] * dims[d];
        index[d] = 0;
      }
    }
    return out;
  }

  Op op_;
  int64_t count_ = 0, blocks_ = 1;
  bool contiguous_ = true;
  std::vector<int64_t> base_, reduced_;
  std::vector<Acc<T>> partial_;
  const T* in_ = nullptr;
  T* out_ = nullptr;
};

template <class T>
class CumSumKernel final : public Kernel {
 public:
  CumSumKernel(CompileContext& ctx, const ir::Node& node) {
    const Shape& s = ctx.value(node.inputs.at(0)).shape;
    const int64_t axis = ir::cumsum_axis(node, static_cast<int64_t>(s.size()), ctx.const_ints(node, 1));
    for (int64_t d = 0; d < axis; ++d) outer_ *= s[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner_ *= s[d];
    dim_ = s[static_cast<size_t>(axis)];
    exclusive_ = node.attrs.get_int("exclusive", 0) != 0;
    reverse_ = node.attrs.get_int("reverse", 0) != 0;
    in_ = static_cast<const T*>(ctx.ptr(node.inputs[0]));
    out_ = static_cast<T*>(ctx.ptr(node.outputs.at(0)));
  }

  void run() override {
    const int64_t lanes = outer_ * inner_;
    parallel_for(
        lanes, [&](int64_t lane, int) {
      const int64_t o = lane / inner_, j = lane % inner_;
      Acc<T> sum = 0;
      for (int64_t step = 0; step < dim_; ++step) {
        const int64_t k = reverse_ ? dim_ - 1 - step : step;
        const int64_t at = (o * dim_ + k) * inner_ + j;
        const Acc<T> v = in_[at];  // read before the write: out may be in's buffer
        if (exclusive_) {
          out_[at] = static_cast<T>(sum);
          sum += v;
        } else {
          sum += v;
          out_[at] = static_cast<T>(sum);
        }
      }
    },
        lanes * dim_ > kParallelWork && lanes > 1);
  }

 private:
  int64_t outer_ = 1, inner_ = 1, dim_ = 1;
  bool exclusive_ = false, reverse_ = false;
  const T* in_ = nullptr;
  T* out_ = nullptr;
};

template <template <class> class K>
KernelPtr typed(CompileContext& ctx, const ir::Node& node) {
  switch (storage_dtype(ctx.value(node.inputs.at(0)).dtype)) {
    case DType::Float32: return std::make_unique<K<float>>(ctx, node);
    case DType::Int64: return std::make_unique<K<int64_t>>(ctx, node);
    case DType::Int32: return std::make_unique<K<int32_t>>(ctx, node);
    default:
      throw Error(ErrorCode::DTypeMismatch,
                  std::string("cpu: ") + dtype_name(ctx.value(node.inputs[0]).dtype) + " input is not supported",
                  node.name, ir::op_name(node.op));
  }
}

}  // namespace

KernelPtr make_reduce_kernel(CompileContext& ctx, const ir::Node& node) {
  KernelPtr k = node.op == Op::CumSum ? typed<CumSumKernel>(ctx, node) : typed<ReduceKernel>(ctx, node);
  return with_epilogue(ctx, node, std::move(k));
}

}  // namespace lockstep::cpu
