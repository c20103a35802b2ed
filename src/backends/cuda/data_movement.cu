// Data-movement family: every op here is a strided copy (Slice, Split, Concat, Transpose,
// Expand, the reshapes), a pad, or a gather. No arithmetic, so results are exact.
#include <algorithm>

#include "backends/cuda/families.h"

namespace lockstep::cuda {
namespace {

template <class T, class I>
__global__ void copy_kernel(CopyParams p, I n) {
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<I>(gridDim.x) * blockDim.x) {
    I rem = i;
    int64_t so = 0, dof = 0;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < p.rank) {
        const I dim = static_cast<I>(p.dims[d]);
        const I c = rem % dim;
        rem /= dim;
        so += static_cast<int64_t>(c) * p.src_strides[d];
        dof += static_cast<int64_t>(c) * p.dst_strides[d];
      }
    }
    static_cast<T*>(p.dst)[dof] = static_cast<const T*>(p.src)[so];
  }
}

template <class T>
void launch_copy_t(const CopyParams& p, int64_t n, cudaStream_t s) {
  if (n < (int64_t{1} << 31)) copy_kernel<T, uint32_t><<<grid_for(n), kBlock, 0, s>>>(p, static_cast<uint32_t>(n));
  else copy_kernel<T, uint64_t><<<grid_for(n), kBlock, 0, s>>>(p, static_cast<uint64_t>(n));
}

template <class T>
__global__ void pad_kernel(PadParams p, int64_t n, T value) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rem = i, src = 0, stride = 1;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rem % p.out_dims[d];
      rem /= p.out_dims[d];
      int64_t x = o - p.pad_begin[d];
      const int64_t len = p.in_dims[d];
      if (x < 0 || x >= len) {
        if (p.mode == 0) inside = false;
        else if (p.mode == 2) x = x < 0 ? 0 : len - 1;
        else if (len == 1) x = 0;
        else {  // reflect without repeating the edge, period 2*(len-1)
          const int64_t period = 2 * (len - 1);
          x = x % period;
          if (x < 0) x += period;
          if (x >= len) x = period - x;
        }
      }
      src += x * stride;
      stride *= len;
    }
    static_cast<T*>(p.dst)[i] = inside ? static_cast<const T*>(p.src)[src] : value;
  }
}

template <class T, class Idx>
__global__ void gather_kernel(const T* data, const Idx* idx, T* out, int64_t outer, int64_t nidx, int64_t inner, int64_t axis_dim) {
  const int64_t n = outer * nidx * inner;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i % inner, j = (i / inner) % nidx, o = i / (inner * nidx);
    int64_t k = static_cast<int64_t>(idx[j]);
    if (k < 0) k += axis_dim;
    out[i] = (k < 0 || k >= axis_dim) ? T(0) : data[(o * axis_dim + k) * inner + r];
  }
}

int64_t norm_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// Appends a strided copy whose pointers are resolved at launch time.
void push_copy(Context& ctx, NodeProgram& program, const std::string& kernel, ir::ValueId src, int64_t src_offset,
               std::vector<int64_t> src_strides, ir::ValueId dst, int64_t dst_offset, std::vector<int64_t> dst_strides,
               Shape dims) {
  const size_t es = device_elem_size(ctx.graph().value(dst).dtype);
  const Context* c = &ctx;
  program.launches.push_back({kernel, [=](cudaStream_t s) {
    CopyParams p;
    std::vector<int64_t> d = dims, ss = src_strides, ds = dst_strides;
    int64_t n = 1;
    for (int64_t x : d) n *= x;
    if (n == 0) return;
    collapse_dims(d, {&ss, &ds});
    p.rank = static_cast<int>(d.size());
    for (int k = 0; k < p.rank; ++k) {
      p.dims[k] = d[static_cast<size_t>(k)];
      p.src_strides[k] = ss[static_cast<size_t>(k)];
      p.dst_strides[k] = ds[static_cast<size_t>(k)];
    }
    p.src = static_cast<const char*>(c->ptr(src)) + src_offset * static_cast<int64_t>(es);
    p.dst = static_cast<char*>(c->ptr(dst)) + dst_offset * static_cast<int64_t>(es);
    launch_copy(p, es, s);
  }});
}

void push_memcpy(Context& ctx, NodeProgram& program, ir::ValueId src, ir::ValueId dst) {
  const size_t bytes = static_cast<size_t>(num_elements(ctx.graph().value(dst).shape)) * device_elem_size(ctx.graph().value(dst).dtype);
  const Context* c = &ctx;
  program.launches.push_back({"reshape_copy", [=](cudaStream_t s) {
    if (bytes && c->ptr(src) != c->ptr(dst))
      check_cuda(cudaMemcpyAsync(c->ptr(dst), c->ptr(src), bytes, cudaMemcpyDeviceToDevice, s), "reshape copy");
  }});
}

