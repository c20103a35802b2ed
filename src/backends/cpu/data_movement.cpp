// Data movement: every op here is a (possibly strided, broadcast or reversed) copy, written
// once as strided_copy over rows; Concat/Split copy contiguous blocks; Pad and Gather map indices.
#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/kernel.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/views.h"

namespace lockstep::cpu {

namespace {

using ir::Op;

template <size_t S>
struct Elem {
  unsigned char b[S];
};

template <size_t S>
void copy_strided_row(std::byte* out, const std::byte* in, int64_t n, int64_t stride) {
  auto* o = reinterpret_cast<Elem<S>*>(out);
  auto* i = reinterpret_cast<const Elem<S>*>(in);
  for (int64_t j = 0; j < n; ++j) o[j] = i[j * stride];
}

// out (contiguous, `shape`) [k] = in[sum(index_d * strides_d)]; strides in elements, any sign.
void strided_copy(std::byte* out, const std::byte* in, const Shape& shape, const std::vector<int64_t>& strides,
                  size_t elem) {
  const int64_t inner = shape.empty() ? 1 : shape.back();
  const int64_t inner_stride = shape.empty() ? 1 : strides.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
  if (inner == 0) return;
  const auto es = static_cast<int64_t>(elem);
  parallel_for(
      rows, [&](int64_t row, int) {
    int64_t off = 0, rest = row;
    for (size_t d = shape.size() - 1; d-- > 0;) {
      off += (rest % shape[d]) * strides[d];
      rest /= shape[d];
    }
    std::byte* o = out + row * inner * es;
    const std::byte* i = in + off * es;
    if (inner_stride == 1) {
      std::memcpy(o, i, static_cast<size_t>(inner * es));
    } else {
      switch (elem) {
        case 1: copy_strided_row<1>(o, i, inner, inner_stride); break;
        case 4: copy_strided_row<4>(o, i, inner, inner_stride); break;
        case 8: copy_strided_row<8>(o, i, inner, inner_stride); break;
        default:
          for (int64_t j = 0; j < inner; ++j) std::memcpy(o + j * es, i + j * inner_stride * es, elem);
      }
    }
  },
      rows * inner > 32768);
}

struct Io {
  const std::byte* in = nullptr;
  std::byte* out = nullptr;
  size_t elem = 4;
  Shape in_shape, out_shape;
};

Io io(const CompileContext& ctx, const ir::Node& node) {
  Io r;
  const ir::Value& x = ctx.value(node.inputs.at(0));
  const ir::Value& y = ctx.value(node.outputs.at(0));
  r.in = static_cast<const std::byte*>(ctx.ptr(node.inputs[0]));
  r.out = static_cast<std::byte*>(ctx.ptr(node.outputs[0]));
  r.elem = storage_size(y.dtype);
  r.in_shape = x.shape;
  r.out_shape = y.shape;
  return r;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const ir::Node& node) {
  if (axis < -rank || axis >= rank)
    throw Error(ErrorCode::UnsupportedAttribute, "axis " + std::to_string(axis) + " out of range for rank " +
                                                     std::to_string(rank), node.name, ir::op_name(node.op));
  return axis < 0 ? axis + rank : axis;
}

// Same bytes, new shape (Reshape, Flatten, Squeeze, Unsqueeze, Identity).
class CopyKernel final : public Kernel {
 public:
  CopyKernel(const std::byte* in, std::byte* out, size_t bytes) : in_(in), out_(out), bytes_(bytes) {}
  void run() override {
    if (in_ != out_) std::memcpy(out_, in_, bytes_);
  }

 private:
  const std::byte* in_;
  std::byte* out_;
  size_t bytes_;
};

class StridedKernel final : public Kernel {
 public:
  StridedKernel(Io io, int64_t base, std::vector<int64_t> strides)
      : io_(std::move(io)), base_(base), strides_(std::move(strides)) {}
  void run() override {
    strided_copy(io_.out, io_.in + base_ * static_cast<int64_t>(io_.elem), io_.out_shape, strides_, io_.elem);
  }

 private:
  Io io_;
  int64_t base_;
  std::vector<int64_t> strides_;
};

KernelPtr make_slice(const CompileContext& ctx, const ir::Node& node) {
  Io r = io(ctx, node);
  const int64_t rank = static_cast<int64_t>(r.in_shape.size());
  std::vector<int64_t> starts = ctx.const_ints(node, 1), ends = ctx.const_ints(node, 2);
  std::vector<int64_t> axes = ctx.const_ints(node, 3), steps = ctx.const_ints(node, 4);
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw Error(ErrorCode::ShapeMismatch, "cpu: Slice starts/ends/axes/steps lengths differ", node.name, "Slice");
  // Element strides of the input's logical [N][C][W] dims in its stored layout.
  std::vector<int64_t> strides = contiguous_strides(r.in_shape);
  if (ctx.is_nwc(node.inputs[0])) strides = {r.in_shape[1] * r.in_shape[2], 1, r.in_shape[1]};
  int64_t base = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = normalize_axis(axes[i], rank, node);
    int64_t dim = r.in_shape[static_cast<size_t>(a)], step = steps[i], st = starts[i];
    if (step == 0) throw Error(ErrorCode::UnsupportedAttribute, "cpu: Slice step 0", node.name, "Slice");
    if (st < 0) st += dim;
    st = step > 0 ? std::clamp<int64_t>(st, 0, dim) : std::clamp<int64_t>(st, 0, dim - 1);
    if (r.out_shape[static_cast<size_t>(a)] > 0) base += st * strides[static_cast<size_t>(a)];
    strides[static_cast<size_t>(a)] *= step;
  }
  if (ctx.is_nwc(node.outputs[0])) {  // walk the output in its stored [N][W][C] order
    r.out_shape = nwc_view(r.out_shape);
    std::swap(strides[1], strides[2]);
  }
  return std::make_unique<StridedKernel>(std::move(r), base, std::move(strides));
}

KernelPtr make_transpose(const CompileContext& ctx, const ir::Node& node) {
  Io r = io(ctx, node);
  const size_t rank = r.in_shape.size();
  std::vector<int64_t> perm = node.attrs.get_ints("perm");
  if (perm.empty())
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  if (perm.size() != rank) throw Error(ErrorCode::UnsupportedAttribute, "cpu: Transpose perm length", node.name, "Transpose");
  std::vector<int64_t> in_strides = contiguous_strides(r.in_shape), strides(rank);
  for (size_t i = 0; i < rank; ++i) strides[i] = in_strides.at(static_cast<size_t>(normalize_axis(perm[i], static_cast<int64_t>(rank), node)));
  return std::make_unique<StridedKernel>(std::move(r), 0, std::move(strides));
}

KernelPtr make_expand(const CompileContext& ctx, const ir::Node& node) {
  Io r = io(ctx, node);
  std::vector<int64_t> strides = broadcast_strides(r.in_shape, r.out_shape);
  return std::make_unique<StridedKernel>(std::move(r), 0, std::move(strides));
}

// Concat and Split: blocks of `axis_len * inner` elements per outer index.
struct Block {
  std::byte* ptr;
  int64_t len;  // elements along the axis times inner
};

class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(std::vector<const std::byte*> parts, std::vector<int64_t> lens, std::byte* out, int64_t outer,
               int64_t total, size_t elem, bool split)
      : parts_(std::move(parts)), lens_(std::move(lens)), out_(out), outer_(outer), total_(total), elem_(elem),
        split_(split) {}
  void run() override {
    const auto es = static_cast<int64_t>(elem_);
    parallel_for(
        outer_, [&](int64_t o, int) {
      int64_t at = 0;
      for (size_t p = 0; p < parts_.size(); ++p) {
        std::byte* whole = out_ + (o * total_ + at) * es;
        std::byte* part = const_cast<std::byte*>(parts_[p]) + o * lens_[p] * es;
        if (split_) std::memcpy(part, whole, static_cast<size_t>(lens_[p] * es));
        else std::memcpy(whole, part, static_cast<size_t>(lens_[p] * es));
        at += lens_[p];
      }
    },
        outer_ * total_ > 32768);
  }

 private:
  std::vector<const std::byte*> parts_;
  std::vector<int64_t> lens_;
  std::byte* out_;
  int64_t outer_, total_;
  size_t elem_;
  bool split_;
};