void record_slice(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& in = g.value(node.inputs[0]).shape;
  const Shape& out = g.value(node.outputs[0]).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  auto starts = constant_ints(g, node, 1), ends = constant_ints(g, node, 2);
  auto axes = constant_ints(g, node, 3), steps = constant_ints(g, node, 4);
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  std::vector<int64_t> in_strides = contiguous_strides(in), src_strides = in_strides;
  int64_t offset = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = norm_axis(axes[i], rank);
    const int64_t dim = in[static_cast<size_t>(a)], step = steps[i];
    if (step == 0) throw Error(ErrorCode::UnsupportedAttribute, "cuda: Slice step 0", node.name, "Slice");
    int64_t start = starts[i];
    if (start < 0) start += dim;
    start = step > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
    offset += start * in_strides[static_cast<size_t>(a)];
    src_strides[static_cast<size_t>(a)] = in_strides[static_cast<size_t>(a)] * step;
  }
  push_copy(ctx, program, "slice", node.inputs[0], offset, src_strides, node.outputs[0], 0, contiguous_strides(out), out);
}

void record_pad(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape in = g.value(node.inputs[0]).shape;
  const Shape out = g.value(node.outputs[0]).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  auto pads = constant_ints(g, node, 1);
  auto axes = constant_ints(g, node, 3);
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  PadParams p;
  p.rank = static_cast<int>(rank);
  for (int d = 0; d < p.rank; ++d) {
    p.in_dims[d] = in[static_cast<size_t>(d)];
    p.out_dims[d] = out[static_cast<size_t>(d)];
  }
  for (size_t i = 0; i < axes.size() && i < pads.size(); ++i) p.pad_begin[norm_axis(axes[i], rank)] = pads[i];
  const std::string mode = node.attrs.get_string("mode", "constant");
  p.mode = mode == "reflect" ? 1 : mode == "edge" ? 2 : 0;
  if (node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue) {
    const Tensor& v = g.value(node.inputs[2]).constant;
    if (!v.defined()) throw Error(ErrorCode::UnsupportedAttribute, "cuda: Pad constant_value must be a constant", node.name, "Pad");
    if (v.numel() > 0) p.value = v.element_as_double(0);
  }
  const size_t es = device_elem_size(g.value(node.outputs[0]).dtype);
  p.int32 = g.value(node.outputs[0]).dtype == DType::Int32;
  const ir::ValueId src = node.inputs[0], dst = node.outputs[0];
  const Context* c = &ctx;
  program.launches.push_back({"pad_" + mode, [=](cudaStream_t s) {
    PadParams q = p;
    q.src = c->ptr(src);
    q.dst = c->ptr(dst);
    launch_pad(q, es, s);
  }});
}

void record_gather(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape data = g.value(node.inputs[0]).shape;
  const int64_t rank = static_cast<int64_t>(data.size());
  const int64_t axis = norm_axis(node.attrs.get_int("axis", 0), rank);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= data[static_cast<size_t>(d)];
  const int64_t axis_dim = data[static_cast<size_t>(axis)];
  const int64_t nidx = num_elements(g.value(node.inputs[1]).shape);
  const DType idx_t = g.value(node.inputs[1]).dtype;
  if (g.is_constant(node.inputs[1]))
    for (int64_t v : constant_ints(g, node, 1))
      if (v < -axis_dim || v >= axis_dim)
        throw Error(ErrorCode::InvalidModel, "Gather index " + std::to_string(v) + " is out of range for axis size " + std::to_string(axis_dim), node.name, "Gather");
  const size_t es = device_elem_size(g.value(node.outputs[0]).dtype);
  const ir::ValueId d = node.inputs[0], ix = node.inputs[1], o = node.outputs[0];
  const Context* c = &ctx;
  program.launches.push_back({"gather", [=](cudaStream_t s) {
    const int64_t n = outer * nidx * inner;
    if (n == 0) return;
    auto go = [&](auto tag) {
      using T = decltype(tag);
      if (idx_t == DType::Int32)
        gather_kernel<T, int32_t><<<grid_for(n), kBlock, 0, s>>>(static_cast<const T*>(c->ptr(d)), static_cast<const int32_t*>(c->ptr(ix)), static_cast<T*>(c->ptr(o)), outer, nidx, inner, axis_dim);
      else
        gather_kernel<T, long long><<<grid_for(n), kBlock, 0, s>>>(static_cast<const T*>(c->ptr(d)), static_cast<const long long*>(c->ptr(ix)), static_cast<T*>(c->ptr(o)), outer, nidx, inner, axis_dim);
    };
    if (es == 1) go(uint8_t{});
    else if (es == 8) go(uint64_t{});
    else go(uint32_t{});
  }});
}

}  // namespace