KernelPtr make_concat_or_split(const CompileContext& ctx, const ir::Node& node, bool split) {
  const ir::ValueId whole_id = split ? node.inputs.at(0) : node.outputs.at(0);
  const ir::Value& whole = ctx.value(whole_id);
  const int64_t rank = static_cast<int64_t>(whole.shape.size());
  int64_t axis = normalize_axis(node.attrs.get_int("axis", split ? 0 : 1), rank, node);
  // Channels-last group (layout.h): blocks along the stored [N][W][C] dims.
  const bool nwc = ctx.is_nwc(whole_id);
  auto stored = [&](const Shape& s) { return nwc ? nwc_view(s) : s; };
  if (nwc && axis > 0) axis = 3 - axis;
  const Shape whole_shape = stored(whole.shape);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= whole_shape[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= whole_shape[static_cast<size_t>(i)];
  std::vector<const std::byte*> parts;
  std::vector<int64_t> lens;
  const auto& list = split ? node.outputs : node.inputs;
  for (ir::ValueId id : list) {
    if (id == ir::kNoValue) continue;
    parts.push_back(static_cast<const std::byte*>(ctx.ptr(id)));
    lens.push_back(stored(ctx.value(id).shape).at(static_cast<size_t>(axis)) * inner);
  }
  auto* w = static_cast<std::byte*>(ctx.ptr(whole_id));
  return std::make_unique<ConcatKernel>(std::move(parts), std::move(lens), w, outer,
                                        whole_shape[static_cast<size_t>(axis)] * inner, storage_size(whole.dtype), split);
}

class PadKernel final : public Kernel {
 public:
  PadKernel(const CompileContext& ctx, const ir::Node& node) : r_(io(ctx, node)) {
    const int64_t rank = static_cast<int64_t>(r_.in_shape.size());
    std::vector<int64_t> pads = ctx.const_ints(node, 1), axes = ctx.const_ints(node, 3);
    if (axes.empty())
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    if (pads.size() != 2 * axes.size())
      throw Error(ErrorCode::ShapeMismatch, "cpu: Pad pads length does not match axes", node.name, "Pad");
    begin_.assign(static_cast<size_t>(rank), 0);
    for (size_t i = 0; i < axes.size(); ++i) begin_[static_cast<size_t>(normalize_axis(axes[i], rank, node))] = pads[i];
    std::string mode = node.attrs.get_string("mode", "constant");
    if (mode == "constant") mode_ = 0;
    else if (mode == "reflect") mode_ = 1;
    else if (mode == "edge") mode_ = 2;
    else throw Error(ErrorCode::UnsupportedAttribute, "cpu: Pad mode '" + mode + "'", node.name, "Pad");
    if (node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue)
      value_ = static_cast<const std::byte*>(ctx.ptr(node.inputs[2]));
    strides_ = contiguous_strides(r_.in_shape);
  }

  // Source index along one dim, or -1 when the position is constant padding.
  int64_t source(int64_t i, size_t d) const {
    const int64_t n = r_.in_shape[d];
    int64_t s = i - begin_[d];
    if (s >= 0 && s < n) return s;
    if (mode_ == 0 || n == 0) return -1;
    if (mode_ == 2) return std::clamp<int64_t>(s, 0, n - 1);
    if (n == 1) return 0;
    const int64_t period = 2 * (n - 1);
    s %= period;
    if (s < 0) s += period;
    return s < n ? s : period - s;
  }

  void run() override {
    const auto es = static_cast<int64_t>(r_.elem);
    const Shape& out = r_.out_shape;
    const int64_t inner = out.empty() ? 1 : out.back();
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < out.size(); ++d) rows *= out[d];
    if (inner == 0) return;
    std::byte fill[8] = {};
    if (value_) std::memcpy(fill, value_, r_.elem);
    const bool zero_fill = std::all_of(fill, fill + r_.elem, [](std::byte v) { return v == std::byte{0}; });
    const size_t last = out.empty() ? 0 : out.size() - 1;
    parallel_for(
        rows, [&](int64_t row, int) {
      int64_t off = 0, rest = row;
      bool outside = false;
      for (size_t d = last; d-- > 0;) {
        int64_t s = source(rest % out[d], d);
        rest /= out[d];
        if (s < 0) outside = true;
        else off += s * strides_[d];
      }
      std::byte* o = r_.out + row * inner * es;
      // Output positions [from, to) of this row that are padding: the fill value, or (reflect,
      // edge) the input element each maps to.
      auto pad = [&](int64_t from, int64_t to) {
        if (mode_ == 0 || outside) {
          if (zero_fill) std::memset(o + from * es, 0, static_cast<size_t>(std::max<int64_t>(to - from, 0) * es));
          else for (int64_t j = from; j < to; ++j) std::memcpy(o + j * es, fill, r_.elem);
          return;
        }
        for (int64_t j = from; j < to; ++j) {
          const int64_t s = source(j, last);
          std::memcpy(o + j * es, s < 0 ? fill : r_.in + (off + s) * es, r_.elem);
        }
      };
      if (outside) {
        pad(0, inner);
        return;
      }
      // The row is [padding | one contiguous run of the input row | padding]: the run is one copy.
      const int64_t n = out.empty() ? 1 : r_.in_shape[last], b = out.empty() ? 0 : begin_[last];
      const int64_t lo = std::clamp<int64_t>(b, 0, inner), hi = std::clamp<int64_t>(b + n, lo, inner);
      if (hi > lo) std::memcpy(o + lo * es, r_.in + (off + lo - b) * es, static_cast<size_t>((hi - lo) * es));
      pad(0, lo);
      pad(hi, inner);
    },
        rows * inner > 32768);
  }

 private:
  Io r_;
  std::vector<int64_t> begin_, strides_;
  int mode_ = 0;
  const std::byte* value_ = nullptr;
};