void launch_copy(const CopyParams& p, size_t es, cudaStream_t s) {
  int64_t n = 1;
  for (int d = 0; d < p.rank; ++d) n *= p.dims[d];
  if (n == 0) return;
  if (es == 1) launch_copy_t<uint8_t>(p, n, s);
  else if (es == 8) launch_copy_t<uint64_t>(p, n, s);
  else launch_copy_t<uint32_t>(p, n, s);
}

void launch_pad(const PadParams& p, size_t es, cudaStream_t s) {
  int64_t n = 1;
  for (int d = 0; d < p.rank; ++d) n *= p.out_dims[d];
  if (n == 0) return;
  // The element type only matters for the constant value: float bits for 4-byte floats.
  if (es == 1) pad_kernel<bool><<<grid_for(n), kBlock, 0, s>>>(p, n, p.value != 0.0);
  else if (es == 8) pad_kernel<long long><<<grid_for(n), kBlock, 0, s>>>(p, n, static_cast<long long>(p.value));
  else if (p.int32) pad_kernel<int32_t><<<grid_for(n), kBlock, 0, s>>>(p, n, static_cast<int32_t>(p.value));
  else pad_kernel<float><<<grid_for(n), kBlock, 0, s>>>(p, n, static_cast<float>(p.value));
}

std::optional<std::string> data_movement_unsupported(const ir::Graph& graph, const ir::Node& node) {
  const size_t rank = graph.value(node.outputs[0]).shape.size();
  if (rank > static_cast<size_t>(kMaxRank) || graph.value(node.inputs[0]).shape.size() > static_cast<size_t>(kMaxRank))
    return "tensors of rank > 8 are not supported on CUDA";
  return std::nullopt;
}

void record_data_movement(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const ir::ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = g.value(in).shape;
  const Shape& out_shape = g.value(out).shape;
  switch (node.op) {
    case ir::Op::Reshape: case ir::Op::Flatten: case ir::Op::Squeeze: case ir::Op::Unsqueeze:
      push_memcpy(ctx, program, in, out);
      break;
    case ir::Op::Transpose: {
      std::vector<int64_t> perm = node.attrs.get_ints("perm");
      if (perm.empty())
        for (int64_t d = static_cast<int64_t>(in_shape.size()) - 1; d >= 0; --d) perm.push_back(d);
      auto in_strides = contiguous_strides(in_shape);
      std::vector<int64_t> src(perm.size());
      for (size_t d = 0; d < perm.size(); ++d) src[d] = in_strides[static_cast<size_t>(perm[d])];
      push_copy(ctx, program, "transpose", in, 0, src, out, 0, contiguous_strides(out_shape), out_shape);
      break;
    }
    case ir::Op::Expand:
      push_copy(ctx, program, "expand", in, 0, broadcast_strides(in_shape, out_shape), out, 0, contiguous_strides(out_shape), out_shape);
      break;
    case ir::Op::Slice:
      record_slice(ctx, node, program);
      break;
    case ir::Op::Split: {
      const int64_t axis = norm_axis(node.attrs.get_int("axis", 0), static_cast<int64_t>(in_shape.size()));
      auto in_strides = contiguous_strides(in_shape);
      int64_t at = 0;
      for (ir::ValueId o : node.outputs) {
        if (o == ir::kNoValue) continue;
        const Shape& os = g.value(o).shape;
        push_copy(ctx, program, "split", in, at * in_strides[static_cast<size_t>(axis)], in_strides, o, 0, contiguous_strides(os), os);
        at += os[static_cast<size_t>(axis)];
      }
      break;
    }
    case ir::Op::Concat: {
      const int64_t axis = norm_axis(node.attrs.get_int("axis", 0), static_cast<int64_t>(out_shape.size()));
      auto out_strides = contiguous_strides(out_shape);
      int64_t at = 0;
      for (ir::ValueId i : node.inputs) {
        if (i == ir::kNoValue) continue;
        const Shape& is = g.value(i).shape;
        push_copy(ctx, program, "concat", i, 0, contiguous_strides(is), out, at * out_strides[static_cast<size_t>(axis)], out_strides, is);
        at += is[static_cast<size_t>(axis)];
      }
      break;
    }
    case ir::Op::Pad:
      record_pad(ctx, node, program);
      break;
    case ir::Op::Gather:
      record_gather(ctx, node, program);
      break;
    default:
      throw Error(ErrorCode::Internal, "cuda: data movement cannot run this op", node.name, ir::op_name(node.op));
  }
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::cuda