class GatherKernel final : public Kernel {
 public:
  GatherKernel(const CompileContext& ctx, const ir::Node& node) : r_(io(ctx, node)), name_(node.name) {
    const int64_t rank = static_cast<int64_t>(r_.in_shape.size());
    const int64_t axis = normalize_axis(node.attrs.get_int("axis", 0), rank, node);
    for (int64_t i = 0; i < axis; ++i) outer_ *= r_.in_shape[static_cast<size_t>(i)];
    for (int64_t i = axis + 1; i < rank; ++i) inner_ *= r_.in_shape[static_cast<size_t>(i)];
    dim_ = r_.in_shape[static_cast<size_t>(axis)];
    const ir::Value& idx = ctx.value(node.inputs.at(1));
    index_dtype_ = idx.dtype;
    if (index_dtype_ != DType::Int64 && index_dtype_ != DType::Int32)
      throw Error(ErrorCode::DTypeMismatch, "cpu: Gather indices must be int64 or int32", node.name, "Gather");
    count_ = num_elements(idx.shape);
    indices_ = ctx.ptr(node.inputs[1]);
  }
  void run() override {
    const auto es = static_cast<int64_t>(r_.elem);
    for (int64_t j = 0; j < count_; ++j) {
      int64_t k = index_dtype_ == DType::Int64 ? static_cast<const int64_t*>(indices_)[j]
                                               : static_cast<const int32_t*>(indices_)[j];
      if (k < -dim_ || k >= dim_)
        throw Error(ErrorCode::InvalidArgument, "Gather index " + std::to_string(k) + " out of range [" +
                                                    std::to_string(-dim_) + ", " + std::to_string(dim_) + ")",
                    name_, "Gather");
      if (k < 0) k += dim_;
      for (int64_t o = 0; o < outer_; ++o)
        std::memcpy(r_.out + ((o * count_ + j) * inner_) * es, r_.in + ((o * dim_ + k) * inner_) * es,
                    static_cast<size_t>(inner_ * es));
    }
  }

 private:
  Io r_;
  std::string name_;
  int64_t outer_ = 1, inner_ = 1, dim_ = 1, count_ = 0;
  DType index_dtype_ = DType::Int64;
  const void* indices_ = nullptr;
};

}  // namespace

KernelPtr make_data_movement_kernel(CompileContext& ctx, const ir::Node& node) {
  KernelPtr k;
  switch (node.op) {
    case Op::Identity: case Op::Reshape: case Op::Flatten: case Op::Squeeze: case Op::Unsqueeze: {
      Io r = io(ctx, node);
      if (num_elements(r.in_shape) != num_elements(r.out_shape))
        throw Error(ErrorCode::ShapeMismatch, "cpu: element count changes from " + shape_str(r.in_shape) + " to " +
                                                  shape_str(r.out_shape), node.name, ir::op_name(node.op));
      k = std::make_unique<CopyKernel>(r.in, r.out, static_cast<size_t>(num_elements(r.out_shape)) * r.elem);
      break;
    }
    case Op::Slice:
      if (ctx.is_view(node.outputs.at(0))) return view_slice_kernel();  // nothing to copy (views.h)
      k = make_slice(ctx, node);
      break;
    case Op::Transpose: k = make_transpose(ctx, node); break;
    case Op::Expand: k = make_expand(ctx, node); break;
    case Op::Concat: k = make_concat_or_split(ctx, node, false); break;
    case Op::Split: k = make_concat_or_split(ctx, node, true); break;
    case Op::Pad: k = std::make_unique<PadKernel>(ctx, node); break;
    case Op::Gather: k = std::make_unique<GatherKernel>(ctx, node); break;
    default: throw Error(ErrorCode::Internal, "cpu: not a data-movement op", node.name, ir::op_name(node.op));
  }
  return with_epilogue(ctx, node, std::move(k));
}

}  // namespace lockstep::cpu
